/**
 * The WAL under a steady stream of commits: a PASSIVE checkpoint beside a busy writer never
 * completes, and SQLite restarts the WAL only at a write that finds every frame copied. The
 * maintenance worker drains it (maintenance-worker.ts): it holds the write lock it shares with the
 * owner's committer (write-lock.ts) for one short pass, and the next commit restarts the WAL.
 */
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { WAL_DRAIN_FRAMES } from '../../src/runtime/maintenance.js';
import { reached } from '../helpers/events.js';
import { useTempSpools } from '../helpers/spool.js';

const spools = useTempSpools();

describe('the WAL under a steady drain', () => {
  it('stays bounded: the worker drains it while the owner commits back to back', async () => {
    const N = 60_000;
    const spool = spools.open({ config: { executor: { concurrency: 8 }, queues: { jobs: { paused: true } } } });
    const wal = `${spools.path}-wal`;
    spool.register('jobs', () => undefined);
    await spool.start();
    for (let i = 0; i < N; i += 5000) await spool.sendBatch('jobs', Array.from({ length: 5000 }, (_, j) => ({ n: i + j })));
    let largest = 0;
    // The WAL header's salts (bytes 16-23) change at every restart of the WAL.
    const salts = new Set<string>();
    const header = Buffer.alloc(32);
    const sample = setInterval(() => {
      if (!existsSync(wal)) return;
      largest = Math.max(largest, statSync(wal).size);
      const fd = openSync(wal, 'r');
      try {
        if (readSync(fd, header, 0, 32, 0) === 32) salts.add(header.subarray(16, 24).toString('hex'));
      } finally {
        closeSync(fd);
      }
    }, 5);
    const done = reached(spool.events$, 'done', N, 'jobs', 120_000);
    await spool.settings.update({ queues: { jobs: { paused: false } } });
    await done;
    clearInterval(sample);
    // A commit of 8 claims and 8 settles writes about 8 pages: the drain writes some 60,000 pages.
    // Drained, the WAL restarts every WAL_DRAIN_FRAMES pages or so, 10-15 times here; without the
    // drain, a passive checkpoint beside the busy writer copies but the WAL restarts only by
    // chance (3 generations seen, and a WAL file of 133 MB for half as many messages). The first
    // generation holds the sendBatch fill, written while the worker loaded.
    expect(salts.size).toBeGreaterThanOrEqual(8);
    expect(largest).toBeGreaterThan(0);
    expect(largest).toBeLessThan(100 * 1024 * 1024);
    console.log(`[wal] ${salts.size} WAL generations seen, largest WAL file ${(largest / 1024 / 1024).toFixed(1)} MB (drains at ${WAL_DRAIN_FRAMES} pages)`);
    expect((await spool.stats()).queues.jobs).toMatchObject({ pending: 0, activating: 0, processing: 0 });
  }, 150_000);

  it('a reader pinning the WAL does not stall the owner: a drain that cannot finish lets go at once', async () => {
    const spool = spools.open({ config: { queues: { jobs: { paused: true } } } });
    await spool.start();
    // 200 commits start the worker; then it reports ready.
    for (let i = 0; i < 250; i++) await spool.send('jobs', { i });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    // A long read in another connection (a backup, Litestream, a sqlite3 shell): checkpoints can
    // copy no frame past its snapshot, so no drain can finish while it lasts.
    const reader = spools.connect();
    reader.exec('BEGIN');
    reader.prepare('SELECT count(*) FROM queues').get();
    const pad = 'x'.repeat(2000);
    // Past WAL_DRAIN_FRAMES pages.
    for (let i = 0; i < 6; i++) await spool.sendBatch('jobs', Array.from({ length: 2000 }, (_, j) => ({ j, pad })));
    const times: number[] = [];
    const started = performance.now();
    while (performance.now() - started < 2000) {
      const t = performance.now();
      await spool.send('jobs', { x: 1 });
      times.push(performance.now() - t);
    }
    reader.exec('COMMIT');
    times.sort((a, b) => a - b);
    console.log(`[wal] pinned: ${times.length} sends in 2 s, p50 ${times[times.length >> 1]!.toFixed(2)} ms, max ${times.at(-1)!.toFixed(0)} ms`);
    // Before the fix, each 25 ms pass held the owner's commits for 250 ms: 8 such sends in 2 s.
    expect(times.filter((t) => t > 200)).toEqual([]);
  }, 60_000);
});
