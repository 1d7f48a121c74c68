/**
 * Requeue and purge of many rows, through the public API, with progress. Both run beside a live
 * owner, so neither holds the write lock for long: purge deletes in the API's 1000-row
 * transactions; a bulk requeue moves one letter per transaction (the API's one-transaction
 * requeue({ queue }) would hold the lock for seconds at 100k letters, stalling the owner's commits).
 */
import type { Spool } from '../index.js';
import { isBusyError, whileBusy } from './busy.js';
import type { Progress } from './progress.js';

/** How often a purge's progress is read back from the file, ms. */
const PURGE_POLL_MS = 100;

/**
 * Requeues the dead letters of `queue` (of every queue when undefined) that exist now, one
 * transaction each; resolves with how many moved. A letter that stays dead (a live message holds
 * its idempotency key) is not counted, as in requeue().
 */
export async function requeueAll(spool: Spool, queue: string | undefined, progress?: Progress): Promise<number> {
  // The letters present now: those that die while this runs are left for the next requeue, as
  // with requeue({ queue }), which also lists before it moves.
  const ids = (await spool.dead(queue, { limit: Number.MAX_SAFE_INTEGER })).map((m) => m.id);
  progress?.start(ids.length, queue === undefined ? 'requeue (all queues)' : `requeue ${queue}`);
  let moved = 0;
  try {
    for (const [i, id] of ids.entries()) {
      moved += await whileBusy(() => spool.requeue(id));
      progress?.update(i + 1);
    }
  } finally {
    progress?.stop();
  }
  return moved;
}

/**
 * purge() with each batch retrying a held write lock as the other CLI writes do (whileBusy): the
 * API's purge() waits only 20 ms for the lock and rejects with STORAGE_BUSY at the batch that met
 * it, after the earlier batches were deleted. Those are counted from the message.removed events
 * (this spool is never started, so only the purge removes rows), and the purge goes on: a busy
 * owner slows it down, and each batch gets the full retry time. A real failure still rejects.
 */
async function purgeRetrying(spool: Spool, queue: string, state: 'pending' | 'dead' | 'done'): Promise<number> {
  let purged = 0;
  const counting = spool.events$.subscribe((event) => {
    if (event.type === 'message.removed' && event.reason === 'purged' && event.queue === queue) purged += 1;
  });
  try {
    for (;;) {
      const before = purged;
      try {
        await whileBusy(() => spool.purge(queue, { state }));
        return purged;
      } catch (error) {
        // whileBusy gave up: rethrow unless batches were deleted since, which restarts its clock.
        if (!isBusyError(error) || purged === before) throw error;
      }
    }
  } finally {
    counting.unsubscribe();
  }
}

/**
 * Purges `queue`'s rows in `state` with the API's purge(), a held lock retried per batch; with `progress`, polls the remaining
 * count between its batches (it yields after each). Rows that a live owner claims or sends
 * meanwhile move that count too, so the bar is an estimate; the resolved count is exact.
 */
export async function purgeWithProgress(
  spool: Spool,
  queue: string,
  state: 'pending' | 'dead' | 'done',
  progress?: Progress,
): Promise<number> {
  if (!progress) return purgeRetrying(spool, queue, state);
  const remaining = async () => (await spool.stats()).queues[queue]?.[state] ?? 0;
  const total = { units: await remaining(), started: false };
  let polling = false;
  // The bar starts at the first poll: a purge that fails its validation draws nothing.
  const timer = setInterval(() => {
    if (polling) return;
    polling = true;
    void remaining()
      .then((left) => {
        if (!total.started) progress.start(total.units, `purge ${queue} (${state})`);
        total.started = true;
        // Sends during the purge can raise the count; the bar's total grows with them.
        total.units = Math.max(total.units, left);
        progress.update(total.units - left, total.units);
      })
      // A failed read only skips one redraw; purge() reports real failures itself.
      .catch(() => {})
      .finally(() => (polling = false));
  }, PURGE_POLL_MS);
  try {
    const purged = await purgeRetrying(spool, queue, state);
    if (!total.started) progress.start(total.units, `purge ${queue} (${state})`);
    total.started = true;
    progress.update(purged, Math.max(total.units, purged));
    return purged;
  } finally {
    clearInterval(timer);
    progress.stop();
  }
}
