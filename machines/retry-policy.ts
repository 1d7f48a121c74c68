/** Backoff between attempts. Pure: randomness is passed in. */

/** How long to wait before retry n, as configured per queue. */
export interface BackoffPolicy {
  type: 'fixed' | 'exponential';
  /** Base delay, ms. */
  delayMs: number;
  /** Cap for exponential growth, ms. */
  maxDelayMs: number;
  /** Full jitter: a uniformly random wait in [0, delay]. */
  jitter: boolean;
}

/**
 * The wait before retry `n` (n = 1 after the first failure), in ms.
 * `random` returns a number in [0, 1), like Math.random; it is used only with jitter.
 */
export function backoffDelay(policy: BackoffPolicy, n: number, random: () => number): number {
  const base =
    policy.type === 'fixed'
      ? policy.delayMs
      : // The exponent is capped so 2^k stays finite: with delayMs 0, 0 · Infinity would be NaN.
        Math.min(policy.maxDelayMs, policy.delayMs * 2 ** Math.min(1023, Math.max(0, n - 1)));
  return policy.jitter ? Math.floor(random() * (base + 1)) : base;
}
