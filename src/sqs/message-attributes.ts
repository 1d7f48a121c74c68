/**
 * What a received message carries on the wire besides its body: the message attributes the
 * receive asked for (with their MD5 over that subset) and the system attributes it asked for.
 */
import type { MessageAttribute, ReceivedMessage } from './backend.js';
import { DEFAULT_ACCOUNT_ID, queueArn } from './queue-url.js';

/** A message attribute as the wire carries it; BinaryValue is base64 text. */
export interface WireMessageAttribute {
  DataType: string;
  StringValue?: string;
  BinaryValue?: string;
}

/**
 * The attributes matching `MessageAttributeNames`: `All` or `.*` selects every one, `prefix.*`
 * those whose name starts with `prefix.`, anything else that exact name.
 */
export function selectMessageAttributes(
  attributes: Readonly<Record<string, MessageAttribute>>,
  names: readonly string[],
): Record<string, MessageAttribute> {
  const selected = Object.create(null) as Record<string, MessageAttribute>;
  if (names.length === 0) return selected;
  const all = names.includes('All') || names.includes('.*');
  const prefixes = names.filter((n) => n.endsWith('.*') && n !== '.*').map((n) => n.slice(0, -1));
  for (const [name, attribute] of Object.entries(attributes)) {
    if (all || names.includes(name) || prefixes.some((prefix) => name.startsWith(prefix))) selected[name] = attribute;
  }
  return selected;
}

/** Library attributes → the wire's `MessageAttributes` map. */
export function messageAttributesToWire(attributes: Readonly<Record<string, MessageAttribute>>): Record<string, WireMessageAttribute> {
  const out = Object.create(null) as Record<string, WireMessageAttribute>;
  for (const [name, { type, value }] of Object.entries(attributes)) {
    out[name] = typeof value === 'string' ? { DataType: type, StringValue: value } : { DataType: type, BinaryValue: Buffer.from(value).toString('base64') };
  }
  return out;
}

/** The system attribute names ReceiveMessage knows; others are ignored, as newer SQS names may appear. */
export const SYSTEM_ATTRIBUTE_NAMES: readonly string[] = [
  'SenderId',
  'SentTimestamp',
  'ApproximateReceiveCount',
  'ApproximateFirstReceiveTimestamp',
  'SequenceNumber',
  'MessageDeduplicationId',
  'MessageGroupId',
  'DeadLetterQueueSourceArn',
];

/** Context for system attribute values. */
export interface SystemAttributeContext {
  region: string;
  accountId?: string;
  /** The receiving queue is FIFO (SequenceNumber applies). */
  fifo: boolean;
}

/** A FIFO `SequenceNumber`: the library's per-queue sequence, zero-padded to 20 digits. */
export function sequenceNumber(sequence: number): string {
  return String(sequence).padStart(20, '0');
}

/**
 * The system attributes asked for (`All` for every one that applies). Timestamps are epoch ms, as
 * in SQS. `AWSTraceHeader` is never returned: Spool does not store it.
 */
export function systemAttributes(message: ReceivedMessage, names: readonly string[], context: SystemAttributeContext): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  if (names.length === 0) return out;
  const all = names.includes('All');
  const account = context.accountId ?? DEFAULT_ACCOUNT_ID;
  const values: Record<string, string | undefined> = {
    SenderId: account,
    SentTimestamp: String(message.sentAt),
    ApproximateReceiveCount: String(message.receiveCount),
    ApproximateFirstReceiveTimestamp: String(message.firstReceivedAt),
    SequenceNumber: context.fifo ? sequenceNumber(message.sequence) : undefined,
    MessageDeduplicationId: message.dedupeId,
    MessageGroupId: message.group,
    DeadLetterQueueSourceArn: message.sourceQueue === undefined ? undefined : queueArn(context.region, message.sourceQueue, account),
  };
  for (const name of SYSTEM_ATTRIBUTE_NAMES) {
    const value = values[name];
    if (value !== undefined && (all || names.includes(name))) out[name] = value;
  }
  return out;
}

/** UTF-8 bytes SQS counts for a message: body plus attribute names, types and values. */
export function messageSize(body: string, attributes: Readonly<Record<string, MessageAttribute>>): number {
  let size = Buffer.byteLength(body, 'utf8');
  for (const [name, { type, value }] of Object.entries(attributes)) {
    size += Buffer.byteLength(name, 'utf8') + Buffer.byteLength(type, 'utf8') + (typeof value === 'string' ? Buffer.byteLength(value, 'utf8') : value.byteLength);
  }
  return size;
}
