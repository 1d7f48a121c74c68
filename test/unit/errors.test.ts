/** The exported errors: what a thrown value becomes in a snapshot's lastError, and the delay errors' checks. */
import { describe, expect, it } from 'vitest';
import { MAX_DELAY_MS, RateLimitError, RetryAfterError, SpoolError, toStoredError } from '../../src/errors.js';

describe('toStoredError', () => {
  it('keeps an Error’s own code, and a thrown object’s', () => {
    expect(toStoredError(Object.assign(new Error('down'), { code: 'SMTP_DOWN' }))).toMatchObject({ code: 'SMTP_DOWN', message: 'down' });
    expect(toStoredError({ code: 'SMTP_DOWN', message: 'down' })).toMatchObject({ code: 'SMTP_DOWN', message: 'down' });
  });

  it('gives an empty or non-string code the fallback, for an Error as for a thrown object', () => {
    // An Error with code '' was stored with an empty code, while an object with one got HANDLER_ERROR.
    for (const code of ['', 42, undefined]) {
      expect(toStoredError(Object.assign(new Error('x'), { code })).code).toBe('HANDLER_ERROR');
      expect(toStoredError({ code, message: 'x' }).code).toBe('HANDLER_ERROR');
    }
    expect(toStoredError(Object.assign(new Error('x'), { code: '' }), 'LAUNCH_FAILED').code).toBe('LAUNCH_FAILED');
  });
});

describe('RetryAfterError and RateLimitError', () => {
  it('take 0 to ten years of ms, as send’s delayMs does; anything else is INVALID_ARGUMENT', () => {
    // Any finite number was taken: RetryAfterError(2 ** 60) parked its message for good.
    for (const make of [(ms: number) => new RetryAfterError(ms), (ms: number) => new RateLimitError(ms)]) {
      expect(() => make(0)).not.toThrow();
      expect(() => make(MAX_DELAY_MS)).not.toThrow();
      for (const ms of [MAX_DELAY_MS + 1, 2 ** 60, -1, NaN, Infinity]) {
        let thrown: unknown;
        try {
          make(ms);
        } catch (error) {
          thrown = error;
        }
        expect(thrown).toBeInstanceOf(SpoolError);
        expect(thrown).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('≥ 0 and ≤ 315360000000') });
      }
    }
    expect(new RetryAfterError(MAX_DELAY_MS).delayMs).toBe(315_360_000_000);
  });
});
