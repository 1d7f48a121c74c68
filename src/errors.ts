/** Errors: one class with a stable `code`, plus the two a handler throws to steer retries. */
import type { StoredError } from '../machines/message.machine.js';

/** Every stable error code Spool uses. */
export type SpoolErrorCode =
  | 'INVALID_PAYLOAD'
  | 'INVALID_QUEUE_NAME'
  | 'INVALID_ARGUMENT'
  | 'INVALID_OPTIONS'
  | 'INVALID_SETTINGS'
  | 'DUPLICATE_CONSUMER'
  | 'CONSUMER_BUSY'
  | 'LOCKED'
  | 'CLOSED'
  | 'NOT_ACCEPTING'
  | 'QUEUE_FULL'
  | 'STORAGE_FULL'
  | 'STORAGE_BUSY'
  | 'STORAGE_ERROR'
  | 'NO_CONSUMER'
  | 'TIMEOUT'
  | 'CRASH_LOOP'
  | 'CORRUPT_ROW'
  | 'HANDLER_ERROR'
  | 'NON_RETRYABLE'
  | 'LAUNCH_FAILED'
  | 'STOPPED'
  | 'STORAGE_LOST'
  | 'HARD_LINKED'
  | 'SUBSCRIBER_ERROR'
  | 'QUEUE_NOT_FOUND'
  | 'QUEUE_EXISTS'
  | 'INVALID_RECEIPT'
  | 'MESSAGE_NOT_INFLIGHT'
  | 'LEASE_EXPIRED'
  | 'MAX_RECEIVES'
  | 'NEWER_SCHEMA';

/** The error every Spool API throws or rejects with. */
export class SpoolError extends Error {
  /** A stable machine-readable code; messages may change, codes do not. */
  readonly code: SpoolErrorCode;
  /** Extra facts (the offending path, value, limit). */
  readonly details?: Record<string, unknown>;

  /** Builds an error with a code, a message naming the bad value, and an optional cause. */
  constructor(code: SpoolErrorCode, message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SpoolError';
    this.code = code;
    if (options?.details) this.details = options.details;
  }
}

/** True for a SpoolError, optionally with the given code. */
export function isSpoolError(value: unknown, code?: SpoolErrorCode): value is SpoolError {
  return value instanceof SpoolError && (code === undefined || value.code === code);
}

/** Thrown by a handler: the message goes to dead at once, without further attempts. */
export class NonRetryableError extends Error {
  /** Like `Error`; `cause` is kept. */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NonRetryableError';
  }
}

/** Thrown by a handler: run the message again after `delayMs` without using an attempt. */
export class RetryAfterError extends Error {
  /** How long to wait, in ms. */
  readonly delayMs: number;

  /** `delayMs`: how long to wait, in ms (≥ 0). */
  constructor(delayMs: number, message?: string) {
    checkMs('RetryAfterError', 'delayMs', delayMs, false, MAX_DELAY_MS);
    super(message ?? `Retry after ${delayMs} ms`);
    this.name = 'RetryAfterError';
    this.delayMs = delayMs;
  }
}

/**
 * The longest delay a message can be given (send's `delayMs`, RetryAfterError, RateLimitError):
 * ten years. Beyond it a value is a bug (2 ** 60 ms parks a message for good, at an epoch-ms time
 * that is no longer an exact integer).
 */
export const MAX_DELAY_MS = 10 * 365 * 86_400_000;

/**
 * A duration or time given to the API: a finite number of ms, ≥ 0 unless `signed`, at most `max`;
 * anything else (NaN, a string, a Symbol) is INVALID_ARGUMENT naming `what` and `name`. Returns it.
 */
export function checkMs(what: string, name: string, ms: unknown, signed = false, max = Infinity): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || (!signed && ms < 0) || ms > max) {
    const range = `${signed ? '' : ' ≥ 0'}${Number.isFinite(max) ? ` and ≤ ${max}` : ''}`;
    throw new SpoolError('INVALID_ARGUMENT', `${what} expects ${name} to be a finite number of ms${range}, got ${typeof ms === 'number' ? String(ms) : safeString(ms)}`);
  }
  return ms;
}

/**
 * Thrown by a handler whose upstream said "too many requests": the message goes back to pending
 * without using an attempt, and its whole queue claims nothing for `pauseMs` (in memory: a restart
 * ends the pause). BullMQ's `Worker.RateLimitError`.
 */
export class RateLimitError extends Error {
  /** How long the queue pauses, in ms. */
  readonly pauseMs: number;

  /** `pauseMs`: how long the queue pauses, in ms (≥ 0). */
  constructor(pauseMs: number, message?: string) {
    checkMs('RateLimitError', 'pauseMs', pauseMs, false, MAX_DELAY_MS);
    super(message ?? `Rate limited: the queue pauses for ${pauseMs} ms`);
    this.name = 'RateLimitError';
    this.pauseMs = pauseMs;
  }
}

/** Turns anything thrown into an Error (graphile-worker's coerceError). Never throws. */
export function coerceError(thrown: unknown): Error {
  if (isError(thrown)) return thrown;
  return new Error(typeof thrown === 'string' ? thrown : `Non-error thrown: ${safeString(thrown)}`);
}

/**
 * The plain-JSON form of an error, as stored in a snapshot's `lastError`. Never throws: a thrown
 * value is hostile input (a Proxy, a throwing `code` getter), and reading it must not take the
 * runtime down or strand the message in flight.
 */
export function toStoredError(thrown: unknown, fallbackCode: SpoolErrorCode = 'HANDLER_ERROR'): StoredError {
  if (!isError(thrown)) return storedNonError(thrown, fallbackCode);
  const error = thrown;
  const own = read(error, 'code');
  const code = typeof own === 'string' && own.length > 0 ? own : fallbackCode;
  const message = read(error, 'message');
  const stack = read(error, 'stack');
  const stored: StoredError = { code, message: typeof message === 'string' ? message : safeString(message) };
  if (typeof stack === 'string') stored.stack = stack;
  return stored;
}

/** The largest thrown non-Error value kept in `lastError.value`, as JSON text. */
const MAX_THROWN_VALUE_CHARS = 8192;

/**
 * A thrown string or object, kept as it was: its own `code` and `message` when it has them, and
 * the value itself (as JSON, when it has a JSON form of at most 8 KiB) in `value`.
 */
function storedNonError(thrown: unknown, fallbackCode: SpoolErrorCode): StoredError {
  const own = read(thrown, 'code');
  const message = read(thrown, 'message');
  const json = safeJson(thrown);
  const stored: StoredError = {
    code: typeof own === 'string' && own.length > 0 ? own : fallbackCode,
    message: typeof message === 'string' ? message : typeof thrown === 'string' ? thrown : `Non-error thrown: ${json ?? safeString(thrown)}`,
  };
  if (json !== undefined && json.length <= MAX_THROWN_VALUE_CHARS) stored.value = JSON.parse(json) as unknown;
  return stored;
}

/** JSON text of `value`, or undefined when it has none (a function, a cycle, a throwing getter). */
function safeJson(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

/** A thrown value's message for a log line or an event. Never throws. */
export function messageOf(thrown: unknown): string {
  const message = read(thrown, 'message');
  if (typeof message === 'string') return message;
  return typeof thrown === 'string' ? thrown : safeString(thrown);
}

/** `value[key]`, or undefined when reading it throws. */
function read(value: unknown, key: string): unknown {
  try {
    return (value as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

/** `instanceof Error` that survives a Proxy whose getPrototypeOf trap throws. */
function isError(value: unknown): value is Error {
  try {
    return value instanceof Error;
  } catch {
    return false;
  }
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    try {
      return Object.prototype.toString.call(value);
    } catch {
      return '[unreadable value]';
    }
  }
}
