/**
 * Queue attributes between the wire (string values, seconds, `RedrivePolicy` as JSON text) and the
 * library (`QueueAttributes`: numbers in ms, `deadLetter` as an object).
 *
 * Only the wire's own questions are answered here: is the name an SQS attribute, is the value a
 * number or a boolean at all, does the RedrivePolicy parse. Ranges, FIFO rules and whether a
 * dead-letter queue exists are the library's, so the API and the wire agree on them.
 */
import type { QueueAttributes, QueueInfo } from './backend.js';
import { SqsError, invalidParameter } from './errors.js';
import { DEFAULT_ACCOUNT_ID, parseQueueArn, queueArn } from './queue-url.js';
import type { StringMap } from './requests.js';

type Writable = Partial<QueueAttributes>;

/** Durations that are seconds on the wire and ms in the library. */
const SECONDS: Readonly<Record<string, 'visibilityTimeoutMs' | 'delayMs' | 'receiveWaitMs' | 'retentionMs'>> = {
  VisibilityTimeout: 'visibilityTimeoutMs',
  DelaySeconds: 'delayMs',
  ReceiveMessageWaitTimeSeconds: 'receiveWaitMs',
  MessageRetentionPeriod: 'retentionMs',
};

/** SQS attributes Spool accepts and ignores: access policies and encryption settings have no local meaning. */
export const IGNORED_ATTRIBUTES: readonly string[] = ['Policy', 'RedriveAllowPolicy', 'KmsMasterKeyId', 'KmsDataKeyReusePeriodSeconds', 'SqsManagedSseEnabled'];

/** FIFO settings that exist in SQS, with the one value Spool implements (dedupe and throughput per queue). */
const FIXED_FIFO_ATTRIBUTES: Readonly<Record<string, string>> = { DeduplicationScope: 'queue', FifoThroughputLimit: 'perQueue' };

/** Read-only attributes: valid in GetQueueAttributes, refused by Create/SetQueueAttributes. */
const COMPUTED_ATTRIBUTES: readonly string[] = [
  'QueueArn',
  'ApproximateNumberOfMessages',
  'ApproximateNumberOfMessagesNotVisible',
  'ApproximateNumberOfMessagesDelayed',
  'CreatedTimestamp',
  'LastModifiedTimestamp',
];

/** Every name GetQueueAttributes accepts, in the order `All` returns them. */
export const QUEUE_ATTRIBUTE_NAMES: readonly string[] = [
  ...COMPUTED_ATTRIBUTES,
  'VisibilityTimeout',
  'MaximumMessageSize',
  'MessageRetentionPeriod',
  'DelaySeconds',
  'ReceiveMessageWaitTimeSeconds',
  'RedrivePolicy',
  'FifoQueue',
  'ContentBasedDeduplication',
  'DeduplicationScope',
  'FifoThroughputLimit',
  ...IGNORED_ATTRIBUTES,
];

/**
 * Wire attributes → a library patch. `create` accepts `FifoQueue`; `update` refuses it, since a
 * queue's kind never changes. Unknown names are `InvalidAttributeName`, values that are not
 * numbers or booleans (or a RedrivePolicy that does not parse) `InvalidAttributeValue`.
 */
export function attributesFromWire(attributes: StringMap, mode: 'create' | 'update'): Writable {
  const patch: Writable = {};
  for (const [name, value] of Object.entries(attributes)) {
    // Own keys only: `toString` or `constructor` must be an unknown name, not an inherited member.
    const field = Object.hasOwn(SECONDS, name) ? SECONDS[name] : undefined;
    if (field !== undefined) patch[field] = integer(name, value) * 1000;
    else if (name === 'MaximumMessageSize') patch.maxPayloadBytes = integer(name, value);
    else if (name === 'RedrivePolicy') patch.deadLetter = redrivePolicyFromWire(value);
    else if (name === 'ContentBasedDeduplication') patch.contentDedupe = boolean(name, value);
    else if (name === 'FifoQueue') {
      if (mode === 'update') throw new SqsError('InvalidAttributeName', 'FifoQueue can only be set when the queue is created.');
      patch.fifo = boolean(name, value);
    }
    else if (Object.hasOwn(FIXED_FIFO_ATTRIBUTES, name)) {
      if (value !== FIXED_FIFO_ATTRIBUTES[name]) {
        throw invalidParameter(name, value, `Spool supports only ${FIXED_FIFO_ATTRIBUTES[name]}.`, 'InvalidAttributeValue');
      }
    } else if (COMPUTED_ATTRIBUTES.includes(name)) {
      throw new SqsError('InvalidAttributeName', `${name} is read-only.`);
    } else if (!IGNORED_ATTRIBUTES.includes(name)) {
      throw new SqsError('InvalidAttributeName', `Unknown Attribute ${JSON.stringify(name.slice(0, 100))}.`);
    }
  }
  return patch;
}

/** Checks GetQueueAttributes `AttributeNames`: each must be `All` or an SQS queue attribute. */
export function checkAttributeNames(names: readonly string[]): void {
  for (const name of names) {
    if (name !== 'All' && !QUEUE_ATTRIBUTE_NAMES.includes(name)) {
      throw new SqsError('InvalidAttributeName', `Unknown Attribute ${JSON.stringify(name.slice(0, 100))}.`);
    }
  }
}

/** Where ARNs point: region and account of this endpoint. */
export interface ArnContext {
  region: string;
  accountId?: string;
}

/**
 * The requested attributes of a queue, as SQS strings: durations in seconds (ms rounded up, so a
 * sub-second library value never reads as 0), timestamps in epoch seconds. No names → none.
 * Attributes that do not apply (FIFO ones on a standard queue, RedrivePolicy without a dead-letter
 * queue, retention on a keep-forever queue, ignored ones) are left out.
 */
export function attributesToWire(info: QueueInfo, names: readonly string[], arn: ArnContext): StringMap {
  const wanted = names.includes('All') ? QUEUE_ATTRIBUTE_NAMES : names;
  const a = info.attributes;
  const out: StringMap = Object.create(null) as StringMap;
  const account = arn.accountId ?? DEFAULT_ACCOUNT_ID;
  for (const name of QUEUE_ATTRIBUTE_NAMES) {
    if (!wanted.includes(name)) continue;
    const value = ((): string | undefined => {
      switch (name) {
        case 'QueueArn':
          return queueArn(arn.region, info.name, account);
        case 'ApproximateNumberOfMessages':
          return String(info.counts.visible);
        case 'ApproximateNumberOfMessagesNotVisible':
          return String(info.counts.inFlight);
        case 'ApproximateNumberOfMessagesDelayed':
          return String(info.counts.delayed);
        case 'CreatedTimestamp':
          return String(Math.floor(info.createdAt / 1000));
        case 'LastModifiedTimestamp':
          return String(Math.floor(info.updatedAt / 1000));
        case 'VisibilityTimeout':
          return seconds(a.visibilityTimeoutMs);
        case 'MaximumMessageSize':
          return String(a.maxPayloadBytes);
        case 'MessageRetentionPeriod':
          return a.retentionMs === null ? undefined : seconds(a.retentionMs);
        case 'DelaySeconds':
          return seconds(a.delayMs);
        case 'ReceiveMessageWaitTimeSeconds':
          return seconds(a.receiveWaitMs);
        case 'RedrivePolicy':
          return a.deadLetter === null
            ? undefined
            : JSON.stringify({ deadLetterTargetArn: queueArn(arn.region, a.deadLetter.queue, account), maxReceiveCount: a.deadLetter.maxReceiveCount });
        case 'FifoQueue':
          return info.fifo ? 'true' : undefined;
        case 'ContentBasedDeduplication':
          return info.fifo ? String(a.contentDedupe) : undefined;
        default:
          return info.fifo ? FIXED_FIFO_ATTRIBUTES[name] : undefined;
      }
    })();
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** `RedrivePolicy` text → `deadLetter`; an empty string removes the policy, as in SQS. */
export function redrivePolicyFromWire(text: string): QueueAttributes['deadLetter'] {
  if (text.trim() === '') return null;
  let policy: unknown;
  try {
    policy = JSON.parse(text);
  } catch {
    throw invalidParameter('RedrivePolicy', text, 'Redrive policy is not a valid JSON map.', 'InvalidAttributeValue');
  }
  if (typeof policy !== 'object' || policy === null || Array.isArray(policy)) {
    throw invalidParameter('RedrivePolicy', text, 'Redrive policy is not a valid JSON map.', 'InvalidAttributeValue');
  }
  const { deadLetterTargetArn, maxReceiveCount } = policy as Record<string, unknown>;
  const queue = typeof deadLetterTargetArn === 'string' ? parseQueueArn(deadLetterTargetArn) : undefined;
  if (queue === undefined) {
    throw invalidParameter('RedrivePolicy', text, 'deadLetterTargetArn must be an SQS queue ARN.', 'InvalidAttributeValue');
  }
  // SQS accepts the count as a number or a numeric string; 10 when absent.
  const count =
    maxReceiveCount === undefined
      ? 10
      : typeof maxReceiveCount === 'number'
        ? maxReceiveCount
        : typeof maxReceiveCount === 'string' && /^-?\d+$/.test(maxReceiveCount)
          ? Number(maxReceiveCount)
          : Number.NaN;
  if (!Number.isSafeInteger(count)) {
    throw invalidParameter('RedrivePolicy', text, 'maxReceiveCount must be an integer.', 'InvalidAttributeValue');
  }
  return { queue, maxReceiveCount: count };
}

function integer(name: string, value: string): number {
  if (!/^-?\d{1,15}$/.test(value.trim())) throw invalidParameter(name, value, 'It must be an integer.', 'InvalidAttributeValue');
  return Number(value.trim());
}

function boolean(name: string, value: string): boolean {
  const text = value.trim().toLowerCase();
  if (text === 'true') return true;
  if (text === 'false') return false;
  throw invalidParameter(name, value, 'It must be true or false.', 'InvalidAttributeValue');
}

function seconds(ms: number): string {
  return String(Math.ceil(ms / 1000));
}
