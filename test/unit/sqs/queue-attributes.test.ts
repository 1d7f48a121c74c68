import { describe, expect, it } from 'vitest';
import type { QueueInfo } from '../../../src/sqs/backend.js';
import { SqsError } from '../../../src/sqs/errors.js';
import { QUEUE_ATTRIBUTE_NAMES, attributesFromWire, attributesToWire, checkAttributeNames, redrivePolicyFromWire } from '../../../src/sqs/queue-attributes.js';

function sqsError(fn: () => unknown): SqsError {
  try {
    fn();
  } catch (error) {
    if (error instanceof SqsError) return error;
    throw error;
  }
  throw new Error('expected an SqsError');
}

const standard: QueueInfo = {
  name: 'orders',
  fifo: false,
  attributes: {
    visibilityTimeoutMs: 30_000,
    delayMs: 1_500,
    receiveWaitMs: 20_000,
    maxPayloadBytes: 1_048_576,
    retentionMs: 345_600_000,
    deadLetter: { queue: 'orders-dlq', maxReceiveCount: 5 },
    fifo: false,
    contentDedupe: false,
    dedupeWindowMs: 300_000,
  },
  tags: {},
  counts: { visible: 3, inFlight: 2, delayed: 1, dead: 0 },
  createdAt: 1_700_000_000_999,
  updatedAt: 1_700_000_100_000,
};
const fifo: QueueInfo = {
  ...standard,
  name: 'pay.fifo',
  fifo: true,
  attributes: { ...standard.attributes, fifo: true, contentDedupe: true, deadLetter: null, retentionMs: null },
};

describe('attributesFromWire', () => {
  it('turns seconds into ms, keeps bytes, and maps names', () => {
    expect(
      attributesFromWire(
        { VisibilityTimeout: '60', DelaySeconds: '5', ReceiveMessageWaitTimeSeconds: '20', MessageRetentionPeriod: '86400', MaximumMessageSize: '2048' },
        'create',
      ),
    ).toEqual({ visibilityTimeoutMs: 60_000, delayMs: 5_000, receiveWaitMs: 20_000, retentionMs: 86_400_000, maxPayloadBytes: 2048 });
  });

  it('maps FifoQueue and ContentBasedDeduplication (case-insensitive booleans)', () => {
    expect(attributesFromWire({ FifoQueue: 'true', ContentBasedDeduplication: 'FALSE' }, 'create')).toEqual({ fifo: true, contentDedupe: false });
  });

  it('maps RedrivePolicy to deadLetter, and an empty one to null', () => {
    expect(attributesFromWire({ RedrivePolicy: '{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":"3"}' }, 'update')).toEqual({
      deadLetter: { queue: 'dlq', maxReceiveCount: 3 },
    });
    expect(attributesFromWire({ RedrivePolicy: '' }, 'update')).toEqual({ deadLetter: null });
  });

  it('passes out-of-range numbers through for the library to refuse', () => {
    expect(attributesFromWire({ VisibilityTimeout: '43201', DelaySeconds: '-1' }, 'create')).toEqual({ visibilityTimeoutMs: 43_201_000, delayMs: -1000 });
  });

  it('refuses values that are not numbers or booleans with InvalidAttributeValue', () => {
    for (const attributes of <Record<string, string>[]>[{ VisibilityTimeout: 'abc' }, { VisibilityTimeout: '1.5' }, { DelaySeconds: '' }, { MaximumMessageSize: '1e6' }, { FifoQueue: 'yes' }]) {
      expect(sqsError(() => attributesFromWire(attributes, 'create')).name, JSON.stringify(attributes)).toBe('InvalidAttributeValue');
    }
  });

  it('refuses unknown and read-only names with InvalidAttributeName, and FifoQueue on update', () => {
    expect(sqsError(() => attributesFromWire({ Visibility: '1' }, 'create')).name).toBe('InvalidAttributeName');
    expect(sqsError(() => attributesFromWire({ QueueArn: 'x' }, 'update')).name).toBe('InvalidAttributeName');
    expect(sqsError(() => attributesFromWire({ ApproximateNumberOfMessages: '1' }, 'create')).name).toBe('InvalidAttributeName');
    expect(sqsError(() => attributesFromWire({ FifoQueue: 'true' }, 'update')).message).toContain('only be set when the queue is created');
  });

  it('accepts and ignores policy and encryption attributes, and accepts only the per-queue FIFO modes', () => {
    expect(attributesFromWire({ Policy: '{}', SqsManagedSseEnabled: 'true', KmsMasterKeyId: 'alias/x', DeduplicationScope: 'queue', FifoThroughputLimit: 'perQueue' }, 'create')).toEqual({});
    expect(sqsError(() => attributesFromWire({ DeduplicationScope: 'messageGroup' }, 'create')).name).toBe('InvalidAttributeValue');
    expect(sqsError(() => attributesFromWire({ FifoThroughputLimit: 'perMessageGroupId' }, 'create')).name).toBe('InvalidAttributeValue');
  });
});

describe('redrivePolicyFromWire', () => {
  it('accepts a numeric maxReceiveCount and defaults it to 10', () => {
    expect(redrivePolicyFromWire('{"deadLetterTargetArn":"arn:aws:sqs:eu-west-1:123456789012:d","maxReceiveCount":2}')).toEqual({ queue: 'd', maxReceiveCount: 2 });
    expect(redrivePolicyFromWire('{"deadLetterTargetArn":"arn:aws:sqs:eu-west-1:123456789012:d"}')).toEqual({ queue: 'd', maxReceiveCount: 10 });
  });

  it('refuses malformed policies with InvalidAttributeValue', () => {
    for (const text of ['{', '[]', '"x"', '{"maxReceiveCount":1}', '{"deadLetterTargetArn":"dlq","maxReceiveCount":1}', '{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:d","maxReceiveCount":"two"}', '{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:d","maxReceiveCount":1.5}']) {
      expect(sqsError(() => redrivePolicyFromWire(text)).name, text).toBe('InvalidAttributeValue');
    }
  });
});

describe('checkAttributeNames', () => {
  it('accepts All and every SQS queue attribute, refuses others', () => {
    expect(() => checkAttributeNames(['All', ...QUEUE_ATTRIBUTE_NAMES])).not.toThrow();
    expect(sqsError(() => checkAttributeNames(['VisibilityTimeout', 'Bogus'])).name).toBe('InvalidAttributeName');
  });
});

describe('attributesToWire', () => {
  it('returns every applicable attribute for All, as strings in seconds', () => {
    const out = attributesToWire(standard, ['All'], { region: 'us-east-1' });
    expect({ ...out }).toEqual({
      QueueArn: 'arn:aws:sqs:us-east-1:000000000000:orders',
      ApproximateNumberOfMessages: '3',
      ApproximateNumberOfMessagesNotVisible: '2',
      ApproximateNumberOfMessagesDelayed: '1',
      CreatedTimestamp: '1700000000',
      LastModifiedTimestamp: '1700000100',
      VisibilityTimeout: '30',
      MaximumMessageSize: '1048576',
      MessageRetentionPeriod: '345600',
      DelaySeconds: '2',
      ReceiveMessageWaitTimeSeconds: '20',
      RedrivePolicy: '{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:orders-dlq","maxReceiveCount":5}',
    });
  });

  it('adds the FIFO attributes on a FIFO queue and leaves out retention for a keep-forever queue', () => {
    const out = attributesToWire(fifo, ['All'], { region: 'eu-west-1' });
    expect(out).toMatchObject({ FifoQueue: 'true', ContentBasedDeduplication: 'true', DeduplicationScope: 'queue', FifoThroughputLimit: 'perQueue' });
    expect(out.MessageRetentionPeriod).toBeUndefined();
    expect(out.RedrivePolicy).toBeUndefined();
  });

  it('returns only the names asked for, and nothing when none are', () => {
    expect({ ...attributesToWire(standard, ['VisibilityTimeout', 'FifoQueue', 'Policy'], { region: 'us-east-1' }) }).toEqual({ VisibilityTimeout: '30' });
    expect({ ...attributesToWire(standard, [], { region: 'us-east-1' }) }).toEqual({});
  });
});
