/**
 * §9 items 14–16 against createSqsHandler(real spool): what survives a restart, strict auth with
 * the real signer, and the client matrix (explicit endpoint, AWS_ENDPOINT_URL_SQS only, default
 * retries against injected 500s).
 */
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ListQueuesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestClock } from '../helpers/test-clock.js';
import { delegate, useSqsFixtures } from './helpers/fixture.js';
import { LOCAL_CREDENTIALS, sqsClient, rejection } from './helpers/sdk.js';

const start = useSqsFixtures();

async function receive(c: SQSClient, QueueUrl: string) {
  return (await c.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'] }))).Messages ?? [];
}

describe('persistence across a restart (§9.14)', () => {
  it('keeps queues, attributes, messages, receive counts, delays and FIFO state', async () => {
    const clock = createTestClock();
    const sqs = await start({ clock });
    let c = sqs.client();
    await c.send(new CreateQueueCommand({ QueueName: 'dlq' }));
    const { QueueUrl = '' } = await c.send(
      new CreateQueueCommand({ QueueName: 'orders', Attributes: { VisibilityTimeout: '40', RedrivePolicy: '{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":5}' } }),
    );
    const { QueueUrl: fifoUrl = '' } = await c.send(new CreateQueueCommand({ QueueName: 'pay.fifo', Attributes: { FifoQueue: 'true' } }));
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'received once' }));
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'delayed', DelaySeconds: 60 }));
    const fifoFirst = await c.send(new SendMessageCommand({ QueueUrl: fifoUrl, MessageBody: 'f', MessageGroupId: 'g', MessageDeduplicationId: 'once' }));
    expect((await receive(c, QueueUrl)).map((m) => m.Body)).toEqual(['received once']);

    await sqs.restart();
    c = sqs.client();

    expect((await c.send(new ListQueuesCommand({}))).QueueUrls).toEqual([sqs.url('dlq'), sqs.url('orders'), sqs.url('pay.fifo')]);
    const { Attributes } = await c.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['VisibilityTimeout', 'RedrivePolicy'] }));
    expect(Attributes?.VisibilityTimeout).toBe('40');
    expect(JSON.parse(Attributes?.RedrivePolicy ?? '{}')).toMatchObject({ maxReceiveCount: 5 });
    // The pull lease keeps its deadline across the restart (issue 12): hidden until 40 s after the receive.
    expect(await receive(c, QueueUrl)).toEqual([]);
    clock.advance(40_000);
    const [again] = await receive(c, QueueUrl);
    expect(again).toMatchObject({ Body: 'received once', Attributes: { ApproximateReceiveCount: '2' } });
    clock.advance(20_000);
    expect((await receive(c, QueueUrl)).map((m) => m.Body)).toEqual(['delayed']);
    const dup = await c.send(new SendMessageCommand({ QueueUrl: fifoUrl, MessageBody: 'f', MessageGroupId: 'g', MessageDeduplicationId: 'once' }));
    expect(dup.MessageId).toBe(fifoFirst.MessageId);
    const next = await c.send(new SendMessageCommand({ QueueUrl: fifoUrl, MessageBody: 'f2', MessageGroupId: 'g', MessageDeduplicationId: 'twice' }));
    expect(BigInt(next.SequenceNumber ?? '0')).toBeGreaterThan(BigInt(fifoFirst.SequenceNumber ?? '0'));
  });
});

describe('strict auth with a real spool (§9.15)', () => {
  it('serves the SDK’s signed requests and refuses a wrong secret and an unknown key', async () => {
    const sqs = await start({ handler: { auth: { keys: { AKIDLOCAL: 'local-secret' } } } });
    const good = sqs.client({ credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' } });
    const { QueueUrl = '' } = await good.send(new CreateQueueCommand({ QueueName: 'orders' }));
    await good.send(new SendMessageCommand({ QueueUrl, MessageBody: 'signed' }));
    const wrong = await rejection(sqs.client({ credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'nope' } }).send(new ReceiveMessageCommand({ QueueUrl })));
    expect(wrong.name).toBe('SignatureDoesNotMatch');
    const unknown = await rejection(sqs.client({ credentials: LOCAL_CREDENTIALS }).send(new ReceiveMessageCommand({ QueueUrl })));
    expect(unknown.name).toBe('InvalidClientTokenId');
    // The refused receives claimed nothing.
    expect((await receive(good, QueueUrl)).map((m) => m.Body)).toEqual(['signed']);
  });
});

describe('client matrix (§9.16)', () => {
  const saved = process.env.AWS_ENDPOINT_URL_SQS;
  afterEach(() => {
    if (saved === undefined) delete process.env.AWS_ENDPOINT_URL_SQS;
    else process.env.AWS_ENDPOINT_URL_SQS = saved;
  });

  it('an SDK with an explicit endpoint reaches the server even with an AWS-looking QueueUrl', async () => {
    const sqs = await start();
    const c = sqs.client();
    await c.send(new CreateQueueCommand({ QueueName: 'orders' }));
    await c.send(new SendMessageCommand({ QueueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/orders', MessageBody: 'via aws url' }));
    expect((await receive(c, sqs.url('orders'))).map((m) => m.Body)).toEqual(['via aws url']);
  });

  it('an SDK configured only by AWS_ENDPOINT_URL_SQS works end to end', async () => {
    const sqs = await start();
    process.env.AWS_ENDPOINT_URL_SQS = sqs.endpoint;
    const c = sqsClient(undefined);
    try {
      const { QueueUrl = '' } = await c.send(new CreateQueueCommand({ QueueName: 'orders' }));
      expect(QueueUrl).toBe(sqs.url('orders'));
      await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'env only' }));
      expect((await receive(c, QueueUrl)).map((m) => m.Body)).toEqual(['env only']);
    } finally {
      c.destroy();
    }
  });

  it('with AWS_ENDPOINT_URL_SQS, calls follow the QueueUrl origin, so the URLs handed out must route back', async () => {
    const sqs = await start();
    // The queue URLs name a second listener (publicUrl) over the same spool.
    const second = await sqs.addServer();
    const front = await sqs.addServer({ publicUrl: second.endpoint });
    process.env.AWS_ENDPOINT_URL_SQS = front.endpoint;
    const warnings: string[] = [];
    const c = sqsClient(undefined, { logger: { debug() {}, info() {}, warn: (m: unknown) => warnings.push(String(m)), error() {} } });
    try {
      const { QueueUrl = '' } = await c.send(new CreateQueueCommand({ QueueName: 'orders' }));
      expect(QueueUrl).toBe(`${second.endpoint}/000000000000/orders`);
      const before = second.requests;
      await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'routed by url' }));
      expect(second.requests).toBe(before + 1);
      expect(warnings.some((w) => w.includes('differs from SQSClient resolved endpoint'))).toBe(true);
      expect((await receive(sqs.client(), sqs.url('orders'))).map((m) => m.Body)).toEqual(['routed by url']);
    } finally {
      c.destroy();
    }
  });

  it('default retries turn an injected 500 into a success, and a 500 after the commit into a duplicate (at least once)', async () => {
    let failures = 0;
    let failAfterStore = false;
    const sqs = await start({
      wrap: (backend) =>
        delegate(backend, {
          send: async (...args) => {
            if (failures > 0 && !failAfterStore) {
              failures--;
              throw new Error('injected before the store');
            }
            const id = await backend.send(...args);
            if (failures > 0 && failAfterStore) {
              failures--;
              throw new Error('injected after the store');
            }
            return id;
          },
        }),
    });
    const c = sqs.client({ maxAttempts: 3 });
    const { QueueUrl = '' } = await c.send(new CreateQueueCommand({ QueueName: 'orders' }));
    failures = 2;
    const sent = await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'retried' }));
    expect(sent.$metadata.attempts).toBe(3);
    expect((await receive(c, QueueUrl)).map((m) => m.Body)).toEqual(['retried']);

    failures = 1;
    failAfterStore = true;
    const again = await c.send(new SendMessageCommand({ QueueUrl: sqs.url('orders'), MessageBody: 'twice' }));
    expect(again.$metadata.attempts).toBe(2);
    expect((await receive(c, QueueUrl)).map((m) => m.Body)).toEqual(['twice', 'twice']);
  });
});
