/**
 * Retention and purge: done rows kept as history for retention.doneMs, dead letters swept after
 * retention.deadMs, a 100k-row sweep that never stalls the processor (the longest claim pause is
 * measured and printed), a file that shrinks after a large purge, and FIFO deduplication ids
 * forgotten once their window ends.
 */
import { existsSync, statSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { describe, expect, it } from 'vitest';
import { NonRetryableError, type Spool, type SweepEvent } from '../../src/index.js';
import { nextEvent, reached } from '../helpers/events.js';
import { readDb } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';

const spools = useTempSpools();

function setup(config: Record<string, unknown>) {
  const clock = createTestClock();
  return { spool: spools.open({ clock, config }), clock, path: spools.path };
}

/** The database file plus its WAL, bytes. */
function onDisk(path: string) {
  const size = (p: string) => (existsSync(p) ? statSync(p).size : 0);
  return { db: size(path), wal: size(`${path}-wal`), total: size(path) + size(`${path}-wal`) };
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** Sends `count` payloads of about `bytes` each, in batches. */
async function fill(spool: Spool, queue: string, count: number, bytes: number) {
  const pad = 'x'.repeat(bytes);
  const chunk = 5000;
  for (let i = 0; i < count; i += chunk) {
    const n = Math.min(chunk, count - i);
    await spool.sendBatch(queue, Array.from({ length: n }, (_, j) => ({ n: i + j, pad })));
  }
}

describe('retention of done rows', () => {
  it('deletes done rows at once by default (doneMs 0)', async () => {
    const { spool } = setup({});
    spool.register('jobs', () => undefined);
    await spool.start();
    const done = reached(spool.events$, 'done', 1);
    const id = await spool.send('jobs', {});
    await done;
    expect(await spool.get(id)).toBeUndefined();
    expect((await spool.stats()).queues.jobs?.done ?? 0).toBe(0);
  });

  it('keeps done rows for doneMs (get shows done, stats counts them) until a sweep after the clock passes', async () => {
    const { spool, clock } = setup({ retention: { doneMs: 60_000 }, maintenance: { intervalMs: 1_000_000 } });
    spool.register('jobs', () => undefined);
    await spool.start();
    const done = reached(spool.events$, 'done', 2);
    const [a, b] = await spool.sendBatch('jobs', [{ n: 1 }, { n: 2 }]);
    await done;
    const finishedAt = clock.now();
    expect(await spool.get(a!)).toMatchObject({ state: 'done', payload: { n: 1 }, attempt: 1, finishedAt });
    expect((await spool.stats()).queues.jobs).toMatchObject({ done: 2, pending: 0 });

    expect((await spool.sweep()).deleted).toBe(0);
    clock.advance(60_000);
    // Exactly doneMs old is still kept: history expires once the clock has passed it.
    expect((await spool.sweep()).deleted).toBe(0);
    expect(await spool.get(b!)).toMatchObject({ state: 'done' });
    clock.advance(1);
    expect(await spool.sweep()).toMatchObject({ deleted: 2 });
    expect(await spool.get(a!)).toBeUndefined();
    expect((await spool.stats()).queues.jobs?.done ?? 0).toBe(0);
  });

  it('sweeps on its own every maintenance.intervalMs and announces maintenance.swept', async () => {
    const { spool, clock } = setup({ retention: { doneMs: 1000 }, maintenance: { intervalMs: 5000 } });
    spool.register('jobs', () => undefined);
    await spool.start();
    const done = reached(spool.events$, 'done', 1);
    const id = await spool.send('jobs', {});
    await done;
    const swept = nextEvent<SweepEvent>(spool.events$, (e) => e.type === 'maintenance.swept');
    clock.advance(5000);
    expect(await swept).toMatchObject({ type: 'maintenance.swept', deleted: 1 });
    expect(await spool.get(id)).toBeUndefined();
  });
});

describe('retention of dead letters', () => {
  it('keeps dead letters by default (deadMs null)', async () => {
    // A long poll interval, so advancing the test clock by a month fires few timers.
    const { spool, clock } = setup({ processor: { pollIntervalMs: 3_600_000 }, maintenance: { intervalMs: 2_000_000_000 } });
    spool.register('jobs', () => {
      throw new NonRetryableError('no');
    });
    await spool.start();
    const dead = reached(spool.events$, 'dead', 1);
    const id = await spool.send('jobs', {});
    await dead;
    clock.advance(30 * 86_400_000);
    await spool.sweep();
    expect(await spool.get(id)).toMatchObject({ state: 'dead' });
  });

  it('purges dead letters older than deadMs and keeps newer ones', async () => {
    const { spool, clock } = setup({ retention: { deadMs: 10_000 }, maintenance: { intervalMs: 1_000_000 } });
    spool.register('jobs', () => {
      throw new NonRetryableError('no');
    });
    await spool.start();
    let dead = reached(spool.events$, 'dead', 1);
    const old = await spool.send('jobs', { n: 'old' });
    await dead;
    clock.advance(5000);
    dead = reached(spool.events$, 'dead', 1);
    const young = await spool.send('jobs', { n: 'young' });
    await dead;

    clock.advance(5001);
    expect(await spool.sweep()).toMatchObject({ deleted: 1 });
    expect(await spool.get(old)).toBeUndefined();
    expect((await spool.dead('jobs')).map((m) => m.id)).toEqual([young]);
    clock.advance(5000);
    expect(await spool.sweep()).toMatchObject({ deleted: 1 });
    expect(await spool.dead('jobs')).toEqual([]);
  });

  it('sweep() sweeps with a plan made now, even while a timer-driven sweep planned earlier runs', async () => {
    const { spool, clock } = setup({ retention: { deadMs: 120_000 }, maintenance: { intervalMs: 60_000 } });
    spool.register('jobs', () => {
      throw new NonRetryableError('no');
    });
    await spool.start();
    const dead = reached(spool.events$, 'dead', 3);
    await spool.sendBatch('jobs', [1, 2, 3]);
    await dead;
    // The timer's sweep begins: the letters are 60 s old, younger than deadMs, so it keeps them.
    clock.advance(60_000);
    clock.advance(3_600_000);
    // An hour later every letter is past deadMs: a sweep asked for now deletes them.
    expect(await spool.sweep()).toMatchObject({ deleted: 3 });
    expect(await spool.dead('jobs')).toEqual([]);
  });
});

describe('retention of FIFO deduplication ids', () => {
  const windowEntries = () => readDb(spools.path, (c) => c.prepare('SELECT count(*) FROM dedupe_window').pluck().get());

  it('forgets ids whose window ended at the sweep, over several batches, and keeps those still in it', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock });
    await spool.queues.create('orders.fifo', { dedupeWindowMs: 1000 });
    // More than one sweep batch (200) of ids whose window will end.
    for (let i = 0; i < 450; i++) await spool.send('orders.fifo', { i }, { group: 'g', key: `old-${i}` });
    clock.advance(1000);
    const fresh = await spool.send('orders.fifo', { i: 'fresh' }, { group: 'g', key: 'fresh' });
    expect(windowEntries()).toBe(451);

    await spool.sweep();
    expect(windowEntries()).toBe(1);
    // The id still in its window still deduplicates; a forgotten one sends anew.
    expect(await spool.send('orders.fifo', { i: 'again' }, { group: 'g', key: 'fresh' })).toBe(fresh);
    expect(await spool.send('orders.fifo', { i: 'again' }, { group: 'g', key: 'old-0' })).not.toBe(fresh);
    expect((await spool.stats()).queues['orders.fifo']?.pending).toBe(452);
  });
});

describe('large sweeps', () => {
  // Guards: maintenance.schedule() armed a new timer unconditionally. A timer-driven sweep still
  // running across stop() + start() re-armed on finishing while start() had armed one already:
  // two maintenance chains, and close() cleared only one, leaving a timer that fired after close.
  it('stop() and start() during a timer-driven sweep leave one maintenance timer; close() leaves none', async () => {
    const ROWS = 20_000;
    const { spool, clock } = setup({ retention: { deadMs: 0 }, maintenance: { intervalMs: 100 } });
    spool.register('jobs', () => undefined);
    const first = reached(spool.events$, 'done', 1);
    await spool.send('jobs', {}); // creates the schema
    // Dead letters written directly, for speed: the sweep deletes them 200 per batch, two ticks each.
    const raw = spools.connect();
    const insert = raw.prepare(
      `INSERT INTO messages (legacy_id, queue, payload, state, attempt, deliveries, visible_at, last_error, ready, created_at, updated_at, finished_at)
       VALUES (?, 'jobs', '{}', 'dead', 1, 1, 0, '{"code":"X","message":"x"}', 0, 0, 0, 0)`,
    );
    // Rows written by hand land above the fold mark: the sweep's first delete counts them in.
    raw.transaction(() => {
      for (let i = 0; i < ROWS; i++) insert.run(`dead-${i}`);
    })();
    raw.close();
    await spool.start();
    await first;

    let sweptYet = false;
    spool.events$.subscribe((e) => {
      if (e.type === 'maintenance.swept') sweptYet = true;
    });
    const swept = nextEvent<SweepEvent>(spool.events$, (e) => e.type === 'maintenance.swept', { timeoutMs: 30_000 });
    clock.advance(100); // fires the maintenance timer: the sweep starts and yields between batches
    await spool.stop();
    await spool.start();
    // The scenario needs the timer-driven sweep to outlive the stop() and start().
    expect(sweptYet).toBe(false);
    expect(await swept).toMatchObject({ deleted: ROWS });
    expect((await spool.stats()).queues.jobs?.dead ?? 0).toBe(0);
    // Let the finished sweep's promise chain settle (it re-arms the timer after the event).
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));

    await spool.close();
    expect(clock.pending).toBe(0);
  });

  it('sweeps 100k dead letters in small batches while the processor keeps claiming', async () => {
    const ROWS = 100_000;
    const { spool, clock } = setup({
      executor: { concurrency: 1 },
      processor: { batchSize: 5000 },
      // No consumer for "orphan": each row goes dead at claim, 5000 per claim, without a slot.
      queues: { orphan: { executor: { concurrency: 5000 } } },
      retention: { deadMs: 1000 },
      maintenance: { intervalMs: 2_000_000_000 },
    });
    let streaming = true;
    const starts: number[] = [];
    // A steady stream: every handler sends the next message, so a stall shows as a gap in starts.
    spool.register('work', () => {
      starts.push(performance.now());
      if (streaming) void spool.send('work', {}).catch(() => {});
    });
    await fill(spool, 'orphan', ROWS, 100);
    const allDead = reached(spool.events$, 'dead', ROWS, 'orphan', 60_000);
    await spool.start();
    await allDead;
    expect((await spool.stats()).queues.orphan).toMatchObject({ dead: ROWS, pending: 0 });
    clock.advance(1001);

    // Warm the stream up; its gaps without a sweep are the baseline.
    await spool.send('work', {});
    const warm = nextEvent(spool.events$, () => starts.length >= 600, { timeoutMs: 40_000 });
    await warm;
    const baseline = gapsOf(starts.slice(-500));

    const swept = nextEvent<SweepEvent>(spool.events$, (e) => e.type === 'maintenance.swept', { timeoutMs: 60_000 });
    // The owner's commits wait for the worker's steps on the lock they share, never in SQLite's
    // busy handler (whose sleeps missed the gaps between steps: 25-45 ms pauses, measured).
    let busy = 0;
    const busyWatch = spool.events$.subscribe((e) => {
      if (e.type === 'storage.busy') busy += 1;
    });
    const t0 = performance.now();
    const result = await spool.sweep();
    const t1 = performance.now();
    streaming = false;
    const event = await swept;

    const during = starts.filter((t) => t > t0 && t < t1);
    const gaps = gapsOf([t0, ...during, t1]);
    console.log(
      `[retention] sweep of ${result.deleted} rows + ${result.freedPages} freed pages took ${(t1 - t0).toFixed(0)} ms; ` +
        `handler starts during it: ${during.length}; claim pause during the sweep: ${describeGaps(gaps)}; ` +
        `same stream without a sweep: ${describeGaps(baseline)}; longest sweep batch (maintenance.swept): ${event.longestBatchMs} ms; ` +
        `storage.busy events: ${busy}; ` +
        `load average ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores`,
    );

    busyWatch.unsubscribe();
    expect(result.deleted).toBe(ROWS);
    expect(busy).toBe(0);
    expect(event).toMatchObject({ deleted: ROWS, longestBatchMs: result.longestBatchMs });
    expect(result.freedPages).toBeGreaterThan(0);
    expect((await spool.stats()).queues.orphan?.dead ?? 0).toBe(0);
    // Batched, not one long transaction: the processor kept claiming all through the sweep
    // (100k rows are 500 batches of 200, each followed by a pause).
    expect(during.length).toBeGreaterThanOrEqual(50);
    // 100k rows to fill, kill and sweep: generous on a loaded 2-core machine.
  }, 90_000);

  it('shrinks the file after a large purge and a sweep', async () => {
    const ROWS = 100_000;
    const { spool, path } = setup({ maintenance: { intervalMs: 2_000_000_000 } });
    await fill(spool, 'bulk', ROWS, 500);
    const full = onDisk(path);
    expect(await spool.purge('bulk', { state: 'pending' })).toBe(ROWS);
    const purged = onDisk(path);
    const result = await spool.sweep();
    const after = onDisk(path);
    console.log(
      `[retention] ${ROWS} rows of ~500 B: db ${mb(full.db)} + wal ${mb(full.wal)}; after purge ${mb(purged.db)} + ${mb(purged.wal)}; ` +
        `after sweep ${mb(after.db)} + ${mb(after.wal)} (${result.freedPages} pages freed, longest step ${result.longestBatchMs} ms)`,
    );
    expect(full.db).toBeGreaterThan(40 * 1024 * 1024);
    expect(result.freedPages).toBeGreaterThan(0);
    // The sweep ends with a TRUNCATE checkpoint, so the WAL is emptied too.
    expect(after.wal).toBe(0);
    expect(after.total).toBeLessThan(full.total / 10);
    expect((await spool.stats()).queues.bulk?.pending ?? 0).toBe(0);
  });
});

/** The intervals between consecutive times, ms, sorted ascending. */
function gapsOf(times: number[]): number[] {
  const gaps: number[] = [];
  for (let i = 1; i < times.length; i++) gaps.push(times[i]! - times[i - 1]!);
  return gaps.sort((a, b) => a - b);
}

/** p50 / p99 / max of sorted gaps, and how many exceeded the 20 ms target. */
function describeGaps(gaps: number[]): string {
  const at = (q: number) => gaps[Math.min(gaps.length - 1, Math.floor(q * gaps.length))]!.toFixed(1);
  const over = gaps.filter((g) => g > 20).length;
  return `p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, longest ${gaps.at(-1)!.toFixed(1)} ms (${over} of ${gaps.length} gaps over 20 ms)`;
}
