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
  | 'STOPPED';

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
  /** `delayMs`: how long to wait, in ms (≥ 0). */
  constructor(
    readonly delayMs: number,
    message = `Retry after ${delayMs} ms`,
  ) {
    super(message);
    this.name = 'RetryAfterError';
    if (!Number.isFinite(delayMs) || delayMs < 0) {
      throw new SpoolError('INVALID_ARGUMENT', `RetryAfterError expects delayMs ≥ 0, got ${String(delayMs)}`);
    }
  }
}

/** Turns anything thrown into an Error (graphile-worker's coerceError). */
export function coerceError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  return new Error(typeof thrown === 'string' ? thrown : `Non-error thrown: ${safeString(thrown)}`);
}

/** The plain-JSON form of an error, as stored in a snapshot's `lastError`. */
export function toStoredError(thrown: unknown, fallbackCode: SpoolErrorCode = 'HANDLER_ERROR'): StoredError {
  const error = coerceError(thrown);
  const own = (error as unknown as { code?: unknown }).code;
  const code = typeof own === 'string' ? own : fallbackCode;
  return error.stack === undefined ? { code, message: error.message } : { code, message: error.message, stack: error.stack };
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
