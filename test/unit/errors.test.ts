/** toStoredError: what a thrown value becomes in a snapshot's lastError. */
import { describe, expect, it } from 'vitest';
import { toStoredError } from '../../src/errors.js';

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
