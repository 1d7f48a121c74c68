/**
 * `counters` (per-state counts for stats and maxPending, and the fold mark) are kept by deltas in
 * the same transaction as every change to `messages`, and new rows are folded in by the next
 * change (or every FOLD_EVERY sends), with no index on the hot path. Whatever happens (batches, dedupe
 * hits, a batch refused part-way inside a group commit, retries, dead letters, requeue, purge,
 * sweep, recovery), it must equal the rows.
 */
import { describe, expect, it } from 'vitest';
import { FOLD_EVERY } from '../../src/db/counters.js';
import { isSpoolError, NonRetryableError } from '../../src/index.js';
import { reached } from '../helpers/events.js';
import { createBaton } from '../helpers/gate.js';
import { countsBothWays } from '../helpers/counts.js';
import { readDb } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';

const spools = useTempSpools();

/** Rows per queue and state, counted from the table and as kept in counters. */
function tally(path: string) {
  return readDb(path, countsBothWays);
}

describe('counters', () => {
  it('equals the rows after every kind of write', async () => {
    const clock = createTestClock();
    const spool = spools.open({
      clock,
      config: {
        queues: { capped: { maxPending: 3 }, parked: { paused: true } },
        queueDefaults: { maxAttempts: 2, backoff: { type: 'fixed', delayMs: 0, maxDelayMs: 0, jitter: false } },
        retention: { doneMs: 1000, deadMs: 5000 },
      },
    });
    spool.register('jobs', (m) => {
      if ((m.payload as { fail?: boolean }).fail) throw new Error('fails');
      if ((m.payload as { poison?: boolean }).poison) throw new NonRetryableError('poison');
    });
    spool.register('parked', () => {});
    await spool.start();
    const check = () => {
      const { rows, kept } = tally(spools.path);
      expect(kept).toEqual(rows);
    };

    // Batches, a dedupe hit, and a batch refused part-way in the same group commit as good sends.
    await spool.sendBatch('parked', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    await spool.send('parked', { n: 1 }, { key: 'k' });
    await spool.send('parked', { n: 9 }, { key: 'k' });
    const [ok, refused] = await Promise.allSettled([spool.send('capped', { n: 1 }), spool.sendBatch('capped', [{ a: 1 }, { a: 2 }, { a: 3 }])]);
    expect(ok.status).toBe('fulfilled');
    expect(refused.status).toBe('rejected');
    check();

    // Done (kept), retried then dead, poison dead, delayed.
    const settled = reached(spool.events$, 'dead', 2, 'jobs');
    const done = reached(spool.events$, 'done', 2, 'jobs');
    await spool.sendBatch('jobs', [{ ok: 1 }, { ok: 2 }, { fail: true }, { poison: true }]);
    await spool.send('jobs', { later: true }, { delayMs: 60_000 });
    await Promise.all([settled, done]);
    check();

    expect(await spool.requeue({ queue: 'jobs' })).toBe(2);
    check();
    expect(await spool.purge('parked', { state: 'pending' })).toBe(4);
    check();
    const redead = reached(spool.events$, 'dead', 2, 'jobs');
    await redead;
    clock.advance(10_000);
    // Two done and two dead jobs, and capped's message, dead at claim for want of a consumer.
    expect((await spool.sweep()).deleted).toBe(5);
    check();
  });

  it('leaves the count of a send to the fold, and stats and maxPending count the unfolded rows meanwhile', async () => {
    const cap = FOLD_EVERY + 10;
    const spool = spools.open({ config: { queues: { parked: { paused: true, maxPending: cap } } } });
    await spool.start();
    const stored = () =>
      readDb(spools.path, (c) => ({
        pending: c.prepare("SELECT n FROM counters WHERE scope = 'parked' AND name = 'pending'").pluck().get() ?? 0,
        arrivals: c.prepare("SELECT n FROM counters WHERE scope = '' AND name = 'arrivals:parked'").pluck().get() ?? 0,
        mark: c.prepare("SELECT n FROM counters WHERE scope = '' AND name = 'last_seq'").pluck().get(),
      }));
    for (let i = 1; i < FOLD_EVERY; i++) await spool.send('parked', { i });
    // No send so far wrote the counters: every row is above the mark, and still counted.
    expect(stored()).toEqual({ pending: 0, arrivals: 0, mark: 0 });
    expect((await spool.stats()).queues.parked?.pending).toBe(FOLD_EVERY - 1);
    expect(tally(spools.path).kept).toEqual(tally(spools.path).rows);
    // The send that takes the unfolded range to FOLD_EVERY seqs folds it in its own commit.
    await spool.send('parked', { i: FOLD_EVERY });
    expect(stored()).toEqual({ pending: FOLD_EVERY, arrivals: FOLD_EVERY, mark: FOLD_EVERY });
    for (let i = FOLD_EVERY; i < cap; i++) await spool.send('parked', { i });
    expect(stored().pending).toBe(FOLD_EVERY);
    // maxPending sees the unfolded rows too: the send past the cap is refused and stores nothing.
    const full = await spool.send('parked', { over: true }).catch((error: unknown) => error);
    expect(isSpoolError(full, 'QUEUE_FULL')).toBe(true);
    expect((await spool.stats()).queues.parked?.pending).toBe(cap);
    // The first change to an unfolded row (here a purge deleting them) folds them first.
    expect(await spool.purge('parked', { state: 'pending' })).toBe(cap);
    expect(stored()).toEqual({ pending: 0, arrivals: cap, mark: cap });
    expect(tally(spools.path)).toEqual({ rows: [], kept: [] });
  });

  it('never reuses an id, even after the newest message is deleted or the queue drains', async () => {
    const spool = spools.open();
    spool.register('jobs', () => {});
    await spool.start();
    const done = reached(spool.events$, 'done', 3, 'jobs');
    const first = await spool.sendBatch('jobs', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    await done;
    expect(tally(spools.path).rows).toEqual([]);
    const next = await spool.send('parked', { n: 4 });
    expect(Number(next)).toBe(Number(first[2]) + 1);
    await spool.purge('parked', { state: 'pending' });
    await spool.close();
    // A new handle (as after a restart) goes on from the high-water mark, not from max(seq) + 1.
    const again = spools.open();
    expect(Number(await again.send('parked', { n: 5 }))).toBe(Number(next) + 1);
  });

  it('equals the rows after boot recovery of in-flight messages', async () => {
    const first = spools.open();
    const baton = createBaton();
    first.register('jobs', () => baton.enter());
    await first.start();
    await first.sendBatch('jobs', [{ n: 1 }, { n: 2 }]);
    await baton.arrived(2);
    await first.close({ timeoutMs: 0 });
    expect(tally(spools.path).kept).toEqual([{ queue: 'jobs', state: 'processing', n: 2 }]);
    const second = spools.open();
    second.register('jobs', () => {});
    const done = reached(second.events$, 'done', 2, 'jobs');
    await second.start();
    await done;
    const { rows, kept } = tally(spools.path);
    expect(kept).toEqual(rows);
    expect(rows).toEqual([]);
  });
});
