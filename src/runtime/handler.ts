/** What a consumer receives, and how its outcome is read. */
import { NonRetryableError, RateLimitError, RetryAfterError, toStoredError } from '../errors.js';
import type { StoredError } from '../../machines/message.machine.js';

/** The message a handler gets. */
export interface Message<P = unknown> {
  id: string;
  queue: string;
  payload: P;
  /** 1 on the first delivery; grows with each charged failure. */
  attempt: number;
  /** Every hand-out, redeliveries after a crash included. */
  deliveries: number;
  priority: number;
  /** Epoch ms of the send. */
  createdAt: number;
  /** The schedule that sent it (only on a scheduled message). */
  schedule?: string;
  /** The tick it was sent for, epoch ms (a catch-up: the latest missed tick). */
  scheduledFor?: number;
}

/** The second argument of a handler. */
export interface HandlerContext {
  /** Aborted on timeout (reason: SpoolError TIMEOUT) or at stop (reason: SpoolError STOPPED). */
  signal: AbortSignal;
}

/**
 * The context a push handler gets: the signal's controller is made on first read, as most handlers
 * never read it. A class, not a literal with a getter: V8 built that literal in about 0.8 µs (its
 * getter is a new closure each time), once per message.
 */
export class LazyHandlerContext implements HandlerContext {
  readonly #entry: { controller: AbortController | undefined };
  constructor(entry: { controller: AbortController | undefined }) {
    this.#entry = entry;
  }
  get signal(): AbortSignal {
    return (this.#entry.controller ??= new AbortController()).signal;
  }
}

/** A consumer: resolve to complete the message; throw or reject to fail this attempt. */
export type Handler<P = unknown> = (message: Message<P>, context: HandlerContext) => unknown;

/** How an attempt ended. */
export type Outcome =
  | { kind: 'complete' }
  | { kind: 'fail'; error: StoredError }
  | { kind: 'reject'; error: StoredError }
  | { kind: 'defer'; delayMs: number; pauseMs?: number };

/** Reads what a handler threw. Never throws, whatever was thrown (a Proxy, a throwing getter). */
export function outcomeOf(thrown: unknown): Outcome {
  try {
    if (thrown instanceof RetryAfterError) return { kind: 'defer', delayMs: thrown.delayMs };
    // Pending again at once: the queue's pause, not the row's visible-at, holds it back.
    if (thrown instanceof RateLimitError) return { kind: 'defer', delayMs: 0, pauseMs: thrown.pauseMs };
    if (thrown instanceof NonRetryableError) return { kind: 'reject', error: toStoredError(thrown, 'NON_RETRYABLE') };
  } catch {
    // instanceof itself threw (a Proxy's getPrototypeOf trap): an ordinary failure.
  }
  return { kind: 'fail', error: toStoredError(thrown) };
}
