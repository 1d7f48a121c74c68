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
}

/** The real clock: Date.now and Node timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
