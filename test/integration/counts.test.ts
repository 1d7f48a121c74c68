/**
 * `counters` (per-state counts for stats and maxPending, and the seq high-water mark) are kept by deltas in the same transaction as every change to
 * `messages`, with no trigger and no index on the hot path. Whatever happens (batches, dedupe
 * hits, a batch refused part-way inside a group commit, retries, dead letters, requeue, purge,
 * sweep, recovery), it must equal the rows.
 */
import { describe, expect, it } from 'vitest';
import { NonRetryableError } from '../../src/index.js';
import { reached } from '../helpers/events.js';
import { createBaton } from '../helpers/gate.js';
import { readDb } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';

const spools = useTempSpools();

/** Rows per queue and state, counted from the table and as kept in counters. */
function tally(path: string) {
  return readDb(path, (conn) => ({
    rows: conn.prepare('SELECT queue, state, count(*) AS n FROM messages GROUP BY queue, state ORDER BY queue, state').all(),
    kept: conn.prepare("SELECT scope AS queue, name AS state, n FROM counters WHERE scope != '' AND n != 0 ORDER BY scope, name").all(),
  }));
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
