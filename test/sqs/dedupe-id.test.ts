/**
 * ReceiveMessage returns a FIFO message's `MessageDeduplicationId` (real SDK, JSON protocol, and
 * raw Query): under `All` and under its own name, in AttributeNames as in
 * MessageSystemAttributeNames. It is the id sent, or under ContentBasedDeduplication the hex
 * SHA-256 of the body, as SQS computes it; never on a standard queue; kept across a restart and
 * in the dead-letter queue.
 */
import { createHash } from 'node:crypto';
import { CreateQueueCommand, ReceiveMessageCommand, SendMessageBatchCommand, SendMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { useSqsFixtures } from './helpers/fixture.js';
import { callQuery } from './helpers/serve.js';

const start = useSqsFixtures();
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const arn = (name: string) => `arn:aws:sqs:us-east-1:000000000000:${name}`;

/** Receives with visibility 0, so the same messages come back on the next call. */
async function peek(c: SQSClient, QueueUrl: string, names: { MessageSystemAttributeNames?: string[]; AttributeNames?: string[] }): Promise<Message[]> {
  const input = { QueueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 0, ...names } as ConstructorParameters<typeof ReceiveMessageCommand>[0];
  return (await c.send(new ReceiveMessageCommand(input))).Messages ?? [];
}

async function fifoQueue(c: SQSClient, name: string, Attributes: Record<string, string> = {}): Promise<string> {
  return (await c.send(new CreateQueueCommand({ QueueName: name, Attributes: { FifoQueue: 'true', ...Attributes } }))).QueueUrl ?? '';
}

describe('MessageDeduplicationId on ReceiveMessage', () => {
  it('is the id sent, under All and under its own name, and only when asked for', async () => {
    const sqs = await start();
    const c = sqs.client();
    const QueueUrl = await fifoQueue(c, 'pay.fifo');
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'pay 10', MessageGroupId: 'c42', MessageDeduplicationId: 'tx-1' }));

    const [all] = await peek(c, QueueUrl, { MessageSystemAttributeNames: ['All'] });
    expect(all?.Attributes).toMatchObject({ MessageDeduplicationId: 'tx-1', MessageGroupId: 'c42' });
    const [named] = await peek(c, QueueUrl, { MessageSystemAttributeNames: ['MessageDeduplicationId'] });
    expect(named?.Attributes).toEqual({ MessageDeduplicationId: 'tx-1' });
    const [legacy] = await peek(c, QueueUrl, { AttributeNames: ['MessageDeduplicationId'] });
    expect(legacy?.Attributes).toEqual({ MessageDeduplicationId: 'tx-1' });
    const [other] = await peek(c, QueueUrl, { MessageSystemAttributeNames: ['SentTimestamp'] });
    expect(Object.keys(other?.Attributes ?? {})).toEqual(['SentTimestamp']);
  });

  it('is the hex SHA-256 of the body under ContentBasedDeduplication, unless an id was sent', async () => {
    const sqs = await start();
    const c = sqs.client();
    const QueueUrl = await fifoQueue(c, 'c.fifo', { ContentBasedDeduplication: 'true' });
    const body = 'héllo <wörld> \u{1F600}';
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: body, MessageGroupId: 'a' }));
    await c.send(
      new SendMessageBatchCommand({
        QueueUrl,
        Entries: [
          { Id: 'b', MessageBody: '{"json":true}', MessageGroupId: 'b' },
          { Id: 'c', MessageBody: 'explicit', MessageGroupId: 'c', MessageDeduplicationId: 'mine' },
        ],
      }),
    );
    const received = await peek(c, QueueUrl, { MessageSystemAttributeNames: ['All'] });
    expect(Object.fromEntries(received.map((m) => [m.Body, m.Attributes?.MessageDeduplicationId]))).toEqual({
      [body]: sha256(body),
      '{"json":true}': sha256('{"json":true}'),
      explicit: 'mine',
    });
  });

  it('is never returned on a standard queue, even for a send that gave one', async () => {
    const sqs = await start();
    const c = sqs.client();
    const { QueueUrl = '' } = await c.send(new CreateQueueCommand({ QueueName: 'std' }));
    await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x', MessageDeduplicationId: 'ignored-1' }));
    const [m] = await peek(c, QueueUrl, { MessageSystemAttributeNames: ['All', 'MessageDeduplicationId'] });
    expect(m?.Body).toBe('x');
    expect(m?.Attributes).not.toHaveProperty('MessageDeduplicationId');
  });

  it('survives a restart of server and spool', async () => {
    const sqs = await start();
    const QueueUrl = await fifoQueue(sqs.client(), 'pay.fifo', { ContentBasedDeduplication: 'true' });
    await sqs.client().send(new SendMessageCommand({ QueueUrl, MessageBody: 'by id', MessageGroupId: 'g', MessageDeduplicationId: 'tx-9' }));
    await sqs.client().send(new SendMessageCommand({ QueueUrl, MessageBody: 'by body', MessageGroupId: 'h' }));
    await sqs.restart();
    const received = await peek(sqs.client(), QueueUrl, { MessageSystemAttributeNames: ['All'] });
    expect(Object.fromEntries(received.map((m) => [m.Body, m.Attributes?.MessageDeduplicationId]))).toEqual({ 'by id': 'tx-9', 'by body': sha256('by body') });
  });

  it('stays with the message in its FIFO dead-letter queue', async () => {
    const sqs = await start();
    const c = sqs.client();
    const dlqUrl = await fifoQueue(c, 'dlq.fifo');
    const QueueUrl = await fifoQueue(c, 'src.fifo', { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn('dlq.fifo'), maxReceiveCount: 1 }) });
    const sent = await c.send(new SendMessageCommand({ QueueUrl, MessageBody: 'poison', MessageGroupId: 'g', MessageDeduplicationId: 'p-1' }));
    expect((await peek(c, QueueUrl, {})).map((m) => m.MessageId)).toEqual([sent.MessageId]);
    expect(await peek(c, QueueUrl, {})).toEqual([]);
    const [dead] = await peek(c, dlqUrl, { MessageSystemAttributeNames: ['All'] });
    expect(dead).toMatchObject({ MessageId: sent.MessageId, Attributes: { MessageDeduplicationId: 'p-1', DeadLetterQueueSourceArn: arn('src.fifo') } });
  });

  it('is an <Attribute> of the Query protocol response, under All and under its name', async () => {
    const sqs = await start();
    const QueueUrl = await fifoQueue(sqs.client(), 'q.fifo', { ContentBasedDeduplication: 'true' });
    const sent = await callQuery(sqs.endpoint, 'SendMessage', { QueueUrl, MessageBody: 'over query', MessageGroupId: 'g' });
    expect(sent.status).toBe(200);
    const attribute = `<Attribute><Name>MessageDeduplicationId</Name><Value>${sha256('over query')}</Value></Attribute>`;
    for (const name of ['All', 'MessageDeduplicationId']) {
      const received = await callQuery(sqs.endpoint, 'ReceiveMessage', { QueueUrl, VisibilityTimeout: 0, 'AttributeName.1': name });
      expect(received.text, name).toContain(attribute);
    }
    const without = await callQuery(sqs.endpoint, 'ReceiveMessage', { QueueUrl, VisibilityTimeout: 0, 'MessageSystemAttributeName.1': 'SentTimestamp' });
    expect(without.text).toContain('<Body>over query</Body>');
    expect(without.text).not.toContain('MessageDeduplicationId');
  });
});
