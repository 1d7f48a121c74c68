/**
 * Named crash points (src/crash-points.ts): for every point and n = 1..3, a child running the
 * real workload is killed by SIGKILL at the n-th hit, a clean child drains the file, and the
 * checker asserts every invariant (I1–I9). Reproduce a failure with SPOOL_SEED=<seed>. The schedule's
 * own points (schedule.beforeCommit/afterCommit) are killed in schedules.test.ts, which waits for ticks.
 */
import { appendFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { CrashPoint } from '../../src/crash-points.js';
import type { ChildOptions } from './harness/child.js';
import { check, formatSummary } from './harness/checker.js';
import { FILES, TICKS } from './harness/protocol.js';
import { createRunDir, createRunRecorder, drainAndCheck, runChild } from './harness/run.js';

const POINTS: CrashPoint[] = [
  'enqueue.beforeCommit',
  'enqueue.afterCommit',
  'batch.midInsert',
  'claim.afterCommit',
  'handler.started',
  'complete.beforeCommit',
  'complete.afterCommit',
  'retry.scheduled',
  'dead.afterCommit',
  'recovery.midway',
];

const BASE_SEED = process.env.SPOOL_SEED !== undefined ? Number(process.env.SPOOL_SEED) : Math.floor(Math.random() * 2 ** 31);

/** Rows in flight on disk. */
function inflight(dir: string): number {
  const db = new Database(`${dir}/${FILES.db}`, { fileMustExist: true });
  try {
    return db.prepare(`SELECT count(*) FROM messages WHERE state IN ('activating', 'processing')`).pluck().get() as number;
  } finally {
    db.close();
  }
}

/** Kills a child at `point`:`n`, drains with a clean child, checks; returns what to assert. */
async function crashAt(point: CrashPoint, n: number) {
  const seed = (BASE_SEED + POINTS.indexOf(point) * 7919 + n) % 2 ** 31;
  const label = `point=${point}:${n} seed=${seed} (reproduce: SPOOL_SEED=${BASE_SEED})`;
  const { dir, cleanup } = createRunDir();
  const recorder = createRunRecorder(dir);
  let run = 0;
  let inflightBefore = 0;

  if (point === 'recovery.midway') {
    // Recovery needs rows in flight: handlers that never finish, killed at the 6th start.
    const prep: ChildOptions = { dir, run: run++, mode: 'produce+consume', seed, messages: 40, keepDone: false, stall: true, maxLifeMs: 30_000 };
    const exit = await runChild(prep, { crashPoint: 'handler.started:6', timeoutMs: 40_000 });
    recorder.record(prep, exit, { crashPoint: 'handler.started:6' });
    expect(exit.signal, `${label}: the prep child should die at handler.started:6\n${exit.stderr}`).toBe('SIGKILL');
    inflightBefore = inflight(dir);
    expect(inflightBefore, label).toBeGreaterThanOrEqual(6);
  }

  const options: ChildOptions = {
    dir,
    run: run++,
    mode: point === 'recovery.midway' ? 'drain' : 'produce+consume',
    seed,
    messages: 60,
    keepDone: n === 2,
    exitWhenIdle: true,
    maxLifeMs: 30_000,
  };
  const exit = await runChild(options, { crashPoint: `${point}:${n}`, timeoutMs: 40_000 });
  const afterCrash = recorder.record(options, exit, { crashPoint: `${point}:${n}` });
  const inflightAfterCrash = point === 'recovery.midway' ? inflight(dir) : 0;
  const result = await drainAndCheck(dir, run, seed, recorder);
  const report = `${label}\n${formatSummary(result.summary)}\n${result.details.join('\n')}\n${result.problems.join('\n')}\nrun directory: ${dir}`;
  return { exit, afterCrash, result, report, cleanup, inflightBefore, inflightAfterCrash };
}

describe('crash points', () => {
  for (const point of POINTS) {
    it(`loses nothing when killed at ${point} (n = 1..3)`, async () => {
      // The three runs use separate files; run them side by side (each child mostly waits).
      const runs = await Promise.all([1, 2, 3].map((n) => crashAt(point, n)));
      for (const c of runs) {
        // The workload reaches every point: a clean exit means the point was never hit.
        expect(c.exit.signal, `${c.report}\nthe child was not killed at the crash point\n${c.exit.stderr}`).toBe('SIGKILL');
        expect(c.exit.killedByParent, c.report).toBe(false);
        expect(c.afterCrash.integrity, c.report).toBe('ok');
        if (point === 'recovery.midway') {
          // Recovery is one transaction: killed midway, every row is still in flight.
          expect(c.inflightAfterCrash, c.report).toBe(c.inflightBefore);
        }
        expect(c.result.problems, c.report).toEqual([]);
        expect(c.result.summary.violations, c.report).toEqual({ I1: 0, I2: 0, I3: 0, I4: 0, I5: 0, I6: 0, I7: 0, I8: 0, I9: 0 });
        expect(c.result.summary.refused + c.result.summary.storageErrors, c.report).toBe(0);
        // Something was sent (acked or not) before the kill, so the checker had work to do.
        expect(c.result.summary.messages + c.result.summary.unacked, c.report).toBeGreaterThan(0);
        c.cleanup();
      }
    }, 120_000);
  }
});

describe('checker', () => {
  it('flags a lost, a phantom, a stuck and a split-brain row, and a tick sent twice or skipped', async () => {
    const { dir, cleanup } = createRunDir();
    const recorder = createRunRecorder(dir);
    const options: ChildOptions = { dir, run: 0, mode: 'produce+consume', seed: BASE_SEED, messages: 60, keepDone: true, exitWhenIdle: true };
    recorder.record(options, await runChild(options), {});
    const clean = await drainAndCheck(dir, 1, BASE_SEED, recorder);
    expect(clean.summary.ok, [formatSummary(clean.summary), ...clean.details].join('\n')).toBe(true);

    const db = new Database(`${dir}/${FILES.db}`, { fileMustExist: true });
    const [poison, other] = db.prepare(`SELECT id FROM messages WHERE state = 'dead' LIMIT 2`).pluck().all() as string[];
    const done = db.prepare(`SELECT id FROM messages WHERE state = 'done' LIMIT 1`).pluck().get() as string;
    expect(poison && other && done, 'the run left two dead letters and a done row to tamper with').toBeTruthy();
    // Lost, but with its count kept right: only the loss itself shows.
    db.prepare(`UPDATE counters SET n = n - 1 WHERE (scope, name) = (SELECT queue, state FROM messages WHERE id = ?)`).run(poison);
    db.prepare('DELETE FROM messages WHERE id = ?').run(poison);
    db.prepare(`UPDATE messages SET payload = json_set(payload, '$.text', 'tampered') WHERE id = ?`).run(other);
    // Split brain: the row moved without its count (as a write outside the repository would).
    db.prepare(`UPDATE messages SET state = 'pending' WHERE id = ?`).run(done);
    const anchor = db.prepare(`SELECT anchor FROM schedules WHERE name = ?`).pluck().get(TICKS.schedule) as number;
    db.close();
    // A tick handled under two message ids, and one far beyond the last tick, with none between.
    const tick = (id: string, k: number) => JSON.stringify({ r: 9, id, at: anchor + k * TICKS.everyMs });
    appendFileSync(`${dir}/${FILES.ticks}`, `${tick('901', 1)}\n${tick('902', 1)}\n${tick('903', 1000)}\n`);

    const { summary, details } = check(dir);
    expect(summary.lost, details.join('\n')).toBe(1);
    expect(summary.phantom, details.join('\n')).toBe(1);
    expect(summary.stuck, details.join('\n')).toBe(1);
    // Both sides of the moved row disagree with their counts (done is one short, pending one over),
    // and the row is pending with a finished_at, which would hide it from its group's index.
    expect(summary.violations.I8, details.join('\n')).toBe(3);
    expect(details.join('\n')).toMatch(new RegExp(`${done}: state=pending finished_at=\\d+`));
    expect(summary.violations.I9, details.join('\n')).toBe(2);
    expect(summary.ok).toBe(false);
    cleanup();
  }, 60_000);
});
