/**
 * The maintenance worker thread: its own connection to the database, doing the work that would
 * otherwise pause the claiming thread.
 * - WAL checkpoints. The owner's connection turns SQLite's automatic checkpoint off once this
 *   worker is up; the worker runs a PASSIVE checkpoint every CHECKPOINT_EVERY_MS. A checkpoint
 *   copies pages into the database file and fsyncs (with `synchronous=NORMAL` the only fsyncs
 *   there are), which inside a commit on the main thread cost every writer a stall.
 * - Sweeps (runSweep in sweep.ts), asked for by the main thread, which announces the removed rows.
 * A PASSIVE checkpoint never waits for a lock, and each sweep step holds the write lock briefly,
 * so the main thread's commits wait at most one small step.
 *
 * A checkpoint that runs beside a busy writer never finishes (frames keep arriving), and SQLite
 * restarts the WAL from its beginning only at a write that finds every frame copied. So when a
 * pass finds the WAL past `drainFrames`, the worker drains it: a few passes first, each copying
 * what landed during the one before; then, holding the write lock it shares with the owner
 * (write-lock.ts), passes until one copies every frame. The owner's next commit restarts the WAL.
 * The worker holds the same lock for every sweep step, so the owner's commits wait for it (no
 * sleeping in SQLite's busy handler), and for no longer than one step.
 *
 * Messages in: `{ t: 'sweep', id, plan }`, `{ t: 'stop' }`. Out: `{ t: 'ready' }`,
 * `{ t: 'removed', rows, reason }`,
 * `{ t: 'swept', id, result }`, `{ t: 'failed', id, code, message }`, `{ t: 'error', code,
 * message }` (a checkpoint failed).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openConnection, type Durability, type FileIdentity } from '../db/connection.js';
import { attachCounters } from '../db/counters.js';
import { createRemoval } from '../db/removal.js';
import { messageOf, SpoolError } from '../errors.js';
import { toStorageError } from './committer.js';
import { runSweep, type SweepPlan } from './sweep.js';
import { workerWriteLock } from './write-lock.js';

/** How often the worker checkpoints the WAL, ms. */
export const CHECKPOINT_EVERY_MS = 25;
/** The longest a drain holds the write lock; past it the owner's commits go on, and a later pass drains. */
const DRAIN_HOLD_MAX_MS = 250;
/** Most checkpoint passes a drain runs before it holds commits, and the pass time that ends them early, ms. */
const UNHELD_PASSES = 4;
const QUICK_PASS_MS = 2;
/** The least pause between two sweep steps, ms. */
const MIN_PAUSE_MS = 2;
/**
 * A quiet moment for the sweep's WAL truncation: no commit of the owner's for QUIET_MS, looked for
 * over QUIET_WAIT_MS at most. Truncating a WAL of 24 MiB excludes writers for 10-30 ms here (the
 * file system frees its blocks), so it waits for a moment no commit would notice.
 */
const QUIET_MS = 10;
const QUIET_WAIT_MS = 1000;

/** What the worker is started with. */
export interface MaintenanceWorkerData {
  path: string;
  durability: Durability;
  /** The owner's file: the worker opens only that one. */
  identity: FileIdentity;
  /** WAL frames past which a pass drains the WAL (0: never, no committer to hold). */
  drainFrames: number;
  /** The write lock shared with the owner's committer (write-lock.ts). */
  writeLock: SharedArrayBuffer;
}

/** A message to the worker. */
export type ToWorker = { t: 'sweep'; id: number; plan: SweepPlan } | { t: 'stop' };

/** A message from the worker. */
export type FromWorker =
  | { t: 'ready' }
  | { t: 'removed'; rows: { id: string; queue: string; state: string }[]; reason: 'swept' | 'expired' }
  | { t: 'swept'; id: number; result: { deleted: number; freedPages: number; longestBatchMs: number } }
  | { t: 'failed'; id: number; code: string; message: string }
  | { t: 'error'; code: string; message: string };

const port = parentPort;
if (port) {
  const { path, durability, identity, drainFrames, writeLock } = workerData as MaintenanceWorkerData;
  const lock = workerWriteLock(writeLock);
  /** A one-slot array to sleep on (Atomics.wait) between the passes of a drain. */
  const nap = new Int32Array(new SharedArrayBuffer(4));
  // The owner migrated the file before it made this worker: a bare connection will do, and this
  // thread then never loads drizzle-orm (see removal.ts). It must be the owner's file, never a
  // new one at the path (the owner's was deleted).
  const db = openConnection(path, durability, {}, identity);
  // This thread checkpoints every CHECKPOINT_EVERY_MS: SQLite's automatic checkpoint inside a
  // sweep step's commit would only lengthen the step (3-16 ms more, measured).
  db.sqlite.pragma('wal_autocheckpoint = 0');
  const repo = createRemoval(db.sqlite, attachCounters(db.sqlite));
  let stopping = false;
  /**
   * The WAL size that starts a drain: drainFrames, or after a drain that could not finish (a
   * reader pinned the WAL), another drainFrames past where it stood, so a pinned WAL does not
   * hold the owner's commits at every pass.
   */
  let drainAt = drainFrames;
  let lastFrames = 0;
  let checkpointTimer: NodeJS.Timeout | undefined;
  let reported = false;
  const post = (message: FromWorker) => port.postMessage(message);

  const checkpoint = () => {
    clearTimeout(checkpointTimer);
    checkpointTimer = undefined;
    if (stopping) return;
    try {
      const { frames } = repo.checkpointPassive();
      // A WAL that restarted since (it is shorter) is drained again at the usual size.
      if (frames < lastFrames) drainAt = drainFrames;
      lastFrames = frames;
      if (drainFrames > 0 && frames >= drainAt) drainAt = drain() ? drainFrames : frames + drainFrames;
      reported = false;
    } catch (error) {
      // Reported once per episode; the next tick tries again.
      if (!reported) post({ t: 'error', code: toStorageError(error).code, message: `WAL checkpoint failed: ${messageOf(error)}` });
      reported = true;
    }
    checkpointTimer = setTimeout(checkpoint, CHECKPOINT_EVERY_MS);
  };

  /**
   * Checkpoints, then, holding the write lock, checkpoints until a pass copies every frame; true if
   * one did. Only another process's commit can land meanwhile: the loop then naps a millisecond
   * and passes again, while passes make progress, for DRAIN_HOLD_MAX_MS at most.
   */
  const drain = (): boolean => {
    // Unheld passes first, while each is slower than QUICK_PASS_MS: each copies what landed during
    // the one before, so the held pass below has only a short tail to copy and sync.
    for (let i = 0; i < UNHELD_PASSES; i++) {
      const started = performance.now();
      repo.checkpointPassive();
      if (performance.now() - started < QUICK_PASS_MS) break;
    }
    return lock.holding(() => {
      const started = performance.now();
      let before = -1;
      for (;;) {
        const { frames, copied } = repo.checkpointPassive();
        if (copied >= frames) return true;
        // No progress: a reader's snapshot (another process) pins the frames it still needs, and
        // holding commits cannot change that.
        if (copied <= before || performance.now() - started > DRAIN_HOLD_MAX_MS) return false;
        before = copied;
        Atomics.wait(nap, 0, 0, 1);
      }
    });
  };

  /** Holds off as long as the last step held the lock, so the main thread's commits get it next. */
  const pause = async (lastStepMs: number) => {
    await new Promise<void>((resolve) => setTimeout(resolve, Math.max(MIN_PAUSE_MS, Math.ceil(lastStepMs))));
    if (stopping) throw new SpoolError('CLOSED', 'The spool closed during the maintenance sweep');
  };

  /** True once the owner has gone QUIET_MS without a commit; false if that did not happen within QUIET_WAIT_MS. */
  const quiet = async (): Promise<boolean> => {
    const until = performance.now() + QUIET_WAIT_MS;
    let seen = lock.ownerCommits();
    while (performance.now() < until) {
      await new Promise<void>((resolve) => setTimeout(resolve, QUIET_MS));
      if (stopping) throw new SpoolError('CLOSED', 'The spool closed during the maintenance sweep');
      const now = lock.ownerCommits();
      if (now === seen) return true;
      seen = now;
    }
    return false;
  };

  port.on('message', (message: ToWorker) => {
    if (message.t === 'stop') {
      stopping = true;
      clearTimeout(checkpointTimer);
      // Let a sweep in progress reach its next pause, then close.
      setImmediate(() => {
        db.close();
        port.close();
      });
      return;
    }
    runSweep(repo, db.sqlite, message.plan, { pause, exclusive: lock.holding, quiet, removed: (rows, reason) => post({ t: 'removed', rows, reason }), checkpointSteps: false }).then(
      (result) => post({ t: 'swept', id: message.id, result }),
      (error: unknown) => {
        const coded = toStorageError(error);
        post({ t: 'failed', id: message.id, code: coded.code, message: coded.message });
      },
    );
  });
  post({ t: 'ready' });
  checkpoint();
}
