/** Validation at the edge: queue names, payloads, send options. Nothing invalid reaches storage. */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { SpoolError } from './errors.js';

/** Queue names: 1–80 characters of [A-Za-z0-9._-], except "__proto__". */
export const QUEUE_NAME = /^(?!__proto__$)[A-Za-z0-9._-]{1,80}$/;

/** Throws INVALID_QUEUE_NAME unless `name` is a valid queue name. */
export function assertQueueName(name: unknown): asserts name is string {
  // "__proto__" would be a prototype, not a key, wherever queue names key a JSON object.
  if (typeof name !== 'string' || !QUEUE_NAME.test(name) || name === '__proto__') {
    const shown = typeof name === 'string' ? JSON.stringify(name.length > 100 ? `${name.slice(0, 100)}…` : name) : String(typeof name);
    throw new SpoolError(
      'INVALID_QUEUE_NAME',
      `Expected a queue name of 1–80 characters from [A-Za-z0-9._-], got ${shown}`,
      { details: { name: typeof name === 'string' ? name.slice(0, 200) : typeof name } },
    );
  }
}

function invalid(path: string, reason: string): SpoolError {
  return new SpoolError('INVALID_PAYLOAD', `Payload${path} ${reason}`, { details: { path: path || '$' } });
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Serialises a payload to JSON, refusing anything that would not round-trip: undefined,
 * functions, symbols, BigInt, NaN/Infinity, circular references, lone surrogates, objects other
 * than arrays and plain objects (Dates included), and anything over `maxBytes` once serialised.
 */
export function serializePayload(payload: unknown, maxBytes: number): string {
  check(payload, '', new Set());
  const json = JSON.stringify(payload);
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > maxBytes) {
    throw new SpoolError('INVALID_PAYLOAD', `Payload is ${bytes} bytes once serialised; the limit (maxPayloadBytes) is ${maxBytes}`, {
      details: { bytes, maxBytes },
    });
  }
  return json;
}

function check(value: unknown, path: string, seen: Set<object>): void {
  switch (typeof value) {
    case 'string':
      if (LONE_SURROGATE.test(value)) throw invalid(path, 'contains a lone UTF-16 surrogate, which JSON cannot carry faithfully');
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
        for (let i = 0; i < value.length; i++) check(value[i], `${path}[${i}]`, seen);
      } else {
        for (const key of Object.keys(value)) {
          if (LONE_SURROGATE.test(key)) throw invalid(path, `has a key with a lone UTF-16 surrogate`);
          check((value as Record<string, unknown>)[key], `${path}.${key}`, seen);
        }
        if (Object.getOwnPropertySymbols(value).length > 0) throw invalid(path, 'has symbol keys, which JSON drops');
      }
      seen.delete(value);
      return;
    }
  }
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

/** Options of `send()` and `sendBatch()`. */
export const sendOptionsSchema = z
  .strictObject({
    delayMs: z.number().int().min(0).max(10 * 365 * 86_400_000).optional(),
    runAt: z.union([z.date(), z.number().int().min(0)]).optional(),
    priority: z.number().int().min(-1_000_000).max(1_000_000).optional(),
    key: z.string().min(1).max(512).optional(),
  })
  .refine((o) => o.delayMs === undefined || o.runAt === undefined, { message: 'give delayMs or runAt, not both' });

/** Parsed send options. */
export type SendOptions = z.infer<typeof sendOptionsSchema>;

/** Validates send options, throwing INVALID_ARGUMENT with the path and reason. */
export function parseSendOptions(options: unknown): SendOptions {
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
