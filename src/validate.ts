/** Validation at the edge: queue names, payloads, send options. Nothing invalid reaches storage. */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { MAX_DELAY_MS, messageOf, SpoolError } from './errors.js';
import { isPlainPrototype } from './plain-object.js';
import { isPlainAttributes } from './queues/message-attributes.js';

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

/** Why a payload was refused: `details.reason` of INVALID_PAYLOAD. */
export type PayloadProblem = 'json' | 'size' | 'charset' | 'depth' | 'unreadable' | 'empty';

/** The deepest nesting a payload may have: SQLite's JSON functions stop at 1,000 levels. */
export const MAX_PAYLOAD_DEPTH = 1000;

/**
 * Serialises a payload to JSON, refusing anything that would not round-trip: undefined,
 * functions, symbols, BigInt, NaN/Infinity, circular references, lone surrogates, objects other
 * than arrays and plain objects (Dates included), nesting deeper than MAX_PAYLOAD_DEPTH, and
 * anything over `maxBytes` once serialised. A payload that cannot even be read (a throwing getter,
 * a Proxy whose traps throw) is INVALID_PAYLOAD too, never a raw error.
 */
export function serializePayload(payload: unknown, maxBytes: number, what = 'Payload'): string {
  // A getter that sends a payload of its own runs inside this walk: it takes a new one.
  const walk = idleWalk ?? new Walk();
  idleWalk = undefined;
  walk.what = what;
  let json: string;
  try {
    json = writeJson(walk, payload);
  } catch (error) {
    if (error instanceof SpoolError) throw error;
    throw new SpoolError('INVALID_PAYLOAD', `${what} could not be read: ${messageOf(error)}`, { cause: error, details: { path: '$', reason: 'unreadable' } });
  } finally {
    walk.clear();
    idleWalk = walk;
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
 * JSON.stringify writes a copy of the payload, never the payload itself: each property is read
 * once, so a getter or a Proxy's trap that answered one way to the checks and another to
 * JSON.stringify cannot have its second answer stored.
 */
function writeJson(walk: Walk, payload: unknown): string {
  const copy = copyOf(walk, payload, 0);
  const json = JSON.stringify(copy);
  // The copy leaves lone surrogates to this: JSON.stringify writes each one as a \udXXX escape,
  // found in one scan of the text instead of a regex per string and key.
  if (json.includes('\\u') && LONE_SURROGATE_ESCAPE.test(json)) throw loneSurrogate(walk, copy, 0) ?? walk.invalid(0, LONE_SURROGATE_REASON, 'charset');
  return json;
}

/**
 * Levels whose objects the cycle check compares one by one; deeper ones go in a Set. Payloads are
 * mostly a few levels deep, where a scan costs less than a Set's add, has and delete.
 */
const SCANNED_LEVELS = 32;

/** The walk the next serialisation takes, unless one is under way. */
let idleWalk: Walk | undefined;

/**
 * One serialisation's walk: the path to the current value, for an error, and the objects on it.
 * Kept between calls: making one took about 30 ns of the 450 a 100-byte payload took here.
 */
class Walk {
  what = 'Payload';
  /** The key or index taken at each level down to the current value. */
  readonly keys: (string | number)[] = [];
  /** The objects on the path, at its first SCANNED_LEVELS levels. */
  readonly above: (object | undefined)[] = [];
  /** The objects on the path below SCANNED_LEVELS levels. */
  private deep: Set<object> | undefined;

  /** Lets go of the last payload's objects, so that a kept walk holds none of them. */
  clear(): void {
    for (let i = 0; i < this.above.length && this.above[i] !== undefined; i++) this.above[i] = undefined;
    this.deep = undefined;
  }

  /** The INVALID_PAYLOAD error for the value at `depth` on the current path. */
  invalid(depth: number, reason: string, kind: PayloadProblem = 'json'): SpoolError {
    let path = '';
    for (let i = 0; i < depth; i++) {
      const key = this.keys[i];
      path += typeof key === 'number' ? `[${key}]` : `.${key}`;
    }
    if (kind === 'depth') path = shorten(path);
    return new SpoolError('INVALID_PAYLOAD', `${this.what}${path} ${reason}`, { details: { path: path || '$', reason: kind } });
  }

  /** True when `value` is already on the path above `depth`: reaching it again is a cycle. */
  onPath(value: object, depth: number): boolean {
    const scanned = Math.min(depth, SCANNED_LEVELS);
    for (let i = 0; i < scanned; i++) if (this.above[i] === value) return true;
    return depth > SCANNED_LEVELS && this.deep!.has(value);
  }

  enter(value: object, depth: number): void {
    if (depth < SCANNED_LEVELS) this.above[depth] = value;
    else (this.deep ??= new Set()).add(value);
  }

  leave(value: object, depth: number): void {
    if (depth >= SCANNED_LEVELS) this.deep!.delete(value);
  }
}

/** True for the values JSON writes as they are: the common case, answered before anything else. */
function isScalar(value: unknown): boolean {
  return typeof value === 'string' || typeof value === 'boolean' || value === null || Number.isFinite(value);
}

/**
 * A copy of `value`, at `depth` on the walk's path: plain objects, arrays and the scalars read from
 * it, each property read once; or the error that names why it is not JSON.
 */
function copyOf(walk: Walk, value: unknown, depth: number): unknown {
  switch (typeof value) {
    case 'object':
      return value === null ? null : copyObject(walk, value, depth);
    case 'number':
      if (!Number.isFinite(value)) throw walk.invalid(depth, `is ${String(value)}, which JSON cannot represent`);
      return value;
    case 'undefined':
      throw walk.invalid(depth, 'is undefined, which JSON cannot represent');
    case 'function':
      throw walk.invalid(depth, 'is a function, which JSON cannot represent');
    case 'symbol':
      throw walk.invalid(depth, 'is a symbol, which JSON cannot represent');
    case 'bigint':
      throw walk.invalid(depth, 'is a BigInt, which JSON cannot represent');
    default:
      return value;
  }
}

function copyObject(walk: Walk, value: object, depth: number): object {
  if (depth >= MAX_PAYLOAD_DEPTH) {
    throw walk.invalid(depth, `nests deeper than ${MAX_PAYLOAD_DEPTH} levels, the most SQLite's JSON functions read`, 'depth');
  }
  if (walk.onPath(value, depth)) throw walk.invalid(depth, 'is circular');
  walk.enter(value, depth);
  const copy = Array.isArray(value) ? copyArray(walk, value, depth) : copyProperties(walk, value, depth);
  walk.leave(value, depth);
  return copy;
}

function copyArray(walk: Walk, array: unknown[], depth: number): unknown[] {
  if ('toJSON' in array) refuseToJSON(walk, array.toJSON, depth);
  // Read once: a Proxy's length could change between reads.
  const length = array.length;
  const copy: unknown[] = [];
  for (let i = 0; i < length; i++) {
    if (!(i in array)) {
      walk.keys[depth] = i;
      throw walk.invalid(depth + 1, 'is a hole in a sparse array, which JSON turns into null');
    }
    let item = array[i];
    if (!isScalar(item)) {
      walk.keys[depth] = i;
      item = copyOf(walk, item, depth + 1);
    }
    copy.push(item);
  }
  // JSON writes an array's indices only: a named property or a symbol key would be lost without a
  // word. Object.keys also lists the indices, so a count above the length is a named property.
  if (Object.keys(array).length !== length) throw walk.invalid(depth, 'is an array with named (non-index) properties, which JSON drops');
  if (Object.getOwnPropertySymbols(array).length > 0) throw walk.invalid(depth, 'has symbol keys, which JSON drops');
  return copy;
}

function copyProperties(walk: Walk, object: object, depth: number): Record<string, unknown> {
  const proto: unknown = Object.getPrototypeOf(object);
  if (proto !== Object.prototype && !isPlainPrototype(proto)) {
    const name = (proto as { constructor?: { name?: string } } | undefined)?.constructor?.name;
    throw walk.invalid(depth, `is a ${name ?? 'non-plain object'}, not a plain JSON object`);
  }
  // Spread reads each own enumerable property once (a getter's value becomes data) and keeps an own
  // "__proto__" a key; from here on, only the copy is read. It is the fastest copy of an object V8
  // keeps in fast mode, the common case. One in dictionary mode (given keys one by one past about
  // 16, or a key deleted) takes 2–3 times what JSON.stringify alone took; copying key by key would
  // spare it at the fast ones' cost (such copies fall into dictionary mode), and nothing cheap tells
  // the two apart.
  const copy: Record<string, unknown> = { ...object };
  // An own enumerable toJSON was read into the copy; any other is read from the payload. A copy of a
  // null-prototype object inherits Object.prototype's, which JSON.stringify would call as well.
  if ('toJSON' in object) refuseToJSON(walk, Object.hasOwn(copy, 'toJSON') ? copy.toJSON : (object as { toJSON: unknown }).toJSON, depth);
  else if (proto === null) refuseToJSON(walk, copy.toJSON, depth);
  for (const key in copy) {
    const item = copy[key];
    // for…in also yields Object.prototype's enumerable keys, which only a polluted one has.
    if (isScalar(item) || !Object.hasOwn(copy, key)) continue;
    walk.keys[depth] = key;
    copy[key] = copyOf(walk, item, depth + 1);
  }
  if (Object.getOwnPropertySymbols(object).length > 0) throw walk.invalid(depth, 'has symbol keys, which JSON drops');
  return copy;
}

/** JSON.stringify would write what a toJSON method returns, unchecked: refuse one. */
function refuseToJSON(walk: Walk, toJSON: unknown, depth: number): void {
  if (typeof toJSON === 'function') throw walk.invalid(depth, 'has a toJSON method; send the plain value instead');
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const LONE_SURROGATE_REASON = 'contains a lone UTF-16 surrogate, which JSON cannot carry faithfully';

/**
 * The escape JSON.stringify writes for a lone surrogate (in a string or a key; a pair is written
 * as it is), not preceded by an escaped backslash: `"\\ud800"` is the text \ud800, not an escape.
 */
const LONE_SURROGATE_ESCAPE = /(?<!\\)(?:\\\\)*\\ud[89a-f][0-9a-f]{2}/;

/** The error naming the first lone surrogate in `copy` (which is ours: reading it again is safe). */
function loneSurrogate(walk: Walk, copy: unknown, depth: number): SpoolError | undefined {
  if (typeof copy === 'string') return LONE_SURROGATE.test(copy) ? walk.invalid(depth, LONE_SURROGATE_REASON, 'charset') : undefined;
  if (copy === null || typeof copy !== 'object') return undefined;
  const entries = Object.entries(copy);
  for (const [key, item] of entries) {
    if (!Array.isArray(copy) && LONE_SURROGATE.test(key)) return walk.invalid(depth, 'has a key with a lone UTF-16 surrogate', 'charset');
    walk.keys[depth] = Array.isArray(copy) ? Number(key) : key;
    const found = loneSurrogate(walk, item, depth + 1);
    if (found) return found;
  }
  return undefined;
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
    delayMs: z.number().int().min(0).max(MAX_DELAY_MS).optional(),
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
      .custom<Record<string, unknown>>(isPlainAttributes, { message: 'expected a plain object of name → { type, value } (not a Map, an array or a class instance)' })
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

/** An options argument as given, or `{}` when omitted; INVALID_ARGUMENT for null or anything not an object. */
export function optionsObject<T extends object>(options: T | undefined, what: string): T {
  if (options === undefined) return {} as T;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new SpoolError('INVALID_ARGUMENT', `${what} options must be an object, got ${options === null ? 'null' : Array.isArray(options) ? 'an array' : typeof options}`, { details: { field: 'options' } });
  }
  return options;
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
