/** Time as a dependency: SQL takes "now" from here, and tests inject a controllable clock. */

/** An opaque timer handle. */
export type TimerHandle = unknown;

/** The clock Spool reads time and sets timers from. */
export interface Clock {
  /** Epoch ms. */
  now(): number;
  /** Runs `fn` once after `ms`. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer from `setTimeout`. */
  clearTimeout(handle: TimerHandle): void;
  /**
   * Milliseconds from an arbitrary origin that never jumps (NTP steps the wall clock, not this).
   * In-process handler timeouts are measured with it; without it, `now()` is used.
   */
  monotonic?(): number;
}

/** The longest delay Node's setTimeout honours; a longer one fires after 1 ms instead. */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * The real clock: Date.now and Node timers. Delays are capped at MAX_TIMER_MS: the caller's
 * timer then fires early (after ~24.8 days), finds its deadline not yet due, and re-arms.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, Math.min(ms, MAX_TIMER_MS)),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  monotonic: () => performance.now(),
};

/** The clock's monotonic reading, falling back to its wall time for clocks without one. */
export function monotonicNow(clock: Clock): number {
  return clock.monotonic ? clock.monotonic() : clock.now();
}
