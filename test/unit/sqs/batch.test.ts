import { describe, expect, it } from 'vitest';
import { checkBatchEntries, runBatch } from '../../../src/sqs/batch.js';
import { SqsError } from '../../../src/sqs/errors.js';

function sqsError(fn: () => unknown): SqsError {
  try {
    fn();
  } catch (error) {
    if (error instanceof SqsError) return error;
    throw error;
  }
  throw new Error('expected an SqsError');
}

const ids = (...list: string[]) => list.map((id) => ({ id }));

describe('checkBatchEntries', () => {
  it('accepts 1 to 10 distinct ids of [A-Za-z0-9_-]{1,80}', () => {
    expect(() => checkBatchEntries(ids('a'))).not.toThrow();
    expect(() => checkBatchEntries(ids('A-1', 'b_2', 'x'.repeat(80), '0', '1', '2', '3', '4', '5', '6'))).not.toThrow();
  });

  it('refuses an empty batch, more than 10, a bad id and a repeated id', () => {
    expect(sqsError(() => checkBatchEntries([])).name).toBe('EmptyBatchRequest');
    expect(sqsError(() => checkBatchEntries(ids(...'abcdefghijk'.split('')))).name).toBe('TooManyEntriesInBatchRequest');
    for (const bad of ['', 'a b', 'a.b', 'x'.repeat(81), 'é']) expect(sqsError(() => checkBatchEntries(ids(bad))).name, bad).toBe('InvalidBatchEntryId');
    expect(sqsError(() => checkBatchEntries(ids('a', 'b', 'a'))).name).toBe('BatchEntryIdsNotDistinct');
  });
});

describe('runBatch', () => {
  it('sorts outcomes into Successful and Failed in entry order, always sending both', async () => {
    const result = await runBatch(
      ids('a', 'b', 'c'),
      async ({ id }) => {
        if (id === 'b') throw new SqsError('ReceiptHandleIsInvalid');
        return { Id: id };
      },
      (error) => error as SqsError,
    );
    expect(result).toEqual({
      Successful: [{ Id: 'a' }, { Id: 'c' }],
      Failed: [{ Id: 'b', SenderFault: true, Code: 'ReceiptHandleIsInvalid', Message: 'The specified receipt handle is not valid.' }],
    });
    expect(await runBatch(ids('a'), async ({ id }) => ({ Id: id }), (e) => e as SqsError)).toEqual({ Successful: [{ Id: 'a' }], Failed: [] });
  });

  it('marks server faults SenderFault false', async () => {
    const { Failed } = await runBatch(ids('a'), async () => Promise.reject(new SqsError('InternalFailure')), (e) => e as SqsError);
    expect(Failed).toEqual([{ Id: 'a', SenderFault: false, Code: 'InternalFailure', Message: expect.any(String) }]);
  });

  it('fails the whole call when the queue does not exist', async () => {
    await expect(runBatch(ids('a', 'b'), async () => Promise.reject(new SqsError('QueueDoesNotExist')), (e) => e as SqsError)).rejects.toMatchObject({ name: 'QueueDoesNotExist' });
  });

  it('runs entries one after another when inOrder (FIFO), concurrently otherwise', async () => {
    const started: string[] = [];
    const release: (() => void)[] = [];
    let onStart: (id: string) => void = () => {};
    const run = ({ id }: { id: string }) => {
      started.push(id);
      onStart(id);
      return new Promise<{ Id: string }>((resolve) => release.push(() => resolve({ Id: id })));
    };
    const concurrent = runBatch(ids('a', 'b'), run, (e) => e as SqsError);
    expect(started).toEqual(['a', 'b']);
    release.splice(0).forEach((fn) => fn());
    await concurrent;

    started.length = 0;
    const secondStarted = new Promise<void>((resolve) => {
      onStart = (id) => {
        if (id === 'b') resolve();
      };
    });
    const ordered = runBatch(ids('a', 'b'), run, (e) => e as SqsError, true);
    expect(started).toEqual(['a']);
    release.splice(0).forEach((fn) => fn());
    await secondStarted;
    expect(started).toEqual(['a', 'b']);
    release.splice(0).forEach((fn) => fn());
    expect((await ordered).Successful).toEqual([{ Id: 'a' }, { Id: 'b' }]);
  });
});
