/** close()'s cleanup runner: every step runs whatever fails before it, and no error is lost. */
import { describe, expect, it } from 'vitest';
import { runAll } from '../../src/lifecycle.js';

describe('runAll (close steps)', () => {
  it('runs every step in order, then rethrows a single failure as it is', async () => {
    const ran: number[] = [];
    const boom = new Error('storage close failed');
    const steps = [() => ran.push(1), () => { ran.push(2); throw boom; }, async () => ran.push(3)];
    await expect(runAll(steps)).rejects.toBe(boom);
    expect(ran).toEqual([1, 2, 3]);
  });

  it('reports several failures together as an AggregateError, in step order', async () => {
    const first = new Error('lock release failed');
    const second = Object.assign(new Error('wal gone'), { code: 'STORAGE_ERROR' });
    const error = await runAll([() => { throw first; }, () => {}, () => Promise.reject(second)]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AggregateError);
    expect((error as AggregateError).errors).toEqual([first, second]);
    expect((error as AggregateError).message).toBe('close() failed in 2 steps: lock release failed; wal gone');
  });

  it('resolves when every step succeeds', async () => {
    await expect(runAll([() => {}, async () => {}])).resolves.toBeUndefined();
  });
});
