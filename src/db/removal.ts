/**
 * Removing message rows in bulk (purge, retention, the sweep) with their count deltas, a group's
 * next head when its live message goes, and the sweep's space and WAL steps. Raw prepared SQL
 * only, no drizzle: the maintenance worker runs these on its own connection, and its thread then
 * loads better-sqlite3 and a few small modules instead of drizzle-orm's 400 files (see
 * maintenance-worker.ts). The repository builds on the same object for the owner's connection.
 */
import type Database from 'better-sqlite3';
import type { MessageState } from '../../machines/message.machine.js';
import type { Counters } from './counters.js';

/** A deleted row, as announced by `message.removed`. */
export interface RemovedRow {
  id: string;
  queue: string;
  state: MessageState;
}

/** The public id of a row. */
export function idOf(seq: number, legacyId: string | null): string {
  return legacyId ?? String(seq);
}

const LIVE: readonly MessageState[] = ['pending', 'activating', 'processing'];

/**
 * A row is live (pending or in flight) exactly while its finished_at is NULL: the test the
 * messages_group and messages_dedupe indexes are built on, which a query (or an upsert's conflict
 * target) must name for SQLite to use them. Unlike a test of `state`, the claim does not set it.
 */
export const LIVE_ROW = 'finished_at IS NULL';

/** The rows of a seq list (a JSON array bound as one value): one statement for any batch size. */
const DELETE_SEQS = 'DELETE FROM messages WHERE seq IN (SELECT value FROM json_each(?))';
const RETURNING = 'RETURNING seq, legacy_id AS legacyId, queue, state, grp, head';

/** Creates the removal statements over a connection and its counters. */
export function createRemoval(sqlite: Database.Database, deltas: Counters) {
  const promoteHead = sqlite.prepare(
    `UPDATE messages SET head = 1 WHERE head = 0 AND seq = (SELECT seq FROM messages WHERE queue = ? AND grp = ?
       AND ${LIVE_ROW} ORDER BY seq LIMIT 1)`,
  );
  const deleteSeqs = sqlite.prepare(`${DELETE_SEQS} ${RETURNING}`);
  const deleteSettled = sqlite.prepare(`${DELETE_SEQS} AND state IN ('pending', 'dead', 'done') ${RETURNING}`);
  const deleteFenced = sqlite.prepare(`${DELETE_SEQS} AND state IN ('pending', 'dead', 'done') AND state = coalesce(?, state) AND queue = coalesce(?, queue) ${RETURNING}`);
  const deleteExpired = sqlite.prepare(`${DELETE_SEQS} AND queue = ? AND created_at < ? ${RETURNING}`);
  const expiredSeqs = sqlite.prepare('SELECT seq FROM messages WHERE queue = ? AND created_at < ? ORDER BY seq LIMIT ?').pluck();
  const finishedSeqs = sqlite
    .prepare('SELECT seq FROM messages WHERE state = ? AND finished_at IS NOT NULL AND finished_at < ? ORDER BY finished_at LIMIT ?')
    .pluck();
  const sweepDedupeWindow = sqlite.prepare(
    'DELETE FROM dedupe_window WHERE (queue, key) IN (SELECT queue, key FROM dedupe_window WHERE expires_at <= ? LIMIT ?)',
  );
  const sweepHistory = sqlite.prepare(
    'DELETE FROM message_history WHERE seq IN (SELECT seq FROM message_history WHERE finished_at < ? ORDER BY finished_at LIMIT ?)',
  );

  /**
   * A group's next live message heads it; a pending one becomes claimable (an arrival for waiters).
   * Its callers change a row of the group first, so the fold (beforeChange) has already run.
   */
  function promoteGroup(queue: string, group: string): void {
    if (promoteHead.run(queue, group).changes > 0) deltas.arrived(queue);
  }

  /** Runs a DELETE … RETURNING of `seqs`, with their count deltas and their groups' next heads. */
  // A deleted message's timeline goes with it (a purge must free its space): only a message that
  // completes (its row deleted at done) keeps its timeline, in message_history.
  function remove(statement: Database.Statement, seqs: number[], ...also: unknown[]): RemovedRow[] {
    if (seqs.length === 0) return [];
    deltas.beforeChange();
    const removed = statement.all(JSON.stringify(seqs), ...also) as { seq: number; legacyId: string | null; queue: string; state: MessageState; grp: string | null; head: number }[];
    return removed.map((r) => {
      deltas.add(r.queue, r.state, -1);
      // Only the head's leaving moves the group on: a waiting message deleted beside a head in
      // flight must not promote an older one that waits too (a requeued letter), or two would run.
      if (r.grp !== null && r.head === 1 && LIVE.includes(r.state)) promoteGroup(r.queue, r.grp);
      return { id: idOf(r.seq, r.legacyId), queue: r.queue, state: r.state };
    });
  }

  return {
    promoteGroup,
    /** Deletes the rows `seqs` in whatever state; returns them. */
    removeSeqs: (seqs: number[]): RemovedRow[] => remove(deleteSeqs, seqs),
    /**
     * Deletes the messages `seqs` that are pending, dead or done (never in flight), and only those
     * still in `fence.state` and `fence.queue` when given; returns them.
     */
    removeSettled: (seqs: number[], fence: { state?: 'pending' | 'dead' | 'done'; queue?: string } = {}): RemovedRow[] =>
      fence.state === undefined && fence.queue === undefined ? remove(deleteSettled, seqs) : remove(deleteFenced, seqs, fence.state ?? null, fence.queue ?? null),
    /** Up to `limit` rows of `queue` sent before `before`, in any state (retention). */
    expiredSeqs(queue: string, before: number, limit: number): number[] {
      return expiredSeqs.all(queue, before, limit) as number[];
    },
    /** Deletes those of `seqs` still in `queue` and sent before `before`; returns them. */
    deleteExpired: (seqs: number[], queue: string, before: number): RemovedRow[] => remove(deleteExpired, seqs, queue, before),
    /** Deletes up to `limit` rows in `state` finished before `before`; returns them. */
    sweepBatch(state: 'done' | 'dead', before: number, limit: number): RemovedRow[] {
      return remove(deleteSeqs, finishedSeqs.all(state, before, limit) as number[]);
    },
    /** Deletes up to `limit` history rows of messages gone before `before`; how many. */
    sweepHistory(before: number, limit: number): number {
      return sweepHistory.run(before, limit).changes;
    },
    /** Forgets up to `limit` FIFO deduplication ids whose window ended by `now`; how many. */
    sweepDedupeWindow(now: number, limit: number): number {
      return sweepDedupeWindow.run(now, limit).changes;
    },
    /** Pages on the freelist (reclaimable by incremental_vacuum). */
    freePages(): number {
      return sqlite.pragma('freelist_count', { simple: true }) as number;
    },
    /**
     * Whether incremental_vacuum can return pages: only under auto_vacuum = INCREMENTAL. A file made
     * otherwise (a `.dump` restore, an adopted file) keeps NONE, where the step frees nothing.
     */
    incrementalVacuumOn(): boolean {
      return sqlite.pragma('auto_vacuum', { simple: true }) === 2;
    },
    /** Returns up to `pages` free pages to the OS. */
    incrementalVacuum(pages: number): void {
      sqlite.pragma(`incremental_vacuum(${Math.max(1, Math.floor(pages))})`);
    },
    /** Copies what the WAL holds into the database without waiting on anyone; frames in the WAL, and copied. */
    checkpointPassive(): { frames: number; copied: number } {
      const [row] = sqlite.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
      return { frames: row?.log ?? 0, copied: row?.checkpointed ?? 0 };
    },
    /** Checkpoints the WAL and truncates it. */
    checkpointTruncate(): void {
      sqlite.pragma('wal_checkpoint(TRUNCATE)');
    },
  };
}

/** The removal statements of one connection (what the sweep runs on). */
export type Removal = ReturnType<typeof createRemoval>;
