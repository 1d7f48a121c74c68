/** The handler mounted in Hono (on @hono/node-server), as the README shows it. */
import { serve, type HttpBindings, type ServerType } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { ListQueuesCommand, QueueDoesNotExist } from '@aws-sdk/client-sqs';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqsHandler } from '../../src/index.js';
import { failingBackend, spoolError } from './helpers/fault-backend.js';
import { sqsClient } from './helpers/sdk.js';
import { callJson, callQuery } from './helpers/serve.js';

let server: ServerType | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function honoApp(): Promise<string> {
  const backend = failingBackend(() => spoolError('QUEUE_NOT_FOUND'));
  const app = new Hono<{ Bindings: HttpBindings }>();
  const sqs = createSqsHandler(backend);
  app.get('/health', (c) => c.text('ok'));
  app.all('/sqs/*', (c) => {
    sqs(c.env.incoming, c.env.outgoing);
    return RESPONSE_ALREADY_SENT;
  });
  const port = await new Promise<number>((resolve) => {
    server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info) => resolve(info.port));
  });
  return `http://127.0.0.1:${port}`;
}

describe('createSqsHandler mounted in Hono', () => {
  it('serves SDK calls under its path and leaves the app its other routes', async () => {
    const base = await honoApp();
    const client = sqsClient(`${base}/sqs`);
    try {
      await expect(client.send(new ListQueuesCommand({}))).rejects.toBeInstanceOf(QueueDoesNotExist);
    } finally {
      client.destroy();
    }
    expect(await (await fetch(`${base}/health`)).text()).toBe('ok');
  });

  it('serves raw JSON and Query calls with their bodies intact', async () => {
    const base = await honoApp();
    expect(JSON.parse((await callJson(base, 'GetQueueUrl', { QueueName: 'x' }, '/sqs/')).text)).toMatchObject({ __type: 'com.amazonaws.sqs#QueueDoesNotExist' });
    expect((await callQuery(base, 'GetQueueUrl', { QueueName: 'x' }, '/sqs/')).text).toContain('<Code>AWS.SimpleQueueService.NonExistentQueue</Code>');
  });
});
