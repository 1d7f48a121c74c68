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
 * restarts the WAL from its beginning only at a write that finds every frame copied. So after
 * each pass the worker reports the WAL's frames and how many are copied (`wal`); when the WAL
 * has grown past a limit, the main thread holds its commits for one short pass (`drain`, see
 * maintenance.ts), the pass completes, and the next commit restarts the WAL.
 *
 * Messages in: `{ t: 'sweep', id, plan }`, `{ t: 'drain' }`, `{ t: 'stop' }`. Out:
 * `{ t: 'ready' }`, `{ t: 'wal', frames, copied }`, `{ t: 'removed', rows, reason }`,
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

/** How often the worker checkpoints the WAL, ms. */
export const CHECKPOINT_EVERY_MS = 25;
/** The least pause between two sweep steps, ms. */
const MIN_PAUSE_MS = 2;

/** What the worker is started with. */
export interface MaintenanceWorkerData {
  path: string;
  durability: Durability;
  /** The owner's file: the worker opens only that one. */
  identity: FileIdentity;
}

/** A message to the worker. */
export type ToWorker = { t: 'sweep'; id: number; plan: SweepPlan } | { t: 'drain' } | { t: 'stop' };

/** A message from the worker. */
export type FromWorker =
  | { t: 'ready' }
  | { t: 'wal'; frames: number; copied: number }
  | { t: 'removed'; rows: { id: string; queue: string; state: string }[]; reason: 'swept' | 'expired' }
  | { t: 'swept'; id: number; result: { deleted: number; freedPages: number; longestBatchMs: number } }
  | { t: 'failed'; id: number; code: string; message: string }
  | { t: 'error'; code: string; message: string };

const port = parentPort;
if (port) {
  const { path, durability, identity } = workerData as MaintenanceWorkerData;
  // The owner migrated the file before it made this worker: a bare connection will do, and this
  // thread then never loads drizzle-orm (see removal.ts). It must be the owner's file, never a
  // new one at the path (the owner's was deleted).
  const db = openConnection(path, durability, {}, identity);
  const repo = createRemoval(db.sqlite, attachCounters(db.sqlite));
  let stopping = false;
  let checkpointTimer: NodeJS.Timeout | undefined;
  let reported = false;
  const post = (message: FromWorker) => port.postMessage(message);

  const checkpoint = () => {
    clearTimeout(checkpointTimer);
    checkpointTimer = undefined;
    if (stopping) return;
    try {
      const { frames, copied } = repo.checkpointPassive();
      if (frames > 0) post({ t: 'wal', frames, copied });
      reported = false;
    } catch (error) {
      // Reported once per episode; the next tick tries again.
      if (!reported) post({ t: 'error', code: toStorageError(error).code, message: `WAL checkpoint failed: ${messageOf(error)}` });
      reported = true;
    }
    checkpointTimer = setTimeout(checkpoint, CHECKPOINT_EVERY_MS);
  };

  /** Holds off as long as the last step held the lock, so the main thread's commits get it next. */
  const pause = async (lastStepMs: number) => {
    await new Promise<void>((resolve) => setTimeout(resolve, Math.max(MIN_PAUSE_MS, Math.ceil(lastStepMs))));
    if (stopping) throw new SpoolError('CLOSED', 'The spool closed during the maintenance sweep');
  };

  port.on('message', (message: ToWorker) => {
    // The main thread holds its commits: one pass now copies what is left, and completes.
    if (message.t === 'drain') return checkpoint();
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
    runSweep(repo, db.sqlite, message.plan, { pause, removed: (rows, reason) => post({ t: 'removed', rows, reason }), checkpointSteps: false }).then(
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
