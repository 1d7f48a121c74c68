import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqsServer, type SqsServer } from '../../src/index.js';
import { blockingReceiveBackend, failingBackend, spoolError } from './helpers/fault-backend.js';
import { callJson } from './helpers/serve.js';

const servers: SqsServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

function make(...args: Parameters<typeof createSqsServer>): SqsServer {
  const server = createSqsServer(...args);
  servers.push(server);
  return server;
}

describe('createSqsServer', () => {
  it('listens on 127.0.0.1 by default and resolves with the endpoint', async () => {
    const sqs = make(failingBackend(() => spoolError('QUEUE_NOT_FOUND')), { port: 0 });
    const { url, host, port } = await sqs.listen();
    expect(host).toBe('127.0.0.1');
    expect(url).toBe(`http://127.0.0.1:${port}`);
    const r = await callJson(url, 'GetQueueUrl', { QueueName: 'x' });
    expect(JSON.parse(r.text)).toMatchObject({ __type: 'com.amazonaws.sqs#QueueDoesNotExist' });
  });

  it('reports publicUrl as the endpoint when given', async () => {
    const sqs = make(failingBackend(() => spoolError('QUEUE_NOT_FOUND')), { port: 0, publicUrl: 'http://queues.test:9324' });
    expect((await sqs.listen()).url).toBe('http://queues.test:9324');
  });

  it('rejects listen() with EADDRINUSE when the port is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = blocker.address() as AddressInfo;
      const sqs = make(failingBackend(() => new Error('x')), { port });
      await expect(sqs.listen()).rejects.toMatchObject({ code: 'EADDRINUSE' });
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  });

  it('close() ends a long poll at once with no messages, then stops listening; it is idempotent', async () => {
    const backend = blockingReceiveBackend();
    const sqs = make(backend, { port: 0 });
    const { url } = await sqs.listen();
    const pending = callJson(url, 'ReceiveMessage', { QueueUrl: `${url}/000000000000/q`, WaitTimeSeconds: 20 });
    await backend.receiving;
    const first = sqs.close();
    expect(sqs.close()).toBe(first);
    const r = await pending;
    expect(JSON.parse(r.text)).toEqual({});
    await first;
    expect(sqs.server.listening).toBe(false);
  });

  it('verifies signatures with authKeys', async () => {
    const sqs = make(failingBackend(() => new Error('x')), { port: 0, authKeys: { AKID: 'secret' } });
    const { url } = await sqs.listen();
    expect(JSON.parse((await callJson(url, 'ListQueues', {})).text)).toMatchObject({ __type: 'com.amazonaws.sqs#IncompleteSignature' });
  });

  it('hands requests that are not SQS calls to fallback, and keeps SQS calls', async () => {
    const sqs = make(failingBackend(() => new Error('x')), {
      port: 0,
      fallback: (req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(`fallback ${req.method} ${req.url}`);
      },
    });
    const { url } = await sqs.listen();
    const page = await fetch(`${url}/admin/`);
    expect(await page.text()).toBe('fallback GET /admin/');
    expect(JSON.parse((await callJson(url, 'ListQueues', {})).text)).toMatchObject({ __type: 'com.amazonaws.sqs#InternalFailure' });
  });

  it('refuses bad options with INVALID_OPTIONS', () => {
    const backend = failingBackend(() => new Error('x'));
    expect(() => createSqsServer(backend, { port: 70_000 })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
    expect(() => createSqsServer(backend, { publicUrl: 'ftp://x' })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
    expect(() => createSqsServer(backend, { region: 'US East' })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
    expect(() => createSqsServer(backend, { authKeys: {} })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
    // A Node timer fires a longer delay after 1 ms: close() would cut every request at once.
    expect(() => createSqsServer(backend, { closeTimeoutMs: 2 ** 31 })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
  });
});
