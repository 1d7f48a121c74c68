/** The exported manual clock: timers fire in order as time advances; a wall step fires none. */
import { describe, expect, it } from 'vitest';
import { createManualClock, isSpoolError } from '../../src/index.js';

describe('createManualClock', () => {
  it('runs due timers in order as advance() moves time, each seeing its own due time', () => {
    const clock = createManualClock(1000);
    const fired: [string, number][] = [];
    clock.setTimeout(() => fired.push(['b', clock.now()]), 20);
    const cancelled = clock.setTimeout(() => fired.push(['x', clock.now()]), 15);
    clock.setTimeout(() => {
      fired.push(['a', clock.now()]);
      // A timer set by a timer, due within the same advance, runs in it too.
      clock.setTimeout(() => fired.push(['c', clock.now()]), 5);
    }, 10);
    clock.clearTimeout(cancelled);
    expect(clock.pending).toBe(2);
    expect(clock.nextDue()).toBe(10);
    clock.advance(16);
    expect(fired).toEqual([['a', 1010], ['c', 1015]]);
    expect(clock.now()).toBe(1016);
    clock.advance(4);
    expect(fired.at(-1)).toEqual(['b', 1020]);
    expect(clock.pending).toBe(0);
    expect(clock.nextDue()).toBeNull();
  });

  it('stepWall() moves the wall clock only: timers count monotonic time', () => {
    const clock = createManualClock(0);
    let fired = false;
    clock.setTimeout(() => (fired = true), 100);
    clock.stepWall(10_000);
    expect([clock.now(), clock.monotonic!(), fired]).toEqual([10_000, 0, false]);
    clock.advance(100);
    expect(fired).toBe(true);
  });

  it('refuses a time that is not a finite number, and a monotonic step back, and keeps its time', () => {
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (error) {
        return isSpoolError(error) ? error.code : String(error);
      }
      return 'accepted';
    };
    for (const start of [Number.NaN, Infinity, 'x']) expect(code(() => createManualClock(start as number))).toBe('INVALID_ARGUMENT');
    const clock = createManualClock(1000);
    for (const ms of [Number.NaN, -5000, Infinity, '100']) expect(code(() => clock.advance(ms as number)), String(ms)).toBe('INVALID_ARGUMENT');
    for (const ms of [Number.NaN, '100']) expect(code(() => clock.stepWall(ms as number)), String(ms)).toBe('INVALID_ARGUMENT');
    expect([clock.now(), clock.monotonic!()]).toEqual([1000, 0]);
    // A wall step back is what NTP does: allowed.
    clock.stepWall(-500);
    expect(clock.now()).toBe(500);
  });
});
