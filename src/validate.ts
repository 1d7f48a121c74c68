/** Validation at the edge: queue names, payloads, send options. Nothing invalid reaches storage. */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { messageOf, SpoolError } from './errors.js';

/**
 * Queue names: 1–80 characters of [A-Za-z0-9._-], except "__proto__" and names of dots only
 * ("." and ".." are path segments: a URL that names such a queue resolves to another path).
 */
export const QUEUE_NAME = /^(?!__proto__$)(?!\.+$)[A-Za-z0-9._-]{1,80}$/;

/** Throws INVALID_QUEUE_NAME unless `name` is a valid queue name. */
export function assertQueueName(name: unknown): asserts name is string {
  // "__proto__" would be a prototype, not a key, wherever queue names key a JSON object.
  if (typeof name !== 'string' || !QUEUE_NAME.test(name) || name === '__proto__') {
    const shown = typeof name === 'string' ? JSON.stringify(name.length > 100 ? `${name.slice(0, 100)}…` : name) : String(typeof name);
    throw new SpoolError(
      'INVALID_QUEUE_NAME',
      `Expected a queue name of 1–80 characters from [A-Za-z0-9._-], not dots only, got ${shown}`,
      { details: { name: typeof name === 'string' ? name.slice(0, 200) : typeof name } },
    );
  }
}

/** Names what is being checked in messages ("Payload", "Settings patch"). */
let label = 'Payload';

function invalid(path: string, reason: string, kind: PayloadProblem = 'json'): SpoolError {
  return new SpoolError('INVALID_PAYLOAD', `${label}${path} ${reason}`, { details: { path: path || '$', reason: kind } });
}

/** Why a payload was refused: `details.reason` of INVALID_PAYLOAD. */
export type PayloadProblem = 'json' | 'size' | 'charset' | 'depth' | 'unreadable' | 'empty';

/** The deepest nesting a payload may have: SQLite's JSON functions stop at 1,000 levels. */
export const MAX_PAYLOAD_DEPTH = 1000;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Serialises a payload to JSON, refusing anything that would not round-trip: undefined,
 * functions, symbols, BigInt, NaN/Infinity, circular references, lone surrogates, objects other
 * than arrays and plain objects (Dates included), nesting deeper than MAX_PAYLOAD_DEPTH, and
 * anything over `maxBytes` once serialised. A payload that cannot even be read (a throwing getter,
 * a Proxy whose traps throw) is INVALID_PAYLOAD too, never a raw error.
 */
export function serializePayload(payload: unknown, maxBytes: number, what = 'Payload'): string {
  let json: string;
  label = what;
  try {
    const plain = plainJson(payload, 0);
    if (!plain) check(payload, '', new Set(), 0);
    json = JSON.stringify(payload);
    // plainJson leaves lone surrogates to this: JSON.stringify writes each one as a \udXXX escape.
    if (plain && json.includes('\\u') && LONE_SURROGATE_ESCAPE.test(json)) check(payload, '', new Set(), 0);
  } catch (error) {
    if (error instanceof SpoolError) throw error;
    throw new SpoolError('INVALID_PAYLOAD', `${what} could not be read: ${messageOf(error)}`, { cause: error, details: { path: '$', reason: 'unreadable' } });
  } finally {
    label = 'Payload';
  }
  // A UTF-16 code unit takes at most 3 bytes in UTF-8 (a surrogate pair, 2 units, takes 4), so
  // most payloads are under the limit without counting their bytes.
  if (json.length * 3 <= maxBytes) return json;
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > maxBytes) {
    throw new SpoolError('INVALID_PAYLOAD', `${what} is ${bytes} bytes once serialised; the limit (maxPayloadBytes) is ${maxBytes}`, {
      details: { bytes, maxBytes, reason: 'size' },
    });
  }
  return json;
}

/**
 * The escape JSON.stringify writes for a lone surrogate (in a string or a key; a pair is written
 * as it is), not preceded by an escaped backslash: `"\\ud800"` is the text \ud800, not an escape.
 */
const LONE_SURROGATE_ESCAPE = /(?<!\\)(?:\\\\)*\\ud[89a-f][0-9a-f]{2}/;

/** Nesting the fast walk follows before it leaves a payload to `check`: a cycle ends it there. */
const PLAIN_DEPTH = 32;

/**
 * True when `value` is JSON that JSON.stringify renders faithfully, by the rules of `check`, lone
 * surrogates aside (serializePayload finds those in the JSON text, in one scan instead of a call
 * per string and key): the common case, answered without building the path of every value or a
 * set of the objects seen (0.5–0.8 µs of a 100-byte payload's 1.5–2.8 measured here). On false,
 * `check` walks again and names the problem. A cycle stops it at PLAIN_DEPTH, and the first
 * false ends the walk.
 */
function plainJson(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object': {
      if (value === null) return true;
      if (depth >= PLAIN_DEPTH || 'toJSON' in value) return false;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) if (!(i in value) || !plainJson(value[i], depth + 1)) return false;
        return true;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return false;
      for (const key of Object.keys(value)) {
        if (!plainJson((value as Record<string, unknown>)[key], depth + 1)) return false;
      }
      return Object.getOwnPropertySymbols(value).length === 0;
    }
    default:
      return false;
  }
}

function check(value: unknown, path: string, seen: Set<object>, depth: number): void {
  switch (typeof value) {
    case 'string':
      if (LONE_SURROGATE.test(value)) throw invalid(path, 'contains a lone UTF-16 surrogate, which JSON cannot carry faithfully', 'charset');
      return;
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value)) throw invalid(path, `is ${String(value)}, which JSON cannot represent`);
      return;
    case 'undefined':
      throw invalid(path, 'is undefined, which JSON cannot represent');
    case 'function':
      throw invalid(path, 'is a function, which JSON cannot represent');
    case 'symbol':
      throw invalid(path, 'is a symbol, which JSON cannot represent');
    case 'bigint':
      throw invalid(path, 'is a BigInt, which JSON cannot represent');
    case 'object': {
      if (value === null) return;
      if (depth >= MAX_PAYLOAD_DEPTH) {
        throw invalid(shorten(path), `nests deeper than ${MAX_PAYLOAD_DEPTH} levels, the most SQLite's JSON functions read`, 'depth');
      }
      if (seen.has(value)) throw invalid(path, 'is circular');
      const proto = Object.getPrototypeOf(value);
      if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) {
        throw invalid(path, `is a ${proto?.constructor?.name ?? 'non-plain object'}, not a plain JSON object`);
      }
      if ('toJSON' in value && typeof (value as { toJSON: unknown }).toJSON === 'function') {
        throw invalid(path, 'has a toJSON method; send the plain value instead');
      }
      seen.add(value);
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          if (!(i in value)) throw invalid(`${path}[${i}]`, 'is a hole in a sparse array, which JSON turns into null');
          check(value[i], `${path}[${i}]`, seen, depth + 1);
        }
      } else {
        for (const key of Object.keys(value)) {
          if (LONE_SURROGATE.test(key)) throw invalid(path, `has a key with a lone UTF-16 surrogate`, 'charset');
          check((value as Record<string, unknown>)[key], `${path}.${key}`, seen, depth + 1);
        }
        if (Object.getOwnPropertySymbols(value).length > 0) throw invalid(path, 'has symbol keys, which JSON drops');
      }
      seen.delete(value);
      return;
    }
  }
}

/** A path 1,000 levels deep is unreadable in a message: keep its start and end. */
function shorten(path: string): string {
  return path.length > 120 ? `${path.slice(0, 40)}…${path.slice(-40)}` : path;
}

/** JSON with object keys sorted, so equal payloads give equal text (content dedup). */
export function canonicalJson(json: string): string {
  return JSON.stringify(sortKeys(JSON.parse(json)));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    // No prototype: an own "__proto__" key (JSON.parse makes one) must stay data, not set a prototype.
    const out: Record<string, unknown> = Object.create(null);
    for (const key of Object.keys(value).sort()) out[key] = sortKeys((value as Record<string, unknown>)[key]);
    return out;
  }
  return value;
}

/** The dedupe key for content dedup: a hash of the canonical JSON. */
export function contentKey(json: string): string {
  return `content:${createHash('sha256').update(canonicalJson(json)).digest('base64url')}`;
}

/** The latest time a Date can hold, ms since the epoch (8.64e15: year 275760). */
export const MAX_DATE_MS = 8_640_000_000_000_000;

/** Options of `send()` and `sendBatch()`. */
export const sendOptionsSchema = z
  .strictObject({
    delayMs: z.number().int().min(0).max(10 * 365 * 86_400_000).optional(),
    runAt: z.union([z.date(), z.number().int().min(0).max(MAX_DATE_MS)]).optional(),
    priority: z.number().int().min(-1_000_000).max(1_000_000).optional(),
    key: z.string().min(1).max(512).optional(),
    /** Message group: in send order, one at a time per group (SQS MessageGroupId). */
    group: z.string().min(1).max(128).optional(),
    /**
     * SQS message attributes, checked in queues/message-attributes.ts. Passed through as given: a
     * z.record copies into a plain object, where an attribute named __proto__ would vanish.
     */
    attributes: z
      .custom<Record<string, unknown>>((v) => v !== null && typeof v === 'object' && !Array.isArray(v), { message: 'expected an object of name → { type, value }' })
      .optional(),
    /** Refuse (QUEUE_NOT_FOUND) a queue that queues.create did not make, instead of creating a push queue. */
    mustExist: z.boolean().optional(),
  })
  .refine((o) => o.delayMs === undefined || o.runAt === undefined, { message: 'give delayMs or runAt, not both' });

/** Parsed send options. */
export type SendOptions = z.infer<typeof sendOptionsSchema>;

/** Validates send options, throwing INVALID_ARGUMENT with the path and reason. */
export function parseSendOptions(options: unknown): SendOptions {
  // The common case (no options) needs no schema run.
  if (options === undefined) return {};
  const result = sendOptionsSchema.safeParse(options ?? {});
  if (!result.success) throw new SpoolError('INVALID_ARGUMENT', `Invalid send options: ${describeZod(result.error)}`, { cause: result.error });
  return result.data;
}

/** One line per zod issue: `path: reason`. */
export function describeZod(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length ? issue.path.map(String).join('.') : '(root)'}: ${issue.message}`)
    .join('; ');
}

/** Throws INVALID_ARGUMENT unless `signal` is undefined or an AbortSignal. */
export function assertSignal(signal: unknown): asserts signal is AbortSignal | undefined {
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new SpoolError('INVALID_ARGUMENT', `signal must be an AbortSignal, got ${signal === null ? 'null' : typeof signal}`, { details: { field: 'signal' } });
  }
}

/**
 * Runs `read` over a caller's input: what it throws that is not a SpoolError (a throwing getter,
 * a Proxy's trap) is the input's fault, INVALID_ARGUMENT, not the storage's or a raw error.
 */
export function readInput<T>(what: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof SpoolError) throw error;
    throw new SpoolError('INVALID_ARGUMENT', `${what} could not be read: ${messageOf(error)}`, { cause: error });
  }
}
