/**
 * The messages in flight in this process (BullMQ's lock manager): each with its lease token, its
 * AbortController and its handler deadline, and ONE timer for the nearest deadline, never one per
 * message. Deadlines are on the monotonic clock; the wall-clock `leaseExpiresAt` lives in the row.
 */
import { MAX_TIMER_MS, monotonicNow, type Clock, type TimerHandle } from '../clock.js';
import { SpoolError } from '../errors.js';
import type { Inflight } from './types.js';

/** The in-flight registry. */
export interface Leases {
  readonly size: number;
  add(entry: Inflight): void;
  delete(entry: Inflight): void;
  /** Every entry still held (not yet settled). */
  held(): Inflight[];
  /** Arms the deadline timer for `entry`, if it has a deadline. */
  watchDeadline(entry: Inflight): void;
  /** Aborts a handler's signal; one that never read it gets an already-aborted one if it does later. */
  abort(entry: Inflight, reason: SpoolError): void;
  /** Clears the deadline timer. */
  clearTimer(): void;
}

/** Creates the registry; `expired` is called for each held entry whose deadline passed. */
export function createLeases(clock: Clock, expired: (entry: Inflight) => void): Leases {
  const inflight = new Map<number, Inflight>();
  let timer: TimerHandle | undefined;
  let timerAt: number | null = null;

  function arm(at: number) {
    if (timerAt !== null && timerAt <= at) return;
    if (timer !== undefined) clock.clearTimeout(timer);
    timerAt = at;
    timer = clock.setTimeout(fire, Math.min(MAX_TIMER_MS, Math.max(0, at - monotonicNow(clock))));
  }

  function fire() {
    timer = undefined;
    timerAt = null;
    const now = monotonicNow(clock);
    let nearest: number | null = null;
    for (const entry of inflight.values()) {
      if (entry.settled || entry.deadline === null) continue;
      if (entry.deadline <= now) expired(entry);
      else if (nearest === null || entry.deadline < nearest) nearest = entry.deadline;
    }
    if (nearest !== null) arm(nearest);
  }

  return {
    get size() {
      return inflight.size;
    },
    add: (entry) => void inflight.set(entry.seq, entry),
    delete: (entry) => void inflight.delete(entry.seq),
    held: () => [...inflight.values()].filter((e) => !e.settled),
    watchDeadline(entry) {
      if (entry.deadline !== null) arm(entry.deadline);
    },
    abort(entry, reason) {
      (entry.controller ??= new AbortController()).abort(reason);
    },
    clearTimer() {
      if (timer !== undefined) clock.clearTimeout(timer);
      timer = undefined;
      timerAt = null;
    },
  };
}
