/** The system clock: delays Node cannot hold are capped, not clamped to 1 ms. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_TIMER_MS, systemClock } from '../../src/clock.js';

/** The largest delay Node's setTimeout accepts (2^31 − 1 ms); anything above fires after 1 ms. */
const NODE_TIMER_MAX = 2_147_483_647;

afterEach(() => {
  vi.restoreAllMocks();
});

describe('systemClock', () => {
  // Guards: systemClock.setTimeout used to pass the delay straight through, so a delayed send past
  // ~24.8 days made Node warn (TimeoutOverflowWarning) and fire after 1 ms, re-arming forever.
  it('caps a delay over 2,147,483,647 ms at MAX_TIMER_MS and emits no TimeoutOverflowWarning', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    const spy = vi.spyOn(globalThis, 'setTimeout');
    const fired = vi.fn();
    const thirtyDays = 30 * 86_400_000;
    const handle = systemClock.setTimeout(fired, thirtyDays);
    try {
      expect(spy).toHaveBeenCalledTimes(1);
      const delay = spy.mock.calls[0]![1]!;
      expect(delay).toBeLessThanOrEqual(NODE_TIMER_MAX);
      expect(delay).toBe(NODE_TIMER_MAX);
      expect(MAX_TIMER_MS).toBe(NODE_TIMER_MAX);
      // Warnings are emitted on a later tick; an overflowed timer would also have fired by now.
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(warnings.filter((w) => w.name === 'TimeoutOverflowWarning')).toEqual([]);
      expect(fired).not.toHaveBeenCalled();
    } finally {
      systemClock.clearTimeout(handle);
      process.off('warning', onWarning);
    }
  });

  it('passes a delay within range unchanged', () => {
    const spy = vi.spyOn(globalThis, 'setTimeout');
    const handle = systemClock.setTimeout(() => {}, 1234);
    systemClock.clearTimeout(handle);
    expect(spy.mock.calls[0]![1]).toBe(1234);
  });
});
