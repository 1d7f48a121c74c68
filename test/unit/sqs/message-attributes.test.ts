import { describe, expect, it } from 'vitest';
import type { MessageAttribute, ReceivedMessage } from '../../../src/sqs/backend.js';
import { messageAttributesToWire, messageSize, selectMessageAttributes, sequenceNumber, systemAttributes } from '../../../src/sqs/message-attributes.js';

const attributes: Record<string, MessageAttribute> = {
  'order.id': { type: 'String', value: '1' },
  'order.total': { type: 'Number', value: '9.5' },
  orderly: { type: 'String', value: 'x' },
  blob: { type: 'Binary.gz', value: new Uint8Array([1, 2, 3]) },
};

const message: ReceivedMessage = {
  id: '17',
  queue: 'pay.fifo',
  body: 'b',
  receipt: 'r',
  receiveCount: 2,
  sentAt: 1_700_000_000_123,
  firstReceivedAt: 1_700_000_001_456,
  attributes,
  group: 'g1',
  sequence: 42,
  dedupeId: 'd1',
  sourceQueue: 'pay-src.fifo',
};

describe('selectMessageAttributes', () => {
  it('selects all for All or .*, by prefix for name.*, exact names otherwise, none for none', () => {
    expect(Object.keys(selectMessageAttributes(attributes, ['All']))).toHaveLength(4);
    expect(Object.keys(selectMessageAttributes(attributes, ['.*']))).toHaveLength(4);
    expect(Object.keys(selectMessageAttributes(attributes, ['order.*'])).sort()).toEqual(['order.id', 'order.total']);
    expect(Object.keys(selectMessageAttributes(attributes, ['orderly', 'missing']))).toEqual(['orderly']);
    expect(Object.keys(selectMessageAttributes(attributes, []))).toEqual([]);
  });
});

describe('messageAttributesToWire', () => {
  it('writes string values as StringValue and bytes as base64 BinaryValue', () => {
    expect({ ...messageAttributesToWire(attributes) }).toEqual({
      'order.id': { DataType: 'String', StringValue: '1' },
      'order.total': { DataType: 'Number', StringValue: '9.5' },
      orderly: { DataType: 'String', StringValue: 'x' },
      blob: { DataType: 'Binary.gz', BinaryValue: 'AQID' },
    });
  });
});

describe('systemAttributes', () => {
  it('gives every applicable attribute for All, timestamps in ms, the sequence padded to 20 digits', () => {
    expect({ ...systemAttributes(message, ['All'], { region: 'us-east-1', fifo: true }) }).toEqual({
      SenderId: '000000000000',
      SentTimestamp: '1700000000123',
      ApproximateReceiveCount: '2',
      ApproximateFirstReceiveTimestamp: '1700000001456',
      SequenceNumber: '00000000000000000042',
      MessageDeduplicationId: 'd1',
      MessageGroupId: 'g1',
      DeadLetterQueueSourceArn: 'arn:aws:sqs:us-east-1:000000000000:pay-src.fifo',
    });
  });

  it('gives only the names asked for, and leaves out those that do not apply', () => {
    const standard: ReceivedMessage = { ...message, queue: 'q', group: undefined, dedupeId: undefined, sourceQueue: undefined } as ReceivedMessage;
    expect({ ...systemAttributes(standard, ['SentTimestamp', 'MessageGroupId', 'SequenceNumber', 'AWSTraceHeader', 'Bogus'], { region: 'r', fifo: false }) }).toEqual({
      SentTimestamp: '1700000000123',
    });
    expect({ ...systemAttributes(message, [], { region: 'r', fifo: true }) }).toEqual({});
  });

  it('sequenceNumber pads to 20 digits', () => {
    expect(sequenceNumber(1)).toBe('00000000000000000001');
    expect(sequenceNumber(12345678901234)).toBe('00000012345678901234');
  });
});

describe('messageSize', () => {
  it('counts UTF-8 bytes of body and attribute names, types and values', () => {
    expect(messageSize('héllo', {})).toBe(6);
    expect(messageSize('', { ab: { type: 'String', value: 'xyz' }, c: { type: 'Binary', value: new Uint8Array(4) } })).toBe(2 + 6 + 3 + 1 + 6 + 4);
  });
});
