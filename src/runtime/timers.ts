/**
 * The supervisor's two wall-clock timers: one for the nearest delayed row (delays, backoff), and
 * the safety poll (`processor.pollIntervalMs`) for work and settings from other processes. Never
 * one timer per message.
 */
import { MAX_TIMER_MS, type Clock, type TimerHandle } from '../clock.js';

/** The timers' handle. */
export interface RuntimeTimers {
  /** Arms the delayed-row timer for `at` (epoch ms) unless an earlier one is armed. */
  delayedAt(at: number): void;
  /** (Re)starts the poll with the current interval. */
  startPoll(): void;
  /** Restarts the poll if its interval changed (a new one applies now, not after the old). */
  pollIntervalChanged(): void;
  /** Clears both timers. */
  clear(): void;
}

/** Creates the timers; `due` runs when a delayed row is due, `poll` on every poll. */
export function createRuntimeTimers(clock: Clock, o: { pollIntervalMs(): number; due(): void; poll(): void }): RuntimeTimers {
  let delayedTimer: TimerHandle | undefined;
  let delayedAt: number | null = null;
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
      if (!active || (delayedAt !== null && delayedAt <= at)) return;
      if (delayedTimer !== undefined) clock.clearTimeout(delayedTimer);
      delayedAt = at;
      delayedTimer = clock.setTimeout(() => {
        delayedTimer = undefined;
        delayedAt = null;
        o.due();
      }, Math.min(MAX_TIMER_MS, Math.max(0, at - clock.now())));
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
      for (const timer of [pollTimer, delayedTimer]) if (timer !== undefined) clock.clearTimeout(timer);
      pollTimer = delayedTimer = undefined;
      delayedAt = null;
    },
  };
}
