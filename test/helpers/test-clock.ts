/** A controllable clock: time moves only when the test says so. */
import type { Clock } from '../../src/index.js';

/**
 * A manual clock; `advance(ms)` moves wall and monotonic time together and runs every timer that
 * falls due, in order. `stepWall(ms)` moves only the wall clock, as an NTP step does: timers, like
 * Node's, count elapsed (monotonic) time and are not affected.
 */
export function createTestClock(start = 1_700_000_000_000) {
  let wall = start;
  let mono = 0;
  let nextId = 1;
  const timers = new Map<number, { at: number; fn: () => void }>();
  const clock: Clock & { advance(ms: number): void; stepWall(ms: number): void; nextDue(): number | null; readonly pending: number } = {
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
      const target = mono + ms;
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
      wall += ms;
    },
    /** How long until the earliest pending timer fires (ms), or null when none is pending. */
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
