import { describe, expect, it } from 'vitest';
import { backoffDelay, type BackoffPolicy } from '../../../machines/retry-policy.js';

const never = () => {
  throw new Error('random() must not be called without jitter');
};

describe('backoffDelay', () => {
  it('gives the same delay for every retry with a fixed policy', () => {
    const policy: BackoffPolicy = { type: 'fixed', delayMs: 1500, maxDelayMs: 100, jitter: false };
    expect([1, 2, 3, 10, 1000].map((n) => backoffDelay(policy, n, never))).toEqual([1500, 1500, 1500, 1500, 1500]);
  });

  it('doubles from delayMs with an exponential policy: min(maxDelayMs, delayMs·2^(n−1))', () => {
    const policy: BackoffPolicy = { type: 'exponential', delayMs: 1000, maxDelayMs: 30_000, jitter: false };
    const schedule = [1, 2, 3, 4, 5, 6, 7, 20].map((n) => backoffDelay(policy, n, never));
    expect(schedule).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
  });

  it('caps the very first delay too when delayMs exceeds maxDelayMs', () => {
    const policy: BackoffPolicy = { type: 'exponential', delayMs: 5000, maxDelayMs: 3000, jitter: false };
    expect(backoffDelay(policy, 1, never)).toBe(3000);
  });

  it('treats n below 1 as the first retry', () => {
    const policy: BackoffPolicy = { type: 'exponential', delayMs: 250, maxDelayMs: 10_000, jitter: false };
    expect(backoffDelay(policy, 0, never)).toBe(250);
  });

  it('stays at maxDelayMs, never Infinity or NaN, for very large n', () => {
    const policy: BackoffPolicy = { type: 'exponential', delayMs: 1000, maxDelayMs: 300_000, jitter: false };
    expect(backoffDelay(policy, 5000, never)).toBe(300_000);
    expect(backoffDelay(policy, 1_000_000, never)).toBe(300_000);
  });

  it('stays 0 with delayMs 0 however many retries came before', () => {
    const policy: BackoffPolicy = { type: 'exponential', delayMs: 0, maxDelayMs: 300_000, jitter: false };
    for (const n of [1, 2, 1024, 1025, 999_999]) expect(backoffDelay(policy, n, never)).toBe(0);
  });

  it('draws full jitter uniformly from [0, delay] with the injected random', () => {
    const policy: BackoffPolicy = { type: 'exponential', delayMs: 1000, maxDelayMs: 30_000, jitter: true };
    expect(backoffDelay(policy, 1, () => 0)).toBe(0);
    expect(backoffDelay(policy, 1, () => 0.9999999)).toBe(1000);
    expect(backoffDelay(policy, 3, () => 0.9999999)).toBe(4000);
    expect(backoffDelay(policy, 3, () => 0.5)).toBe(2000);
    expect(backoffDelay(policy, 20, () => 0.9999999)).toBe(30_000);
    expect(backoffDelay(policy, 20, () => 0.25)).toBe(7500);
  });

  it('jitters a fixed policy too, and always returns whole milliseconds within range', () => {
    const policy: BackoffPolicy = { type: 'fixed', delayMs: 777, maxDelayMs: 0, jitter: true };
    expect(backoffDelay(policy, 4, () => 0)).toBe(0);
    expect(backoffDelay(policy, 4, () => 0.9999999)).toBe(777);
    for (let i = 0; i < 200; i++) {
      const r = i / 200;
      const delay = backoffDelay(policy, 4, () => r);
      expect(Number.isInteger(delay)).toBe(true);
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThanOrEqual(777);
    }
  });

  it('calls random once per jittered delay', () => {
    let calls = 0;
    const policy: BackoffPolicy = { type: 'exponential', delayMs: 10, maxDelayMs: 100, jitter: true };
    backoffDelay(policy, 2, () => (calls++, 0.1));
    expect(calls).toBe(1);
  });
});
