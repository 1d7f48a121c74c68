/**
 * The supervisor's wall-clock timers: one for the nearest delayed row (delays, backoff), one for
 * the nearest pull lease deadline (a consumer that died or stalled), and the safety poll
 * (`processor.pollIntervalMs`) for work and settings from other processes. Never one timer per
 * message.
 */
import { MAX_TIMER_MS, type Clock, type TimerHandle } from '../clock.js';

/** The timers' handle. */
export interface RuntimeTimers {
  /** Arms the delayed-row timer for `at` (epoch ms) unless an earlier one is armed. */
  delayedAt(at: number): void;
  /** Arms the lease-expiry timer for `at` (epoch ms) unless an earlier one is armed. */
  leaseAt(at: number): void;
  /** (Re)starts the poll with the current interval. */
  startPoll(): void;
  /** Restarts the poll if its interval changed (a new one applies now, not after the old). */
  pollIntervalChanged(): void;
  /** Clears every timer. */
  clear(): void;
}

/** One timer for the earliest of the times it is given. */
function createAlarm(clock: Clock, fire: () => void) {
  let timer: TimerHandle | undefined;
  let armedAt: number | null = null;
  return {
    at(at: number) {
      if (armedAt !== null && armedAt <= at) return;
      if (timer !== undefined) clock.clearTimeout(timer);
      armedAt = at;
      timer = clock.setTimeout(() => {
        timer = undefined;
        armedAt = null;
        fire();
      }, Math.min(MAX_TIMER_MS, Math.max(0, at - clock.now())));
    },
    clear() {
      if (timer !== undefined) clock.clearTimeout(timer);
      timer = undefined;
      armedAt = null;
    },
  };
}

/**
 * Creates the timers; `due` runs when a delayed row is due, `leaseDue` when a pull lease may have
 * run out, `poll` on every poll.
 */
export function createRuntimeTimers(clock: Clock, o: { pollIntervalMs(): number; due(): void; leaseDue(): void; poll(): void }): RuntimeTimers {
  const delayed = createAlarm(clock, o.due);
  const lease = createAlarm(clock, o.leaseDue);
  let pollTimer: TimerHandle | undefined;
  let pollEveryMs = 0;
  let active = false;

  function schedulePoll() {
    pollEveryMs = o.pollIntervalMs();
    pollTimer = clock.setTimeout(() => {
      pollTimer = undefined;
      if (!active) return;
      o.poll();
      if (active && pollTimer === undefined) schedulePoll();
    }, pollEveryMs);
  }

  return {
    delayedAt(at) {
      if (active) delayed.at(at);
    },
    leaseAt(at) {
      if (active) lease.at(at);
    },
    startPoll() {
      active = true;
      if (pollTimer === undefined) schedulePoll();
    },
    pollIntervalChanged() {
      if (pollTimer === undefined || o.pollIntervalMs() === pollEveryMs) return;
      clock.clearTimeout(pollTimer);
      schedulePoll();
    },
    clear() {
      active = false;
      if (pollTimer !== undefined) clock.clearTimeout(pollTimer);
      pollTimer = undefined;
      delayed.clear();
      lease.clear();
    },
  };
}
