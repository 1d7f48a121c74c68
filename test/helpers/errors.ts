/** The SpoolError a call rejects or throws with, failing the test if there is none. */
import { expect } from 'vitest';
import { SpoolError } from '../../src/errors.js';

/** The SpoolError `promise` rejects with (failing the test if it resolves or rejects with something else). */
export async function rejection(promise: Promise<unknown>): Promise<SpoolError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(SpoolError);
    return error as SpoolError;
  }
  throw new Error('expected a rejection');
}

/** The SpoolError `fn` throws (failing the test if it throws nothing or something else). */
export function thrown(fn: () => unknown): SpoolError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SpoolError);
    return error as SpoolError;
  }
  throw new Error('expected a SpoolError, nothing was thrown');
}
