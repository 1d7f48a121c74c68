/**
 * One maintenance sweep (the CQS "purge" concern): deletes expired done rows and old dead letters,
 * then old history and expired FIFO deduplication ids, in small batches; then returns free pages
 * to the OS with incremental_vacuum steps and truncates the WAL. Never a blocking full VACUUM. It runs in the maintenance worker thread (see
 * maintenance-worker.ts), so its work never runs on the thread that claims; between steps it
 * pauses, which lets the worker hear a stop, and a writer on the main thread take the lock.
 */
import type Database from 'better-sqlite3';
import type { Removal, RemovedRow } from '../db/removal.js';
import { isBusy, runTransaction } from '../db/transaction.js';

/** Rows deleted per transaction: each holds the write lock, so small enough to keep it brief. */
export const SWEEP_BATCH = 200;
/** Pages returned to the OS per incremental_vacuum step. */
export const VACUUM_STEP_PAGES = 128;
/**
 * Tries of a step that finds the write lock taken (each waits the 20 ms busy timeout, then 5 ms):
 * about a second in all. The owner commits many times a second, each briefly, but on a loaded
 * machine a run of its commits can hold the lock for a few hundred ms; a lock held for long
 * (another process's transaction) still ends the sweep with STORAGE_BUSY, as for purge.
 */
export const SWEEP_BUSY_TRIES = 40;
const BUSY_PAUSE_MS = 5;

/** The statements a sweep runs: the repository's on the owner's connection, or the worker's own. */
export type SweepStore = Pick<Removal, 'sweepBatch' | 'expiredSeqs' | 'deleteExpired' | 'sweepHistory' | 'sweepDedupeWindow' | 'freePages' | 'incrementalVacuumOn' | 'incrementalVacuum' | 'checkpointPassive' | 'checkpointTruncate'>;

/** What to sweep: rows finished before these times (epoch ms); null keeps that state forever. */
export interface SweepPlan {
  doneBefore: number;
  deadBefore: number | null;
  /** Queues whose messages sent before `before` expire in any state, in flight too (SQS retention). */
  expire: { queue: string; before: number }[];
  /** Timelines of deleted messages gone before this are dropped from the message history. */
  historyBefore?: number;
  /** FIFO deduplication ids whose window ended by this time are forgotten (dedupe_window). */
  dedupeAt?: number;
}

/** What a sweep did. */
export interface SweepResult {
  deleted: number;
  freedPages: number;
  /** The longest single step (a delete batch, a vacuum step, a checkpoint), ms. */
  longestBatchMs: number;
}

/**
 * Runs one sweep; `pause(lastStepMs)` runs between steps (and may throw to end the sweep). In the
 * worker it waits as long as the last step held the lock (at least a little), so that the main
 * thread, whose commits wait in SQLite's busy handler meanwhile, always gets the lock next.
 */
export async function runSweep(
  repo: SweepStore,
  sqlite: Database.Database,
  plan: SweepPlan,
  io: {
    pause(lastStepMs: number): Promise<void>;
    removed(rows: RemovedRow[], reason: 'swept' | 'expired'): void;
    /** True where no other thread checkpoints (the in-thread fallback): checkpoint each batch then. */
    checkpointSteps: boolean;
    /** Runs a step with the owner's commits held (the worker's); in-thread, steps run as they are. */
    exclusive?: <T>(step: () => T) => T;
    /** Resolves true at a moment the owner is not committing, false if none came soon (the worker's; in-thread, always now). */
    quiet?: () => Promise<boolean>;
  },
): Promise<SweepResult> {
  let longest = 0;
  let last = 0;
  // A step that writes holds the owner's write lock (io.exclusive); a PASSIVE checkpoint takes
  // no lock, so it runs beside the owner's commits.
  const timed = async <T>(step: () => T, writes = true): Promise<T> => {
    for (let tries = 1; ; tries++) {
      const started = performance.now();
      try {
        return io.exclusive && writes ? io.exclusive(step) : step();
      } catch (error) {
        if (!isBusy(error) || tries >= SWEEP_BUSY_TRIES) throw error;
      } finally {
        last = performance.now() - started;
        longest = Math.max(longest, last);
      }
      await new Promise((resolve) => setTimeout(resolve, BUSY_PAUSE_MS));
    }
  };

  async function batches(work: () => RemovedRow[]): Promise<number> {
    let total = 0;
    for (;;) {
      const rows = await timed(() => runTransaction(sqlite, work));
      total += rows.length;
      if (rows.length === 0) return total;
      io.removed(rows, 'swept');
      await io.pause(last);
      if (!io.checkpointSteps) continue;
      // Checkpoint each batch's few pages as a step of its own, so that no later checkpoint
      // has ~1000 pages to copy at once inside a commit.
      await timed(() => repo.checkpointPassive(), false);
      await io.pause(last);
    }
  }

  let deleted = await batches(() => repo.sweepBatch('done', plan.doneBefore, SWEEP_BATCH));
  if (plan.deadBefore !== null) {
    const deadBefore = plan.deadBefore;
    deleted += await batches(() => repo.sweepBatch('dead', deadBefore, SWEEP_BATCH));
  }
  for (const { queue, before } of plan.expire) {
    for (;;) {
      // Found outside the transaction (no index serves it: a read in the worker, holding no lock),
      // deleted inside it, where the delete checks queue and age again.
      const seqs = repo.expiredSeqs(queue, before, SWEEP_BATCH);
      if (seqs.length === 0) break;
      const rows = await timed(() => runTransaction(sqlite, () => repo.deleteExpired(seqs, queue, before)));
      deleted += rows.length;
      if (rows.length) io.removed(rows, 'expired');
      await io.pause(last);
    }
  }
  /** Deletes rows that are not messages (neither counted in `deleted` nor announced), a batch per step. */
  const sweepRows = async (step: () => number): Promise<number> => {
    let total = 0;
    for (;;) {
      const n = await timed(() => runTransaction(sqlite, step));
      total += n;
      if (n < SWEEP_BATCH) return total;
      await io.pause(last);
    }
  };
  const { historyBefore, dedupeAt } = plan;
  const historyDeleted = historyBefore === undefined ? 0 : await sweepRows(() => repo.sweepHistory(historyBefore, SWEEP_BATCH));
  // An id's entry outlives its message; only its window keeps it, and a send adds one each.
  const dedupeDeleted = dedupeAt === undefined ? 0 : await sweepRows(() => repo.sweepDedupeWindow(dedupeAt, SWEEP_BATCH));
  let freedPages = 0;
  // Outside auto_vacuum = INCREMENTAL a step is a no-op and the freelist never shrinks, so the
  // loop would never end; the free pages then stay for SQLite to reuse.
  for (let free = repo.incrementalVacuumOn() ? repo.freePages() : 0; free > 0; ) {
    const step = Math.min(free, VACUUM_STEP_PAGES);
    await timed(() => repo.incrementalVacuum(step));
    const after = repo.freePages();
    // A step that freed nothing would be repeated forever.
    if (after >= free) break;
    freedPages += free - after;
    free = after;
    await io.pause(last);
    if (!io.checkpointSteps) continue;
    await timed(() => repo.checkpointPassive(), false);
    await io.pause(last);
  }
  if (freedPages > 0 || deleted > 0 || historyDeleted > 0 || dedupeDeleted > 0) {
    // Copy first (no lock needed), so that the truncation, which excludes writers, is brief.
    // Without a quiet moment it is left out: the WAL then stays within journal_size_limit, to
    // which each restart of it trims the file.
    await timed(() => repo.checkpointPassive(), false);
    if (!io.quiet || (await io.quiet())) await timed(() => repo.checkpointTruncate());
  }
  return { deleted, freedPages, longestBatchMs: Math.round(longest * 100) / 100 };
}
