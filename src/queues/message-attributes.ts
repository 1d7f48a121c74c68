/**
 * SQS message attributes (`send(queue, body, { attributes })`): validated as SQS validates them,
 * stored as JSON with the message, and counted toward the queue's size limit. Also the other SQS
 * rules the library checks so that its API and the SQS wire cannot disagree: the body's size and
 * character set on an SQS queue, and FIFO ids.
 */
import { SpoolError } from '../errors.js';
import { isPlainPrototype } from '../plain-object.js';

/** One attribute: a String, Number or Binary type (optionally with a `.suffix`) and its value. */
export interface MessageAttribute {
  type: string;
  value: string | Uint8Array;
}

/** Name → attribute. */
export type MessageAttributes = Record<string, MessageAttribute>;

/** At most this many attributes per message. */
export const MAX_ATTRIBUTES = 10;
const NAME = /^[A-Za-z0-9_.-]{1,256}$/;
const TYPE = /^(String|Number|Binary)(\.[^\s]{1,255})?$/;
// SQS's allowed characters: #x9 #xA #xD #x20–#xD7FF #xE000–#xFFFD #x10000–#x10FFFF.
const OUTSIDE_SQS_CHARSET = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;
/** A Number attribute's value: a decimal number, as SQS reads it (no hex, binary or blanks, which Number() takes). */
const DECIMAL = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;
/** FIFO message group and deduplication ids: 1–128 alphanumerics and punctuation. */
const FIFO_ID = /^[\x21-\x7E]{1,128}$/;

function invalid(message: string, details: Record<string, unknown>): SpoolError {
  return new SpoolError('INVALID_ARGUMENT', message, { details });
}

/** The refusal of attributes that are not a plain object of name → { type, value }. */
const ATTRIBUTES_NOT_PLAIN = 'attributes must be a plain object of name → { type, value } (not a Map, an array or a class instance)';

/**
 * True for a plain object (see plain-object.ts): a Map's entries, or a class
 * instance's accessors, are no own enumerable properties and would be dropped without a word.
 */
export function isPlainAttributes(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  return isPlainPrototype(Object.getPrototypeOf(value));
}

/** Checks attributes as SQS does; returns their size in bytes (names, types and values). */
export function checkAttributes(attributes: unknown): { attributes: MessageAttributes; bytes: number } {
  if (!isPlainAttributes(attributes)) throw invalid(ATTRIBUTES_NOT_PLAIN, { field: 'attributes' });
  const entries = Object.entries(attributes as Record<string, unknown>);
  if (entries.length > MAX_ATTRIBUTES) throw invalid(`A message has at most ${MAX_ATTRIBUTES} attributes, got ${entries.length}`, { field: 'attributes', max: MAX_ATTRIBUTES, value: entries.length });
  let bytes = 0;
  const out: MessageAttributes = Object.create(null);
  for (const [name, raw] of entries) {
    if (!NAME.test(name) || name.startsWith('.') || name.endsWith('.') || name.includes('..')) {
      throw invalid(`Attribute name ${JSON.stringify(name.slice(0, 300))} is not 1–256 characters of [A-Za-z0-9_.-] without leading, trailing or doubled dots`, { field: 'attributes', name });
    }
    if (/^(aws|amazon)\./i.test(name)) throw invalid(`Attribute name ${JSON.stringify(name)} must not start with AWS. or Amazon.`, { field: 'attributes', name });
    const attribute = raw as { type?: unknown; value?: unknown } | null;
    if (attribute === null || typeof attribute !== 'object' || typeof attribute.type !== 'string' || !TYPE.test(attribute.type)) {
      throw invalid(`Attribute ${name} needs a type of String, Number or Binary (optionally with a .suffix)`, { field: 'attributes', name });
    }
    const type = attribute.type;
    const binary = type.startsWith('Binary');
    const value = attribute.value;
    if (binary ? !(value instanceof Uint8Array) : typeof value !== 'string') {
      throw invalid(`Attribute ${name} of type ${type} needs a ${binary ? 'Uint8Array' : 'string'} value`, { field: 'attributes', name });
    }
    const size = binary ? (value as Uint8Array).byteLength : Buffer.byteLength(value as string, 'utf8');
    if (size === 0) throw invalid(`Attribute ${name} has an empty value`, { field: 'attributes', name });
    if (!binary && OUTSIDE_SQS_CHARSET.test(value as string)) throw invalid(`Attribute ${name} has characters SQS does not allow`, { field: 'attributes', name });
    if (type.startsWith('Number') && (!DECIMAL.test(value as string) || !Number.isFinite(Number(value)))) {
      throw invalid(`Attribute ${name} is a Number but ${JSON.stringify((value as string).slice(0, 100))} is not a decimal number`, { field: 'attributes', name });
    }
    bytes += Buffer.byteLength(name, 'utf8') + Buffer.byteLength(type, 'utf8') + size;
    out[name] = { type, value: binary ? Uint8Array.from(value as Uint8Array) : (value as string) };
  }
  return { attributes: out, bytes };
}

/** Attributes as stored (JSON: binary values base64). */
export function encodeAttributes(attributes: MessageAttributes): string {
  // Without a prototype: an attribute named __proto__ (a valid SQS name) stays a key.
  const stored = Object.create(null) as Record<string, { t: string; s?: string; b?: string }>;
  for (const [name, a] of Object.entries(attributes)) {
    stored[name] = typeof a.value === 'string' ? { t: a.type, s: a.value } : { t: a.type, b: Buffer.from(a.value).toString('base64') };
  }
  return JSON.stringify(stored);
}

/** Stored attributes back (binary values as Buffers). */
export function decodeAttributes(text: string | null): MessageAttributes {
  const out = Object.create(null) as MessageAttributes;
  if (text === null) return out;
  for (const [name, a] of Object.entries(JSON.parse(text) as Record<string, { t: string; s?: string; b?: string }>)) {
    out[name] = { type: a.t, value: a.b !== undefined ? Buffer.from(a.b, 'base64') : (a.s ?? '') };
  }
  return out;
}

/** The size SQS counts for a body: a string's UTF-8 bytes, or any other value's JSON. */
export function bodyBytes(body: unknown, json: string): number {
  return typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : Buffer.byteLength(json, 'utf8');
}

/**
 * A body against its queue's own rules, as `send()` and a schedule's tick apply them: SQS's
 * character set on an SQS queue, and the size SQS counts (the body as sent plus `attributeBytes`)
 * against `limit`, the queue's maxPayloadBytes (or the spool-wide one). Throws INVALID_PAYLOAD.
 */
export function checkQueueBody(queue: string, body: unknown, json: string, rules: { sqs: boolean; limit: number; attributeBytes: number }): void {
  if (rules.sqs) {
    checkSqsCharset(body);
    // SQS's minimum body is one character: a receive over the wire never returns an empty one.
    if (body === '') throw new SpoolError('INVALID_PAYLOAD', `A message body on SQS queue "${queue}" must be at least one character`, { details: { path: '$', reason: 'empty' } });
  }
  const bytes = bodyBytes(body, json) + rules.attributeBytes;
  if (bytes > rules.limit) {
    throw new SpoolError('INVALID_PAYLOAD', `Payload${rules.attributeBytes > 0 ? ' and attributes are' : ' is'} ${bytes} bytes; queue "${queue}" takes at most ${rules.limit} (maxPayloadBytes)`, {
      details: { bytes, maxBytes: rules.limit, reason: 'size' },
    });
  }
}

/** Refuses a string body with characters outside SQS's set (INVALID_PAYLOAD, reason charset). */
export function checkSqsCharset(body: unknown): void {
  if (typeof body === 'string' && OUTSIDE_SQS_CHARSET.test(body)) {
    throw new SpoolError('INVALID_PAYLOAD', 'Payload has characters SQS does not allow in a message body (#x9, #xA, #xD, #x20–#xD7FF, #xE000–#xFFFD, #x10000–#x10FFFF)', {
      details: { path: '$', reason: 'charset' },
    });
  }
}

/** Checks a FIFO message group or deduplication id. */
export function checkFifoId(value: string, field: 'group' | 'key'): void {
  if (!FIFO_ID.test(value)) throw invalid(`${field} must be 1–128 characters of alphanumerics and punctuation, got ${JSON.stringify(value.slice(0, 140))}`, { field, value: value.slice(0, 140) });
}
