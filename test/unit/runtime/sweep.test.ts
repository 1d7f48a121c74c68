/** runSweep's steps: which hold the owner's write lock, and when the WAL is truncated. */
import { existsSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type DbHandle } from '../../../src/db/client.js';
import { attachCounters } from '../../../src/db/counters.js';
import { createRemoval } from '../../../src/db/removal.js';
import { runSweep } from '../../../src/runtime/sweep.js';
import { tempDb } from '../../helpers/temp-db.js';

describe('runSweep', () => {
  let temp: ReturnType<typeof tempDb>;
  let db: DbHandle;

  afterEach(() => {
    db.close();
    temp.cleanup();
  });

  /**
   * A file with `n` dead letters finished at time 0, and the sweep's store over it. `autoVacuum:
   * 'none'` gives the file a `.dump` restore makes: Spool's schema under auto_vacuum = NONE.
   */
  function withDeadLetters(n: number, { autoVacuum = 'incremental' }: { autoVacuum?: 'incremental' | 'none' } = {}) {
    temp = tempDb();
    if (autoVacuum === 'none') {
      openDatabase(temp.path, 'normal').close();
      const conn = new Database(temp.path);
      conn.exec('PRAGMA auto_vacuum = NONE; VACUUM;');
      conn.close();
    }
    db = openDatabase(temp.path, 'normal');
    const insert = db.sqlite.prepare(
      `INSERT INTO messages (legacy_id, queue, payload, state, attempt, deliveries, visible_at, last_error, ready, created_at, updated_at, finished_at)
       VALUES (?, 'jobs', ?, 'dead', 1, 1, 0, '{"code":"X","message":"x"}', 0, 0, 0, 0)`,
    );
    const pad = JSON.stringify('x'.repeat(400));
    db.sqlite.transaction(() => {
      for (let i = 0; i < n; i++) insert.run(`dead-${i}`, pad);
    })();
    return createRemoval(db.sqlite, attachCounters(db.sqlite));
  }

  const walBytes = () => (existsSync(`${temp.path}-wal`) ? statSync(`${temp.path}-wal`).size : 0);
  const plan = { doneBefore: 1, deadBefore: 1, expire: [] };

  function io(quiet: boolean) {
    const steps: string[] = [];
    return {
      steps,
      io: {
        pause: async () => undefined,
        removed: () => undefined,
        checkpointSteps: false,
        exclusive: <T>(step: () => T): T => {
          steps.push('locked');
          return step();
        },
        quiet: async () => {
          steps.push('quiet?');
          return quiet;
        },
      },
    };
  }

  it('holds the write lock for each step that writes, never for a passive checkpoint, and truncates the WAL at a quiet moment', async () => {
    const repo = withDeadLetters(1000);
    const { steps, io: withQuiet } = io(true);
    const result = await runSweep(repo, db.sqlite, plan, withQuiet);
    expect(result.deleted).toBe(1000);
    expect(result.freedPages).toBeGreaterThan(0);
    // One (empty) batch of done rows; 5 batches of 200 dead letters and an empty one; the vacuum
    // steps; then the quiet check and the truncation. The passive checkpoint before it is unlocked.
    const vacuumSteps = Math.ceil(result.freedPages / 128);
    expect(steps).toEqual([...Array<string>(1 + 6 + vacuumSteps).fill('locked'), 'quiet?', 'locked']);
    expect(walBytes()).toBe(0);
  });

  it('leaves the WAL as it is when no quiet moment comes', async () => {
    const repo = withDeadLetters(1000);
    const { steps, io: busy } = io(false);
    const result = await runSweep(repo, db.sqlite, plan, busy);
    expect(result.deleted).toBe(1000);
    expect(steps.at(-1)).toBe('quiet?');
    expect(walBytes()).toBeGreaterThan(0);
    // Everything was still copied into the database: nothing waits in the WAL alone.
    const [row] = db.sqlite.pragma('wal_checkpoint(PASSIVE)') as { log: number; checkpointed: number }[];
    expect(row!.checkpointed).toBe(row!.log);
  });

  it('finishes on a file without incremental auto-vacuum, leaving its free pages for reuse', async () => {
    const repo = withDeadLetters(1000, { autoVacuum: 'none' });
    expect(db.sqlite.pragma('auto_vacuum', { simple: true })).toBe(0);
    // A pause that yields to the event loop, as the worker's does: a sweep that never ends then
    // fails on the test timeout instead of hanging the run.
    const { io: yielding } = io(true);
    const result = await runSweep(repo, db.sqlite, plan, { ...yielding, pause: () => new Promise<void>((resolve) => setImmediate(resolve)) });
    expect(result.deleted).toBe(1000);
    expect(result.freedPages).toBe(0);
    expect(repo.freePages()).toBeGreaterThan(0);
  });
});
