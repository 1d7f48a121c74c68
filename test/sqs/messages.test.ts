/**
 * §9 items 6–10 with the real SDK against createSqsHandler(real spool): send (one and batch),
 * receive, delete and change visibility by receipt. Visibility and delays run on an injected
 * clock, so "hidden exactly that long" is checked to the millisecond without waiting.
 */
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  MessageNotInflight,
  ReceiptHandleIsInvalid,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { rejection } from './helpers/sdk.js';
import { describe, expect, it } from 'vitest';
import { createTestClock } from '../helpers/test-clock.js';
import { observed, useSqsFixtures } from './helpers/fixture.js';
import { callJson } from './helpers/serve.js';

const start = useSqsFixtures();
const md5 = (text: string) => createHash('md5').update(text, 'utf8').digest('hex');

/** A fixture on a test clock with one queue. */
async function withQueue(name = 'orders', Attributes?: Record<string, string>) {
  const clock = createTestClock();
  const sqs = await start({ clock });
  const c = sqs.client();
  const { QueueUrl = '' } = await c.send(new CreateQueueCommand({ QueueName: name, ...(Attributes ? { Attributes } : {}) }));
  return { sqs, c, clock, QueueUrl };
}

async function receiveAll(c: SQSClient, QueueUrl: string, extra: Partial<ConstructorParameters<typeof ReceiveMessageCommand>[0]> = {}) {
  return (await c.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, ...extra }))).Messages ?? [];
}

const VECTOR_ATTRIBUTES: Record<string, MessageAttributeValue> = {
  attribName1: { DataType: 'String', StringValue: 'attribValue 1' },
  customNumberTypeAttrib: { DataType: 'Number.float', StringValue: '4563442423554324324264524243.32543234' },
  binaryAttribute: { DataType: 'Binary', BinaryValue: new Uint8Array(Buffer.from('Hello binary world!')) },
};

describe('SendMessage (§9.6)', () => {
  it('answers MD5OfMessageBody as lowercase hex of the UTF-8 body, and the body comes back byte for byte', async () => {
    const { c, QueueUrl } = await withQueue();
    const body = 'héllo ✓ 😀 "quoted" <xml> & \r\n\ttab';
    const sent = await c.send(new SendMessageCommand({ QueueUrl, MessageBody: body }));
    expect(sent.MD5OfMessageBody).toBe(md5(body));
    expect(sent.MessageId).toMatch(/\S/);
    const [message] = await receiveAll(c, QueueUrl);
    expect(message).toMatchObject({ MessageId: sent.MessageId, Body: body, MD5OfBody: md5(body) });
  });

  it('answers MD5OfMessageAttributes reproducing the AWS vectors, and returns the attributes', async () => {
    const { c, QueueUrl } = await withQueue();
    const one = await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x', MessageAttributes: { attribName1: VECTOR_ATTRIBUTES.attribName1 as MessageAttributeValue } }));
    expect(one.MD5OfMessageAttributes).toBe('19e27d4e946b072f3f58da80d94fd778');
    const all = await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'y', MessageAttributes: VECTOR_ATTRIBUTES }));
    expect(all.MD5OfMessageAttributes).toBe('c932db14a896c663f83c260297d594ff');
    const messages = await receiveAll(c, QueueUrl, { MessageAttributeNames: ['All'] });
    const y = messages.find((m) => m.Body === 'y');
    expect(y?.MD5OfMessageAttributes).toBe('c932db14a896c663f83c260297d594ff');
    expect(y?.MessageAttributes).toEqual({
      attribName1: { DataType: 'String', StringValue: 'attribValue 1' },
      customNumberTypeAttrib: { DataType: 'Number.float', StringValue: '4563442423554324324264524243.32543234' },
      binaryAttribute: { DataType: 'Binary', BinaryValue: new Uint8Array(Buffer.from('Hello binary world!')) },
    });
  });

  it('answers MD5OfMessageSystemAttributes for an AWSTraceHeader', async () => {
    const { c, QueueUrl } = await withQueue();
    const sent = await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x', MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: 'Root=1-5759e988-bd862e3fe1be46a994272793' } } }));
    expect(sent.MD5OfMessageSystemAttributes).toMatch(/^[0-9a-f]{32}$/);
  });

  it('refuses a body over MaximumMessageSize, counting attributes too, with InvalidParameterValue', async () => {
    const { c, QueueUrl } = await withQueue('small', { MaximumMessageSize: '1024' });
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x'.repeat(1024) }));
    expect((await rejection(c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x'.repeat(1025) })))).name).toBe('InvalidParameterValue');
    const withAttribute = c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x'.repeat(1000), MessageAttributes: { a: { DataType: 'String', StringValue: 'y'.repeat(30) } } }));
    expect((await rejection(withAttribute)).name).toBe('InvalidParameterValue');
    expect(await receiveAll(c, QueueUrl)).toHaveLength(1);
  });

  it('takes a 1 MiB string body on a default queue', async () => {
    const { c, QueueUrl } = await withQueue();
    const body = 'é'.repeat(524_288); // 1,048,576 UTF-8 bytes
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: body }));
    expect((await rejection(c.send(new SendMessageCommand({ QueueUrl, MessageBody: `${body}x` })))).name).toBe('InvalidParameterValue');
    const [message] = await receiveAll(c, QueueUrl);
    expect(message?.MD5OfBody).toBe(md5(body));
  });

  it('refuses characters outside the SQS set with InvalidMessageContents', async () => {
    const { c, QueueUrl } = await withQueue();
    for (const body of ['\uD800', 'a\u0000b', '\u0008', '\uFFFE']) {
      expect((await rejection(c.send(new SendMessageCommand({ QueueUrl, MessageBody: body })))).name, JSON.stringify(body)).toBe('InvalidMessageContents');
    }
    expect(await receiveAll(c, QueueUrl)).toEqual([]);
  });

  it('refuses DelaySeconds outside 0–900 and bad attributes with InvalidParameterValue', async () => {
    const { c, QueueUrl } = await withQueue();
    const attributes = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`a${i}`, { DataType: 'String', StringValue: 'v' }]));
    const bad: ConstructorParameters<typeof SendMessageCommand>[0][] = [
      { QueueUrl, MessageBody: 'x', DelaySeconds: 901 },
      { QueueUrl, MessageBody: 'x', DelaySeconds: -1 },
      { QueueUrl, MessageBody: 'x', MessageAttributes: attributes(11) },
      { QueueUrl, MessageBody: 'x', MessageAttributes: { 'AWS.reserved': { DataType: 'String', StringValue: 'v' } } },
      { QueueUrl, MessageBody: 'x', MessageAttributes: { 'a..b': { DataType: 'String', StringValue: 'v' } } },
      { QueueUrl, MessageBody: 'x', MessageAttributes: { a: { DataType: 'String', StringValue: '' } } },
      { QueueUrl, MessageBody: 'x', MessageAttributes: { a: { DataType: 'Number', StringValue: 'twelve' } } },
      // Number() reads these as numbers; SQS takes decimal numbers only.
      { QueueUrl, MessageBody: 'x', MessageAttributes: { a: { DataType: 'Number', StringValue: '0x10' } } },
      { QueueUrl, MessageBody: 'x', MessageAttributes: { a: { DataType: 'Number', StringValue: '0b101' } } },
      { QueueUrl, MessageBody: 'x', MessageAttributes: { a: { DataType: 'Number', StringValue: ' 7 ' } } },
      { QueueUrl, MessageBody: 'x', MessageAttributes: { a: { DataType: 'Number', StringValue: '1e400' } } },
      { QueueUrl, MessageBody: '' },
      { QueueUrl, MessageBody: 'x', MessageAttributes: { a: { DataType: 'Blob', StringValue: 'v' } } },
    ];
    for (const input of bad) expect((await rejection(c.send(new SendMessageCommand(input)))).name, JSON.stringify(input)).toBe('InvalidParameterValue');
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'ok', MessageAttributes: attributes(10), DelaySeconds: 900 }));
    for (const n of ['-12', '+3.5', '.5', '7.', '1e3', '4563442423554324324264524243.32543234']) {
      await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'ok', MessageAttributes: { n: { DataType: 'Number', StringValue: n } } }));
    }
  });

  it('keeps an attribute named __proto__ (a valid SQS name): stored, received, and its MD5 the one answered on send', async () => {
    const { sqs, QueueUrl } = await withQueue();
    // Raw JSON: an SDK object literal would turn the key into a prototype before it is sent.
    const body = `{"QueueUrl":${JSON.stringify(QueueUrl)},"MessageBody":"x","MessageAttributes":{"__proto__":{"DataType":"String","StringValue":"v"},"b":{"DataType":"Number","StringValue":"2"}}}`;
    const sent = await callJson(sqs.endpoint, 'SendMessage', JSON.parse(body));
    expect(sent.status).toBe(200);
    const sentMd5 = (JSON.parse(sent.text) as { MD5OfMessageAttributes: string }).MD5OfMessageAttributes;
    const got = await callJson(sqs.endpoint, 'ReceiveMessage', { QueueUrl, MessageAttributeNames: ['All'] });
    const [message] = (JSON.parse(got.text) as { Messages: { MD5OfMessageAttributes: string; MessageAttributes: Record<string, unknown> }[] }).Messages;
    expect(message!.MD5OfMessageAttributes).toBe(sentMd5);
    expect(Object.keys(message!.MessageAttributes).sort()).toEqual(['__proto__', 'b']);
    expect(Object.getOwnPropertyDescriptor(message!.MessageAttributes, '__proto__')?.value).toEqual({ DataType: 'String', StringValue: 'v' });
  });

  it('holds a delayed message back exactly DelaySeconds', async () => {
    const { c, clock, QueueUrl } = await withQueue();
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'later', DelaySeconds: 5 }));
    expect(await receiveAll(c, QueueUrl)).toEqual([]);
    clock.advance(4_999);
    expect(await receiveAll(c, QueueUrl)).toEqual([]);
    clock.advance(1);
    expect((await receiveAll(c, QueueUrl)).map((m) => m.Body)).toEqual(['later']);
  });
});

describe('SendMessageBatch (§9.7)', () => {
  it('reports a bad entry in Failed with HTTP 200 and stores the good ones', async () => {
    const { c, QueueUrl } = await withQueue();
    const out = await c.send(
      new SendMessageBatchCommand({
        QueueUrl,
        Entries: [
          { Id: 'good', MessageBody: 'a' },
          { Id: 'bad', MessageBody: '\uD800' },
          { Id: 'late', MessageBody: 'c', DelaySeconds: 901 },
        ],
      }),
    );
    expect(out.$metadata.httpStatusCode).toBe(200);
    expect(out.Successful).toEqual([{ Id: 'good', MessageId: expect.any(String), MD5OfMessageBody: md5('a') }]);
    expect(out.Failed).toEqual([
      { Id: 'bad', SenderFault: true, Code: 'InvalidMessageContents', Message: expect.any(String) },
      { Id: 'late', SenderFault: true, Code: 'InvalidParameterValue', Message: expect.any(String) },
    ]);
    expect((await receiveAll(c, QueueUrl)).map((m) => m.Body)).toEqual(['a']);
  });

  it('always sends both Successful and Failed', async () => {
    const { c, QueueUrl } = await withQueue();
    const out = await c.send(new SendMessageBatchCommand({ QueueUrl, Entries: [{ Id: 'a', MessageBody: 'a' }] }));
    expect(out.Failed).toEqual([]);
    expect(out.Successful).toHaveLength(1);
  });

  it('stores ten entries with their attributes and MD5s', async () => {
    const { c, QueueUrl } = await withQueue();
    const Entries = Array.from({ length: 10 }, (_, i) => ({ Id: `e${i}`, MessageBody: `m${i}`, MessageAttributes: { n: { DataType: 'Number', StringValue: String(i) } } }));
    const out = await c.send(new SendMessageBatchCommand({ QueueUrl, Entries }));
    expect(out.Successful?.map((s) => [s.Id, s.MD5OfMessageBody])).toEqual(Entries.map((e) => [e.Id, md5(e.MessageBody)]));
    expect(out.Successful?.every((s) => /^[0-9a-f]{32}$/.test(s.MD5OfMessageAttributes ?? ''))).toBe(true);
    expect((await receiveAll(c, QueueUrl)).map((m) => m.Body).sort()).toEqual(Entries.map((e) => e.MessageBody).sort());
  });
});

describe('ReceiveMessage (§9.8)', () => {
  it('honours MaxNumberOfMessages (default 1, at most 10) and refuses 0 and 11', async () => {
    const { c, QueueUrl } = await withQueue();
    for (let i = 0; i < 15; i++) await c.send(new SendMessageCommand({ QueueUrl, MessageBody: `m${i}` }));
    expect((await c.send(new ReceiveMessageCommand({ QueueUrl }))).Messages).toHaveLength(1);
    expect((await c.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }))).Messages).toHaveLength(10);
    expect((await c.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }))).Messages).toHaveLength(4);
    expect((await rejection(c.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 0 })))).name).toBe('InvalidParameterValue');
    expect((await rejection(c.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 11 })))).name).toBe('InvalidParameterValue');
  });

  it('hides a message exactly VisibilityTimeout seconds, then the queue default applies again', async () => {
    const { c, clock, QueueUrl } = await withQueue();
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x' }));
    expect(await receiveAll(c, QueueUrl, { VisibilityTimeout: 5 })).toHaveLength(1);
    clock.advance(4_999);
    expect(await receiveAll(c, QueueUrl)).toEqual([]);
    clock.advance(1);
    expect(await receiveAll(c, QueueUrl)).toHaveLength(1);
    clock.advance(29_999);
    expect(await receiveAll(c, QueueUrl)).toEqual([]);
    clock.advance(1);
    expect(await receiveAll(c, QueueUrl)).toHaveLength(1);
  });

  it('refuses VisibilityTimeout and WaitTimeSeconds out of range', async () => {
    const { c, QueueUrl } = await withQueue();
    expect((await rejection(c.send(new ReceiveMessageCommand({ QueueUrl, VisibilityTimeout: 43_201 })))).name).toBe('InvalidParameterValue');
    expect((await rejection(c.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 21 })))).name).toBe('InvalidParameterValue');
  });

  it('a long poll on an empty queue answers {} when the wait ends', async () => {
    const sqs = await start();
    const c = sqs.client();
    const { QueueUrl = '' } = await c.send(new CreateQueueCommand({ QueueName: 'empty' }));
    const out = await c.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1 }));
    expect(out.Messages).toBeUndefined();
  });

  it('a send during a long poll answers it (the clock never moves, so only the send can)', async () => {
    const { sqs, c, QueueUrl } = await withQueue();
    const polling = c.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 20 }));
    await sqs.client().send(new SendMessageCommand({ QueueUrl, MessageBody: 'wake up' }));
    expect((await polling).Messages?.map((m) => m.Body)).toEqual(['wake up']);
  });

  it('a client that disconnects mid-poll leaves nothing claimed', async () => {
    const clock = createTestClock();
    let watched: ReturnType<typeof observed> | undefined;
    const sqs = await start({ clock, wrap: (backend) => (watched = observed(backend)) });
    const c = sqs.client();
    const { QueueUrl = '' } = await c.send(new CreateQueueCommand({ QueueName: 'orders' }));
    const spy = watched as ReturnType<typeof observed>;
    const receiving = spy.started('receive');
    const settled = spy.settled('receive');
    const body = JSON.stringify({ QueueUrl, WaitTimeSeconds: 20, MaxNumberOfMessages: 10 });
    const req = request({
      host: '127.0.0.1',
      port: Number(new URL(sqs.endpoint).port),
      method: 'POST',
      path: '/',
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.ReceiveMessage', 'content-length': Buffer.byteLength(body) },
    });
    req.on('error', () => {});
    req.end(body);
    await receiving;
    req.destroy();
    await settled;
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'for someone alive' }));
    const [message] = await receiveAll(c, QueueUrl, { MessageSystemAttributeNames: ['ApproximateReceiveCount'] });
    expect(message?.Body).toBe('for someone alive');
    expect(message?.Attributes?.ApproximateReceiveCount).toBe('1');
  });

  it('returns system attributes on request: receive count rising, timestamps in ms', async () => {
    const { c, clock, QueueUrl } = await withQueue();
    const sentAt = clock.now();
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x' }));
    clock.advance(250);
    const [first] = await receiveAll(c, QueueUrl, { MessageSystemAttributeNames: ['All'], VisibilityTimeout: 0 });
    expect(first?.Attributes).toMatchObject({ SentTimestamp: String(sentAt), ApproximateReceiveCount: '1', ApproximateFirstReceiveTimestamp: String(sentAt + 250), SenderId: expect.any(String) });
    expect(first?.Attributes?.SequenceNumber).toBeUndefined();
    clock.advance(250);
    // The SDK types the deprecated AttributeNames as queue attribute names; clients still send these.
    const [second] = await receiveAll(c, QueueUrl, { AttributeNames: ['ApproximateReceiveCount' as never], MessageSystemAttributeNames: ['ApproximateFirstReceiveTimestamp'] });
    expect(second?.Attributes).toEqual({ ApproximateReceiveCount: '2', ApproximateFirstReceiveTimestamp: String(sentAt + 250) });
  });

  it('filters message attributes by All, .* and prefix.*, with the MD5 over the subset', async () => {
    const { c, QueueUrl } = await withQueue();
    const MessageAttributes: Record<string, MessageAttributeValue> = {
      'order.id': { DataType: 'String', StringValue: '7' },
      'order.total': { DataType: 'Number', StringValue: '9.5' },
      other: { DataType: 'String', StringValue: 'x' },
    };
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x', MessageAttributes }));
    const get = async (MessageAttributeNames?: string[]) => {
      const [m] = await receiveAll(c, QueueUrl, { VisibilityTimeout: 0, ...(MessageAttributeNames ? { MessageAttributeNames } : {}) });
      return m;
    };
    const none = await get();
    expect(none?.MessageAttributes).toBeUndefined();
    expect(none?.MD5OfMessageAttributes).toBeUndefined();
    for (const names of [['All'], ['.*']]) expect(Object.keys((await get(names))?.MessageAttributes ?? {}).sort()).toEqual(['order.id', 'order.total', 'other']);
    const prefixed = await get(['order.*']);
    expect(Object.keys(prefixed?.MessageAttributes ?? {}).sort()).toEqual(['order.id', 'order.total']);
    const full = await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'y', MessageAttributes: { 'order.id': MessageAttributes['order.id'] as MessageAttributeValue, 'order.total': MessageAttributes['order.total'] as MessageAttributeValue } }));
    expect(prefixed?.MD5OfMessageAttributes).toBe(full.MD5OfMessageAttributes);
    const missing = await get(['nothing']);
    expect(missing?.MessageAttributes).toBeUndefined();
    expect(missing?.MD5OfMessageAttributes).toBeUndefined();
  });

  it('returns a JSON-valued body sent through the library as JSON text, with its MD5', async () => {
    const { sqs, c, QueueUrl } = await withQueue();
    await sqs.backend.send('orders', { total: 9.5, items: ['a'] }, { mustExist: true });
    const [message] = await receiveAll(c, QueueUrl);
    expect(message?.Body).toBe('{"total":9.5,"items":["a"]}');
    expect(message?.MD5OfBody).toBe(md5('{"total":9.5,"items":["a"]}'));
  });
});

describe('DeleteMessage (§9.9)', () => {
  it('the current handle deletes; a retry of the same delete still succeeds', async () => {
    const { sqs, c, clock, QueueUrl } = await withQueue();
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x' }));
    const [m] = await receiveAll(c, QueueUrl);
    await c.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: m?.ReceiptHandle }));
    await c.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: m?.ReceiptHandle }));
    clock.advance(60_000);
    expect(await receiveAll(c, QueueUrl)).toEqual([]);
    expect((await sqs.backend.queues.get('orders')).counts).toMatchObject({ visible: 0, inFlight: 0 });
  });

  it('a stale handle (the message was received again) answers 200 and deletes nothing', async () => {
    const { sqs, c, clock, QueueUrl } = await withQueue();
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x' }));
    const [first] = await receiveAll(c, QueueUrl, { VisibilityTimeout: 1 });
    clock.advance(1_000);
    const [second] = await receiveAll(c, QueueUrl, { VisibilityTimeout: 60 });
    expect(second?.ReceiptHandle).not.toBe(first?.ReceiptHandle);
    const out = await c.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: first?.ReceiptHandle }));
    expect(out.$metadata.httpStatusCode).toBe(200);
    expect((await sqs.backend.queues.get('orders')).counts.inFlight).toBe(1);
    await c.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: second?.ReceiptHandle }));
    expect((await sqs.backend.queues.get('orders')).counts.inFlight).toBe(0);
  });

  it('a garbage handle is ReceiptHandleIsInvalid (404)', async () => {
    const { c, QueueUrl } = await withQueue();
    const error = await rejection(c.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: 'not-a-receipt' })));
    expect(error).toBeInstanceOf(ReceiptHandleIsInvalid);
    expect(error.$metadata.httpStatusCode).toBe(404);
  });

  it('DeleteMessageBatch reports each entry', async () => {
    const { c, QueueUrl } = await withQueue();
    await c.send(new SendMessageBatchCommand({ QueueUrl, Entries: [{ Id: 'a', MessageBody: 'a' }, { Id: 'b', MessageBody: 'b' }] }));
    const messages = await receiveAll(c, QueueUrl);
    const out = await c.send(
      new DeleteMessageBatchCommand({
        QueueUrl,
        Entries: [
          { Id: 'one', ReceiptHandle: messages[0]?.ReceiptHandle },
          { Id: 'junk', ReceiptHandle: 'garbage' },
          { Id: 'two', ReceiptHandle: messages[1]?.ReceiptHandle },
        ],
      }),
    );
    expect(out.Successful).toEqual([{ Id: 'one' }, { Id: 'two' }]);
    expect(out.Failed).toEqual([{ Id: 'junk', SenderFault: true, Code: 'ReceiptHandleIsInvalid', Message: expect.any(String) }]);
  });
});

describe('ChangeMessageVisibility (§9.10)', () => {
  it('0 makes the message visible at once; its receive count still counts', async () => {
    const { c, QueueUrl } = await withQueue();
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x' }));
    const [m] = await receiveAll(c, QueueUrl);
    await c.send(new ChangeMessageVisibilityCommand({ QueueUrl, ReceiptHandle: m?.ReceiptHandle, VisibilityTimeout: 0 }));
    const [again] = await receiveAll(c, QueueUrl, { MessageSystemAttributeNames: ['ApproximateReceiveCount'] });
    expect(again?.Attributes?.ApproximateReceiveCount).toBe('2');
  });

  it('extends from now, not from the receive', async () => {
    const { c, clock, QueueUrl } = await withQueue();
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x' }));
    const [m] = await receiveAll(c, QueueUrl, { VisibilityTimeout: 10 });
    clock.advance(8_000);
    await c.send(new ChangeMessageVisibilityCommand({ QueueUrl, ReceiptHandle: m?.ReceiptHandle, VisibilityTimeout: 10 }));
    clock.advance(9_999);
    expect(await receiveAll(c, QueueUrl)).toEqual([]);
    clock.advance(1);
    expect(await receiveAll(c, QueueUrl)).toHaveLength(1);
  });

  it('refuses to extend past 12 hours after the receive', async () => {
    const { c, clock, QueueUrl } = await withQueue();
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x' }));
    const [m] = await receiveAll(c, QueueUrl);
    await c.send(new ChangeMessageVisibilityCommand({ QueueUrl, ReceiptHandle: m?.ReceiptHandle, VisibilityTimeout: 43_200 }));
    clock.advance(3_600_000);
    const error = await rejection(c.send(new ChangeMessageVisibilityCommand({ QueueUrl, ReceiptHandle: m?.ReceiptHandle, VisibilityTimeout: 43_200 })));
    expect(error.name).toBe('InvalidParameterValue');
    await c.send(new ChangeMessageVisibilityCommand({ QueueUrl, ReceiptHandle: m?.ReceiptHandle, VisibilityTimeout: 39_600 }));
  });

  it('a message that is not in flight any more is MessageNotInflight', async () => {
    const { c, QueueUrl } = await withQueue();
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x' }));
    const [m] = await receiveAll(c, QueueUrl);
    await c.send(new ChangeMessageVisibilityCommand({ QueueUrl, ReceiptHandle: m?.ReceiptHandle, VisibilityTimeout: 0 }));
    const error = await rejection(c.send(new ChangeMessageVisibilityCommand({ QueueUrl, ReceiptHandle: m?.ReceiptHandle, VisibilityTimeout: 30 })));
    expect(error).toBeInstanceOf(MessageNotInflight);
  });

  it('the batch form reports each entry', async () => {
    const { c, QueueUrl } = await withQueue();
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x' }));
    const [m] = await receiveAll(c, QueueUrl);
    const out = await c.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl,
        Entries: [
          { Id: 'ok', ReceiptHandle: m?.ReceiptHandle, VisibilityTimeout: 60 },
          { Id: 'junk', ReceiptHandle: 'garbage', VisibilityTimeout: 60 },
        ],
      }),
    );
    expect(out.Successful).toEqual([{ Id: 'ok' }]);
    expect(out.Failed).toEqual([{ Id: 'junk', SenderFault: true, Code: 'ReceiptHandleIsInvalid', Message: expect.any(String) }]);
  });
});
