/**
 * A manual clock for tests of code that embeds Spool (as XState ships SimulatedClock): pass it as
 * `createSpool({ clock })`, and time moves only when the test says so.
 */
import type { Clock } from './clock.js';
import { checkMs } from './errors.js';

/** A clock whose time moves only by `advance()` and `stepWall()`. */
export interface ManualClock extends Clock {
  /** Moves wall and monotonic time together by `ms`, running every timer that falls due, in order. */
  advance(ms: number): void;
  /** Moves only the wall clock, as an NTP step does: timers count elapsed (monotonic) time. */
  stepWall(ms: number): void;
  /** How long until the earliest pending timer fires (ms), or null when none is pending. */
  nextDue(): number | null;
  /** Timers set and not yet fired or cleared. */
  readonly pending: number;
}

/** Creates a manual clock whose wall time starts at `start` (epoch ms). */
export function createManualClock(start = 1_700_000_000_000): ManualClock {
  let wall = checkMs('createManualClock', 'start', start, true);
  let mono = 0;
  let nextId = 1;
  const timers = new Map<number, { at: number; fn: () => void }>();
  const clock: ManualClock = {
    now: () => wall,
    monotonic: () => mono,
    setTimeout(fn, ms) {
      const id = nextId++;
      timers.set(id, { at: mono + Math.max(0, ms), fn });
      return id;
    },
    clearTimeout(handle) {
      timers.delete(handle as number);
    },
    advance(ms) {
      // Monotonic time never goes back: no negative advance.
      const target = mono + checkMs('advance', 'ms', ms);
      for (;;) {
        let due: [number, { at: number; fn: () => void }] | undefined;
        for (const entry of timers) if (entry[1].at <= target && (!due || entry[1].at < due[1].at)) due = entry;
        if (!due) break;
        timers.delete(due[0]);
        const step = Math.max(0, due[1].at - mono);
        mono += step;
        wall += step;
        due[1].fn();
      }
      wall += target - mono;
      mono = target;
    },
    stepWall(ms) {
      // Either way, as an NTP step may go.
      wall += checkMs('stepWall', 'ms', ms, true);
    },
    nextDue() {
      let at = Infinity;
      for (const timer of timers.values()) at = Math.min(at, timer.at);
      return at === Infinity ? null : Math.max(0, at - mono);
    },
    get pending() {
      return timers.size;
    },
  };
  return clock;
}
