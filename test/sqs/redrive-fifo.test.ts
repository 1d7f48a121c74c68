/**
 * §9 items 11 and 12 with the real SDK against createSqsHandler(real spool): dead-letter redrive
 * (RedrivePolicy, ListDeadLetterSourceQueues, StartMessageMoveTask) and FIFO queues (groups,
 * order, deduplication window on an injected clock, sequence numbers).
 */
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ListDeadLetterSourceQueuesCommand,
  ReceiveMessageCommand,
  ResourceNotFoundException,
  SendMessageBatchCommand,
  SendMessageCommand,
  StartMessageMoveTaskCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { rejection } from './helpers/sdk.js';
import { describe, expect, it } from 'vitest';
import { createTestClock } from '../helpers/test-clock.js';
import { useSqsFixtures } from './helpers/fixture.js';
import { call } from './helpers/serve.js';

const start = useSqsFixtures();

async function receive(c: SQSClient, QueueUrl: string, extra: Partial<ConstructorParameters<typeof ReceiveMessageCommand>[0]> = {}): Promise<Message[]> {
  return (await c.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'], MessageAttributeNames: ['All'], ...extra }))).Messages ?? [];
}

const arn = (name: string) => `arn:aws:sqs:us-east-1:000000000000:${name}`;

describe('redrive to a dead-letter queue (§9.11)', () => {
  async function withDlq() {
    const clock = createTestClock();
    const sqs = await start({ clock });
    const c = sqs.client();
    const { QueueUrl: dlqUrl = '' } = await c.send(new CreateQueueCommand({ QueueName: 'orders-dlq' }));
    const { QueueUrl = '' } = await c.send(
      new CreateQueueCommand({ QueueName: 'orders', Attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn('orders-dlq'), maxReceiveCount: 2 }) } }),
    );
    return { sqs, c, clock, QueueUrl, dlqUrl };
  }

  it('moves the message on its third receive, keeping body and attributes and naming its source', async () => {
    const { c, QueueUrl, dlqUrl } = await withDlq();
    const sent = await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'poison', MessageAttributes: { kind: { DataType: 'String', StringValue: 'bad' } } }));
    expect((await receive(c, QueueUrl, { VisibilityTimeout: 0 })).map((m) => m.Attributes?.ApproximateReceiveCount)).toEqual(['1']);
    expect((await receive(c, QueueUrl, { VisibilityTimeout: 0 })).map((m) => m.Attributes?.ApproximateReceiveCount)).toEqual(['2']);
    expect(await receive(c, QueueUrl)).toEqual([]);
    const [dead] = await receive(c, dlqUrl);
    expect(dead).toMatchObject({ MessageId: sent.MessageId, Body: 'poison', MessageAttributes: { kind: { DataType: 'String', StringValue: 'bad' } } });
    expect(dead?.Attributes?.DeadLetterQueueSourceArn).toBe(arn('orders'));
    expect(dead?.MD5OfMessageAttributes).toBe(sent.MD5OfMessageAttributes);
  });

  it('lists the source queues of a dead-letter queue under the lowercase queueUrls', async () => {
    const { sqs, c, dlqUrl } = await withDlq();
    const out = await c.send(new ListDeadLetterSourceQueuesCommand({ QueueUrl: dlqUrl }));
    expect(out.queueUrls).toEqual([sqs.url('orders')]);
    const { QueueUrl: lonely = '' } = await c.send(new CreateQueueCommand({ QueueName: 'lonely' }));
    expect((await c.send(new ListDeadLetterSourceQueuesCommand({ QueueUrl: lonely }))).queueUrls).toEqual([]);
  });

  it('StartMessageMoveTask moves dead letters back to their source', async () => {
    const { c, QueueUrl, dlqUrl } = await withDlq();
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'retry me' }));
    await receive(c, QueueUrl, { VisibilityTimeout: 0 });
    await receive(c, QueueUrl, { VisibilityTimeout: 0 });
    expect(await receive(c, QueueUrl)).toEqual([]);
    const { TaskHandle } = await c.send(new StartMessageMoveTaskCommand({ SourceArn: arn('orders-dlq') }));
    expect(TaskHandle).toMatch(/\S/);
    expect(await receive(c, dlqUrl)).toEqual([]);
    expect((await receive(c, QueueUrl)).map((m) => m.Body)).toEqual(['retry me']);
  });

  it('takes back the ARNs it hands out, whatever region the client signs with', async () => {
    const sqs = await start();
    const c = sqs.client({ region: 'Local' });
    const { QueueUrl: dlqUrl = '' } = await c.send(new CreateQueueCommand({ QueueName: 'orders-dlq' }));
    const QueueArn = (await c.send(new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }))).Attributes?.QueueArn ?? '';
    expect(QueueArn).toBe('arn:aws:sqs:Local:000000000000:orders-dlq');
    await c.send(new CreateQueueCommand({ QueueName: 'orders', Attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: QueueArn, maxReceiveCount: 2 }) } }));
    expect((await c.send(new StartMessageMoveTaskCommand({ SourceArn: QueueArn }))).TaskHandle).toMatch(/\S/);
    // A raw client's scope region that is no hostname label (`a:b`) is not echoed into ARNs.
    const scope = 'AWS4-HMAC-SHA256 Credential=x/20260101/a:b/sqs/aws4_request, SignedHeaders=host, Signature=' + '0'.repeat(64);
    const raw = await call(sqs.endpoint, {
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.GetQueueAttributes', authorization: scope },
      body: JSON.stringify({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn', 'RedrivePolicy'] }),
    });
    expect(JSON.parse(raw.text)).toEqual({ Attributes: { QueueArn: arn('orders-dlq') } });
  });

  it('StartMessageMoveTask on a queue that does not exist is ResourceNotFoundException', async () => {
    const { c } = await withDlq();
    expect(await rejection(c.send(new StartMessageMoveTaskCommand({ SourceArn: arn('missing') })))).toBeInstanceOf(ResourceNotFoundException);
  });
});

describe('FIFO queues (§9.12)', () => {
  async function withFifo(Attributes: Record<string, string> = {}) {
    const clock = createTestClock();
    const sqs = await start({ clock });
    const c = sqs.client();
    const { QueueUrl = '' } = await c.send(new CreateQueueCommand({ QueueName: 'pay.fifo', Attributes: { FifoQueue: 'true', ...Attributes } }));
    return { sqs, c, clock, QueueUrl };
  }

  it('requires MessageGroupId, and a deduplication id unless content-based deduplication is on', async () => {
    const { c, QueueUrl } = await withFifo();
    const noGroup = await rejection(c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x', MessageDeduplicationId: 'd' })));
    expect(['InvalidParameterValue', 'MissingParameter']).toContain(noGroup.name);
    const noDedupe = await rejection(c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x', MessageGroupId: 'g' })));
    expect(noDedupe.name).toBe('InvalidParameterValue');
    expect(await receive(c, QueueUrl)).toEqual([]);
  });

  it('refuses a per-message DelaySeconds', async () => {
    const { c, QueueUrl } = await withFifo();
    const error = await rejection(c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x', MessageGroupId: 'g', MessageDeduplicationId: 'd', DelaySeconds: 5 })));
    expect(error.name).toBe('InvalidParameterValue');
  });

  it('a duplicate deduplication id inside 5 minutes returns the first MessageId and SequenceNumber; one message is delivered', async () => {
    const { c, clock, QueueUrl } = await withFifo();
    const first = await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'pay 10', MessageGroupId: 'c42', MessageDeduplicationId: 'tx-1' }));
    expect(first.SequenceNumber).toMatch(/^\d{20}$/);
    clock.advance(299_999);
    const again = await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'pay 10 (retry)', MessageGroupId: 'c42', MessageDeduplicationId: 'tx-1' }));
    expect(again.MessageId).toBe(first.MessageId);
    expect(again.SequenceNumber).toBe(first.SequenceNumber);
    const delivered = await receive(c, QueueUrl);
    expect(delivered.map((m) => m.Body)).toEqual(['pay 10']);
    expect(delivered[0]?.Attributes).toMatchObject({ MessageGroupId: 'c42', SequenceNumber: first.SequenceNumber, MessageDeduplicationId: 'tx-1' });
  });

  it('forgets a deduplication id after the 5-minute window (injected clock)', async () => {
    const { c, clock, QueueUrl } = await withFifo();
    const first = await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'a', MessageGroupId: 'g', MessageDeduplicationId: 'same' }));
    clock.advance(300_001);
    const later = await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'b', MessageGroupId: 'g', MessageDeduplicationId: 'same' }));
    expect(later.MessageId).not.toBe(first.MessageId);
    expect(BigInt(later.SequenceNumber ?? '0')).toBeGreaterThan(BigInt(first.SequenceNumber ?? '0'));
  });

  it('deduplicates on the body with ContentBasedDeduplication', async () => {
    const { c, QueueUrl } = await withFifo({ ContentBasedDeduplication: 'true' });
    const a = await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'same body', MessageGroupId: 'g' }));
    const b = await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'same body', MessageGroupId: 'g' }));
    const other = await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'other body', MessageGroupId: 'g' }));
    expect(b.MessageId).toBe(a.MessageId);
    expect(other.MessageId).not.toBe(a.MessageId);
  });

  it('keeps send order within a group and blocks a group while its head is in flight', async () => {
    const { c, clock, QueueUrl } = await withFifo({ ContentBasedDeduplication: 'true' });
    const Entries = ['a1', 'b1', 'a2', 'a3', 'b2'].map((body) => ({ Id: body, MessageBody: body, MessageGroupId: body[0] as string }));
    const sent = await c.send(new SendMessageBatchCommand({ QueueUrl, Entries }));
    const sequences = (sent.Successful ?? []).map((s) => BigInt(s.SequenceNumber ?? '0'));
    expect([...sequences].sort((x, y) => (x < y ? -1 : 1))).toEqual(sequences);

    const expected: Record<string, string[]> = { a: ['a1', 'a2', 'a3'], b: ['b1', 'b2'] };
    let rounds = 0;
    while (expected.a?.length || expected.b?.length) {
      const batch = await receive(c, QueueUrl, { VisibilityTimeout: 30 });
      expect(batch.length, `round ${rounds}`).toBeGreaterThan(0);
      // Nothing of a group with a message in flight is handed out.
      expect(await receive(c, QueueUrl)).toEqual([]);
      for (const m of batch) {
        const group = m.Attributes?.MessageGroupId as string;
        expect(m.Body).toBe(expected[group]?.shift());
        await c.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: m.ReceiptHandle }));
      }
      rounds++;
      expect(rounds).toBeLessThanOrEqual(5);
    }
    clock.advance(60_000);
    expect(await receive(c, QueueUrl)).toEqual([]);
  });

  it('a returned head goes first again (visibility 0), before later messages of its group', async () => {
    const { c, QueueUrl } = await withFifo({ ContentBasedDeduplication: 'true' });
    for (const body of ['1', '2']) await c.send(new SendMessageCommand({ QueueUrl, MessageBody: body, MessageGroupId: 'g' }));
    const [head] = await receive(c, QueueUrl, { MaxNumberOfMessages: 1, VisibilityTimeout: 0 });
    expect(head?.Body).toBe('1');
    const [again] = await receive(c, QueueUrl, { MaxNumberOfMessages: 1 });
    expect(again?.Body).toBe('1');
    expect(again?.Attributes?.ApproximateReceiveCount).toBe('2');
  });

  it('accepts MessageGroupId on a standard queue and returns it', async () => {
    const sqs = await start();
    const c = sqs.client();
    const { QueueUrl = '' } = await c.send(new CreateQueueCommand({ QueueName: 'fair' }));
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x', MessageGroupId: 'tenant-1' }));
    const [m] = await receive(c, QueueUrl);
    expect(m?.Attributes?.MessageGroupId).toBe('tenant-1');
    expect(m?.Attributes?.SequenceNumber).toBeUndefined();
  });
});
