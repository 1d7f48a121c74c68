/**
 * Lock contention: another connection holds the write lock (BEGIN IMMEDIATE) for 2 s. Spool must
 * retry asynchronously with a short busy timeout, so the event loop stays responsive, report
 * `storage.busy`, lose nothing and not crash. The blocker is a second connection in this process:
 * BEGIN IMMEDIATE returns at once, and a timer commits it, so holding it does not block the loop.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { isSpoolError, type Spool, type SpoolEvent } from '../../src/index.js';
import { nextEvent, reached } from '../helpers/events.js';
import { createBaton } from '../helpers/gate.js';
import { useTempSpools } from '../helpers/spool.js';

const HOLD_MS = 2000;
/**
 * The target is 50 ms of lag, and an idle 2-core box measures about 25 ms (one 20 ms busy
 * timeout per retry). Under heavy CPU load the scheduler alone adds tens of ms, so the assertion is
 * a bound that a blocking busy wait (the whole 2 s hold) could never meet; the figures are printed.
 */
const MAX_LAG_BOUND_MS = 400;
const LAG_TARGET_MS = 50;

const spools = useTempSpools();

/** A second connection that takes the write lock now and gives it back after `ms` (or after the test). */
function holdWriteLock(ms: number) {
  const conn = spools.connect();
  conn.pragma('busy_timeout = 0');
  conn.exec('BEGIN IMMEDIATE');
  let releasedAt = Number.POSITIVE_INFINITY;
  const released = new Promise<number>((resolve) => {
    setTimeout(() => {
      conn.exec('COMMIT');
      releasedAt = performance.now();
      resolve(releasedAt);
    }, ms);
  });
  return { released, get releasedAt() { return releasedAt; } };
}

/** Event-loop lag: a 5 ms interval's drift (max and p99), plus Node's own delay histogram. */
function lagProbe() {
  const intervalMs = 5;
  const drifts: number[] = [];
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    drifts.push(Math.max(0, now - last - intervalMs));
    last = now;
  }, intervalMs);
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  return {
    stop() {
      clearInterval(timer);
      histogram.disable();
      const sorted = [...drifts].sort((a, b) => a - b);
      const round = (n: number) => Math.round(n * 10) / 10;
      return {
        samples: sorted.length,
        maxMs: round(sorted.at(-1) ?? 0),
        p99Ms: round(sorted[Math.floor(sorted.length * 0.99)] ?? 0),
        histogramMaxMs: round(histogram.max / 1e6),
      };
    },
  };
}

function collect(events$: Spool['events$']) {
  const seen: SpoolEvent[] = [];
  const sub = events$.subscribe((e) => seen.push(e));
  return { seen, stop: () => sub.unsubscribe() };
}

describe('lock contention (SQLITE_BUSY)', () => {
  it('retries sends and settles asynchronously while another connection holds the write lock for 2 s', async () => {
    const spool = spools.open();
    const baton = createBaton();
    const handled = new Map<string, number>();
    spool.register<{ n: number; hold?: boolean }>('work', async (message) => {
      if (message.payload.hold) await baton.enter();
      handled.set(message.id, (handled.get(message.id) ?? 0) + 1);
    });
    await spool.start();
    const log = collect(spool.events$);

    // Two messages in flight before the lock: their completions must be committed under it.
    const held = await Promise.all([0, 1].map((n) => spool.send('work', { n, hold: true })));
    await baton.arrived(2);

    const lock = holdWriteLock(HOLD_MS);
    const probe = lagProbe();
    const busy = nextEvent(spool.events$, (e) => e.type === 'storage.busy', { timeoutMs: HOLD_MS });
    const resolvedAt: number[] = [];
    const sends = Array.from({ length: 50 }, (_, n) =>
      spool.send('work', { n: n + 2 }).then((id) => {
        resolvedAt.push(performance.now());
        return id;
      }),
    );
    const batch = spool.sendBatch('work', [{ n: 100 }, { n: 101 }]).then((ids) => {
      resolvedAt.push(performance.now());
      return ids;
    });
    baton.openForever();
    const allDone = reached(spool.events$, 'done', 54, 'work', HOLD_MS + 15_000);

    await busy;
    // Reads are not blocked by a writer in WAL mode: the spool still answers while locked.
    const during = await spool.stats();
    expect(during.queues.work?.processing).toBe(2);
    expect(resolvedAt).toHaveLength(0);

    await lock.released;
    const ids = [...(await Promise.all(sends)), ...(await batch)];
    await allDone;
    const lag = probe.stop();
    log.stop();

    // No send resolved while its row could not have been committed.
    expect(resolvedAt.length).toBe(51);
    for (const at of resolvedAt) expect(at).toBeGreaterThanOrEqual(lock.releasedAt);
    // Nothing lost, nothing twice.
    expect(new Set(ids).size).toBe(52);
    for (const id of [...held, ...ids]) expect(handled.get(id)).toBe(1);
    // Done rows are deleted (retention.doneMs is 0): no row of the queue is left in any state.
    expect((await spool.stats()).queues.work).toEqual({ pending: 0, activating: 0, processing: 0, dead: 0, done: 0 });
    // Busy was reported and retried, never surfaced as an error.
    const busyEvents = log.seen.filter((e) => e.type === 'storage.busy');
    expect(busyEvents.length).toBeGreaterThan(1);
    expect(log.seen.filter((e) => e.type === 'error' || e.type === 'message.error')).toEqual([]);

    console.log(
      `[busy] lock held ${HOLD_MS} ms: ${busyEvents.length} storage.busy retries; event-loop lag max ${lag.maxMs} ms, ` +
        `p99 ${lag.p99Ms} ms over ${lag.samples} samples (monitorEventLoopDelay max ${lag.histogramMaxMs} ms); ` +
        `target ${LAG_TARGET_MS} ms ${lag.maxMs < LAG_TARGET_MS ? 'met' : 'MISSED'}`,
    );
    expect(lag.maxMs).toBeLessThan(MAX_LAG_BOUND_MS);
  });

  it('start() waits out a held lock asynchronously, then recovers and runs the backlog', async () => {
    // A backlog stored before the owner starts (a producer needs no owner).
    const producer = spools.open();
    const queued = await Promise.all([1, 2, 3].map((n) => producer.send('work', { n })));
    await producer.close();

    const spool = spools.open();
    const handled: string[] = [];
    spool.register('work', (message) => {
      handled.push(message.id);
    });
    const log = collect(spool.events$);
    const lock = holdWriteLock(500);
    const probe = lagProbe();
    const done = reached(spool.events$, 'done', 3, 'work', 10_000);
    await spool.start();
    const startedAt = performance.now();
    const lag = probe.stop();
    // Recovery needs the write lock, so start() can only finish after the blocker let go.
    expect(startedAt).toBeGreaterThanOrEqual(lock.releasedAt);
    expect(log.seen.some((e) => e.type === 'storage.busy')).toBe(true);
    await done;
    expect(handled.sort()).toEqual([...queued].sort());
    log.stop();
    console.log(`[busy] start() under a 500 ms lock: event-loop lag max ${lag.maxMs} ms, p99 ${lag.p99Ms} ms`);
    expect(lag.maxMs).toBeLessThan(MAX_LAG_BOUND_MS);
  });

  it('admin writes under a held lock reject with a coded STORAGE_BUSY and change nothing', async () => {
    const spool = spools.open({ config: { queues: { parked: { paused: true } } } });
    spool.register('parked', () => {});
    await spool.start();
    await spool.send('parked', { n: 1 });
    // A dead letter for requeue to move: a queue with no consumer dead-letters what it claims.
    const died = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.to === 'dead' && e.queue === 'orphan');
    await spool.send('orphan', { n: 2 });
    await died;
    const before = await spool.stats();
    const settingsBefore = spool.settings.get();
    // Sweeps run in the maintenance worker, which starts at the first sweep: start it now, so
    // the held lock meets a running sweep rather than the worker's start-up.
    await spool.sweep();

    // Far longer than the 20 ms busy timeout and the sweep's ~1 s of retries: under a loaded suite
    // the maintenance worker may take a few hundred ms to reach its sweep, and must still meet it.
    const lock = holdWriteLock(3000);
    const codes = await Promise.all([
      spool.settings.update({ executor: { concurrency: 2 } }).then(
        () => 'resolved',
        (e: unknown) => (isSpoolError(e) ? e.code : `uncoded: ${String(e)}`),
      ),
      spool.purge('parked', { state: 'pending' }).then(
        () => 'resolved',
        (e: unknown) => (isSpoolError(e) ? e.code : `uncoded: ${String(e)}`),
      ),
      spool.requeue({ queue: 'orphan' }).then(
        (n) => `resolved ${n}`,
        (e: unknown) => (isSpoolError(e) ? e.code : `uncoded: ${String(e)}`),
      ),
      spool.sweep().then(
        () => 'resolved',
        (e: unknown) => (isSpoolError(e) ? e.code : `uncoded: ${String(e)}`),
      ),
    ]);
    expect(codes).toEqual(['STORAGE_BUSY', 'STORAGE_BUSY', 'STORAGE_BUSY', 'STORAGE_BUSY']);
    expect(spool.settings.get()).toEqual(settingsBefore);
    await lock.released;
    expect(await spool.stats()).toEqual(before);
    // Once the lock is gone the same calls succeed.
    await spool.settings.update({ executor: { concurrency: 2 } });
    expect(spool.settings.get().executor.concurrency).toBe(2);
    expect(await spool.purge('parked', { state: 'pending' })).toBe(1);
  });
});
