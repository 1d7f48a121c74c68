/**
 * §9 items 3, 4, 5 and 13 with the real SDK against createSqsHandler(real spool): CreateQueue,
 * GetQueueUrl, ListQueues, queue attributes, tags, PurgeQueue, DeleteQueue.
 */
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  InvalidAttributeName,
  InvalidAttributeValue,
  ListQueuesCommand,
  ListQueueTagsCommand,
  PurgeQueueCommand,
  QueueDoesNotExist,
  QueueNameExists,
  ReceiveMessageCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  TagQueueCommand,
  UntagQueueCommand,
} from '@aws-sdk/client-sqs';
import { rejection } from './helpers/sdk.js';
import { describe, expect, it } from 'vitest';
import { useSqsFixtures } from './helpers/fixture.js';

const start = useSqsFixtures();

describe('CreateQueue (§9.3)', () => {
  it('returns a URL built from the Host header, and the same URL for the same attributes', async () => {
    const sqs = await start();
    const c = sqs.client();
    const first = await c.send(new CreateQueueCommand({ QueueName: 'orders', Attributes: { VisibilityTimeout: '60' } }));
    expect(first.QueueUrl).toBe(`${sqs.endpoint}/000000000000/orders`);
    const again = await c.send(new CreateQueueCommand({ QueueName: 'orders', Attributes: { VisibilityTimeout: '60' } }));
    expect(again.QueueUrl).toBe(first.QueueUrl);
  });

  it('returns a URL built from publicUrl when one is configured', async () => {
    const sqs = await start({ handler: { publicUrl: 'http://queues.example:9324/sqs/' } });
    const { QueueUrl } = await sqs.client().send(new CreateQueueCommand({ QueueName: 'orders' }));
    expect(QueueUrl).toBe('http://queues.example:9324/sqs/000000000000/orders');
  });

  it('refuses the same name with different attributes with QueueNameExists', async () => {
    const c = (await start()).client();
    await c.send(new CreateQueueCommand({ QueueName: 'orders', Attributes: { VisibilityTimeout: '60' } }));
    const error = await rejection(c.send(new CreateQueueCommand({ QueueName: 'orders', Attributes: { VisibilityTimeout: '61' } })));
    expect(error).toBeInstanceOf(QueueNameExists);
    expect(error.$metadata.httpStatusCode).toBe(400);
  });

  it('refuses invalid names with InvalidParameterValue and stores nothing', async () => {
    const sqs = await start();
    const c = sqs.client();
    for (const QueueName of ['', 'a'.repeat(81), 'a b', "'; DROP TABLE queues; --", 'x.fifo']) {
      const error = await rejection(c.send(new CreateQueueCommand({ QueueName })));
      expect(error.name, QueueName).toBe('InvalidParameterValue');
    }
    const error = await rejection(c.send(new CreateQueueCommand({ QueueName: 'plain', Attributes: { FifoQueue: 'true' } })));
    expect(error.name).toBe('InvalidParameterValue');
    expect(await sqs.backend.queues.list()).toEqual([]);
  });

  it('gives queues made over the wire SQS defaults', async () => {
    const sqs = await start();
    const c = sqs.client();
    const { QueueUrl } = await c.send(new CreateQueueCommand({ QueueName: 'defaults' }));
    const { Attributes } = await c.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }));
    expect(Attributes).toMatchObject({
      VisibilityTimeout: '30',
      DelaySeconds: '0',
      ReceiveMessageWaitTimeSeconds: '0',
      MaximumMessageSize: '1048576',
      MessageRetentionPeriod: '345600',
    });
    expect(Attributes?.RedrivePolicy).toBeUndefined();
    expect(Attributes?.FifoQueue).toBeUndefined();
  });

  it('stores tags given at create', async () => {
    const c = (await start()).client();
    const { QueueUrl } = await c.send(new CreateQueueCommand({ QueueName: 'tagged', tags: { team: 'payments', env: 'dev' } }));
    expect((await c.send(new ListQueueTagsCommand({ QueueUrl }))).Tags).toEqual({ team: 'payments', env: 'dev' });
  });
});

describe('GetQueueUrl and ListQueues (§9.4)', () => {
  it('GetQueueUrl returns the URL of a created queue and QueueDoesNotExist otherwise', async () => {
    const sqs = await start();
    const c = sqs.client();
    await c.send(new CreateQueueCommand({ QueueName: 'orders' }));
    expect((await c.send(new GetQueueUrlCommand({ QueueName: 'orders' }))).QueueUrl).toBe(sqs.url('orders'));
    const error = await rejection(c.send(new GetQueueUrlCommand({ QueueName: 'missing' })));
    expect(error).toBeInstanceOf(QueueDoesNotExist);
    expect(error.$metadata.httpStatusCode).toBe(400);
  });

  it('omits QueueUrls when there are none', async () => {
    const c = (await start()).client();
    const out = await c.send(new ListQueuesCommand({}));
    expect(out.QueueUrls).toBeUndefined();
    expect(out.NextToken).toBeUndefined();
  });

  it('matches the prefix case-sensitively, with % and _ as plain characters', async () => {
    const sqs = await start();
    const c = sqs.client();
    for (const QueueName of ['Orders', 'orders', 'orders_eu', 'ordersXeu', 'axb']) await c.send(new CreateQueueCommand({ QueueName }));
    expect((await c.send(new ListQueuesCommand({ QueueNamePrefix: 'orders' }))).QueueUrls).toEqual([sqs.url('orders'), sqs.url('ordersXeu'), sqs.url('orders_eu')]); // byte order: X < _
    // With SQL LIKE, _ and % would be wildcards and match ordersXeu and axb.
    expect((await c.send(new ListQueuesCommand({ QueueNamePrefix: 'orders_' }))).QueueUrls).toEqual([sqs.url('orders_eu')]);
    expect((await c.send(new ListQueuesCommand({ QueueNamePrefix: 'a%' }))).QueueUrls).toBeUndefined();
    expect((await c.send(new ListQueuesCommand({ QueueNamePrefix: 'O' }))).QueueUrls).toEqual([sqs.url('Orders')]);
  });

  it('pages only when MaxResults is given, and the pages cover every queue once', async () => {
    const sqs = await start();
    const c = sqs.client();
    const names = Array.from({ length: 7 }, (_, i) => `q${i}`);
    for (const QueueName of names) await c.send(new CreateQueueCommand({ QueueName }));
    const all = await c.send(new ListQueuesCommand({}));
    expect(all.QueueUrls).toHaveLength(7);
    expect(all.NextToken).toBeUndefined();
    const seen: string[] = [];
    let NextToken: string | undefined;
    let pages = 0;
    do {
      const page = await c.send(new ListQueuesCommand({ MaxResults: 3, ...(NextToken ? { NextToken } : {}) }));
      seen.push(...(page.QueueUrls ?? []));
      NextToken = page.NextToken;
      pages++;
    } while (NextToken);
    expect(pages).toBe(3);
    expect(seen).toEqual(names.map((n) => sqs.url(n)));
  });
});

describe('queue attributes (§9.5)', () => {
  it('GetQueueAttributes All returns strings, timestamps in epoch seconds, and counts', async () => {
    const sqs = await start();
    const c = sqs.client();
    const before = Math.floor(Date.now() / 1000);
    const { QueueUrl } = await c.send(new CreateQueueCommand({ QueueName: 'orders' }));
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'a' }));
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'b' }));
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'c', DelaySeconds: 900 }));
    await c.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 1 }));
    const { Attributes = {} } = await c.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }));
    for (const value of Object.values(Attributes)) expect(typeof value).toBe('string');
    expect(Attributes).toMatchObject({
      QueueArn: 'arn:aws:sqs:us-east-1:000000000000:orders',
      ApproximateNumberOfMessages: '1',
      ApproximateNumberOfMessagesNotVisible: '1',
      ApproximateNumberOfMessagesDelayed: '1',
    });
    const created = Number(Attributes.CreatedTimestamp);
    expect(created).toBeGreaterThanOrEqual(before);
    expect(created).toBeLessThan(before + 3600);
    expect(Number(Attributes.LastModifiedTimestamp)).toBeGreaterThanOrEqual(created);
  });

  it('without AttributeNames returns no attributes; an unknown name is InvalidAttributeName', async () => {
    const c = (await start()).client();
    const { QueueUrl } = await c.send(new CreateQueueCommand({ QueueName: 'orders' }));
    expect((await c.send(new GetQueueAttributesCommand({ QueueUrl }))).Attributes).toBeUndefined();
    expect(await rejection(c.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['Nope' as never] })))).toBeInstanceOf(InvalidAttributeName);
  });

  it('an attribute named like an Object.prototype member (toString, constructor, __proto__) is InvalidAttributeName', async () => {
    const sqs = await start();
    const c = sqs.client();
    const { QueueUrl } = await c.send(new CreateQueueCommand({ QueueName: 'orders' }));
    for (const name of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) {
      const Attributes = Object.defineProperty({}, name, { value: '5', enumerable: true });
      expect(await rejection(c.send(new CreateQueueCommand({ QueueName: 'other', Attributes })))).toBeInstanceOf(InvalidAttributeName);
      expect(await rejection(c.send(new SetQueueAttributesCommand({ QueueUrl, Attributes })))).toBeInstanceOf(InvalidAttributeName);
    }
    expect(await sqs.spool.queues.list()).toEqual(['orders']);
  });

  it('SetQueueAttributes changes attributes in seconds and GetQueueAttributes reads them back', async () => {
    const c = (await start()).client();
    const { QueueUrl } = await c.send(new CreateQueueCommand({ QueueName: 'orders' }));
    await c.send(
      new SetQueueAttributesCommand({
        QueueUrl,
        Attributes: { VisibilityTimeout: '45', DelaySeconds: '2', ReceiveMessageWaitTimeSeconds: '20', MaximumMessageSize: '2048', MessageRetentionPeriod: '60' },
      }),
    );
    const { Attributes } = await c.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['VisibilityTimeout', 'DelaySeconds', 'ReceiveMessageWaitTimeSeconds', 'MaximumMessageSize', 'MessageRetentionPeriod'] }),
    );
    expect(Attributes).toEqual({ VisibilityTimeout: '45', DelaySeconds: '2', ReceiveMessageWaitTimeSeconds: '20', MaximumMessageSize: '2048', MessageRetentionPeriod: '60' });
  });

  it('checks every §7 range with InvalidAttributeValue, and changes nothing', async () => {
    const c = (await start()).client();
    const { QueueUrl } = await c.send(new CreateQueueCommand({ QueueName: 'orders' }));
    const outOfRange: Record<string, string>[] = [
      { VisibilityTimeout: '-1' },
      { VisibilityTimeout: '43201' },
      { DelaySeconds: '901' },
      { ReceiveMessageWaitTimeSeconds: '21' },
      { MaximumMessageSize: '1023' },
      { MaximumMessageSize: '1048577' },
      { MessageRetentionPeriod: '59' },
      { MessageRetentionPeriod: '1209601' },
      { VisibilityTimeout: 'soon' },
    ];
    for (const Attributes of outOfRange) {
      expect(await rejection(c.send(new SetQueueAttributesCommand({ QueueUrl, Attributes }))), JSON.stringify(Attributes)).toBeInstanceOf(InvalidAttributeValue);
      expect(await rejection(c.send(new CreateQueueCommand({ QueueName: 'other', Attributes }))), JSON.stringify(Attributes)).toBeInstanceOf(InvalidAttributeValue);
    }
    const { Attributes } = await c.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }));
    expect(Attributes).toMatchObject({ VisibilityTimeout: '30', DelaySeconds: '0', MaximumMessageSize: '1048576' });
  });

  it('refuses a malformed RedrivePolicy, one pointing to a missing queue, and a FIFO/standard mismatch', async () => {
    const c = (await start()).client();
    const { QueueUrl } = await c.send(new CreateQueueCommand({ QueueName: 'orders' }));
    await c.send(new CreateQueueCommand({ QueueName: 'fifo-dlq.fifo', Attributes: { FifoQueue: 'true' } }));
    const policy = (arn: string, n: unknown = 3) => JSON.stringify({ deadLetterTargetArn: arn, maxReceiveCount: n });
    for (const RedrivePolicy of ['{not json', '{"maxReceiveCount":3}', policy('arn:aws:sqs:us-east-1:000000000000:missing'), policy('arn:aws:sqs:us-east-1:000000000000:fifo-dlq.fifo'), policy('arn:aws:sqs:us-east-1:000000000000:orders', 0)]) {
      const error = await rejection(c.send(new SetQueueAttributesCommand({ QueueUrl, Attributes: { RedrivePolicy } })));
      expect(['InvalidAttributeValue', 'InvalidParameterValue'], RedrivePolicy).toContain(error.name);
    }
    expect((await c.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['RedrivePolicy'] }))).Attributes).toBeUndefined();
  });

  it('accepts a RedrivePolicy with maxReceiveCount as a string and returns it as JSON text', async () => {
    const c = (await start()).client();
    await c.send(new CreateQueueCommand({ QueueName: 'dlq' }));
    const { QueueUrl } = await c.send(
      new CreateQueueCommand({ QueueName: 'orders', Attributes: { RedrivePolicy: '{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":"4"}' } }),
    );
    const { Attributes } = await c.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['RedrivePolicy'] }));
    expect(JSON.parse(Attributes?.RedrivePolicy ?? '')).toEqual({ deadLetterTargetArn: 'arn:aws:sqs:us-east-1:000000000000:dlq', maxReceiveCount: 4 });
  });

  it('FIFO queues report FifoQueue and ContentBasedDeduplication; FifoQueue cannot change', async () => {
    const c = (await start()).client();
    const { QueueUrl } = await c.send(new CreateQueueCommand({ QueueName: 'pay.fifo', Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'true' } }));
    const { Attributes } = await c.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }));
    expect(Attributes).toMatchObject({ FifoQueue: 'true', ContentBasedDeduplication: 'true', DeduplicationScope: 'queue', FifoThroughputLimit: 'perQueue' });
    expect(await rejection(c.send(new SetQueueAttributesCommand({ QueueUrl, Attributes: { FifoQueue: 'false' } })))).toBeInstanceOf(InvalidAttributeName);
  });
});

describe('tags', () => {
  it('TagQueue adds, UntagQueue removes, ListQueueTags lists', async () => {
    const c = (await start()).client();
    const { QueueUrl } = await c.send(new CreateQueueCommand({ QueueName: 'orders' }));
    expect((await c.send(new ListQueueTagsCommand({ QueueUrl }))).Tags).toBeUndefined();
    await c.send(new TagQueueCommand({ QueueUrl, Tags: { a: '1', b: '2' } }));
    await c.send(new UntagQueueCommand({ QueueUrl, TagKeys: ['a'] }));
    expect((await c.send(new ListQueueTagsCommand({ QueueUrl }))).Tags).toEqual({ b: '2' });
  });

  it('TagQueue refuses keys and values outside the SQS character set with InvalidParameterValue, storing nothing', async () => {
    const c = (await start()).client();
    const { QueueUrl } = await c.send(new CreateQueueCommand({ QueueName: 'orders', tags: { team: 'a' } }));
    for (const bad of ['\u0000', '\u0001', '\u001f', '\ufffe', '\uffff', '\ud800', 'x\udc00']) {
      for (const Tags of [{ [`k${bad}`]: 'v' }, { k: `v${bad}` }]) {
        const error = await rejection(c.send(new TagQueueCommand({ QueueUrl, Tags })));
        expect(error.name, JSON.stringify(Tags)).toBe('InvalidParameterValue');
      }
    }
    // Tab, LF, CR and a surrogate pair are in the set.
    await c.send(new TagQueueCommand({ QueueUrl, Tags: { k: 'a\tb\nc\rd \u{1F600}' } }));
    expect((await c.send(new ListQueueTagsCommand({ QueueUrl }))).Tags).toEqual({ team: 'a', k: 'a\tb\nc\rd \u{1F600}' });
  });
});

describe('PurgeQueue and DeleteQueue (§9.13)', () => {
  it('PurgeQueue removes visible and in-flight messages, and can run twice in a row', async () => {
    const sqs = await start();
    const c = sqs.client();
    const { QueueUrl } = await c.send(new CreateQueueCommand({ QueueName: 'orders' }));
    for (const MessageBody of ['a', 'b', 'c']) await c.send(new SendMessageCommand({ QueueUrl, MessageBody }));
    expect((await c.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 1 }))).Messages).toHaveLength(1);
    await c.send(new PurgeQueueCommand({ QueueUrl }));
    await c.send(new PurgeQueueCommand({ QueueUrl }));
    const info = await sqs.backend.queues.get('orders');
    expect(info.counts).toMatchObject({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it('after DeleteQueue every call on the queue is QueueDoesNotExist', async () => {
    const c = (await start()).client();
    const { QueueUrl } = await c.send(new CreateQueueCommand({ QueueName: 'orders' }));
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'a' }));
    await c.send(new DeleteQueueCommand({ QueueUrl }));
    for (const command of [
      new SendMessageCommand({ QueueUrl, MessageBody: 'x' }),
      new ReceiveMessageCommand({ QueueUrl }),
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }),
      new PurgeQueueCommand({ QueueUrl }),
      new DeleteQueueCommand({ QueueUrl }),
      new GetQueueUrlCommand({ QueueName: 'orders' }),
    ]) {
      expect(await rejection(c.send(command as SendMessageCommand)), command.constructor.name).toBeInstanceOf(QueueDoesNotExist);
    }
  });

  it('SendMessage to a queue that was never created is QueueDoesNotExist and creates nothing', async () => {
    const sqs = await start();
    const error = await rejection(sqs.client().send(new SendMessageCommand({ QueueUrl: sqs.url('never'), MessageBody: 'x' })));
    expect(error).toBeInstanceOf(QueueDoesNotExist);
    expect(await sqs.backend.queues.list()).toEqual([]);
    expect((await sqs.spool.stats()).queues.never).toBeUndefined();
  });
});
