/**
 * All SQL over the messages, queues and settings tables. Hot-path statements are prepared once
 * (an ad-hoc builder re-prepares on every call); cold paths use drizzle's typed builder.
 * Every "now" is a bound parameter from the injected clock.
 */
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import type { MessageState } from '../../machines/message.machine.js';
import type { DbHandle } from './client.js';
import { messages, settingsOverrides } from './schema.js';

/** A row as the runtime reads it. */
export interface MessageRow {
  seq: number;
  id: string;
  queue: string;
  payload: string;
  state: MessageState;
  snapshot: string;
  attempt: number;
  deliveries: number;
  priority: number;
  visibleAt: number;
  leaseToken: string | null;
  leaseExpiresAt: number | null;
  owner: string | null;
  createdAt: number;
  updatedAt: number;
  finishedAt: number | null;
  lastError: string | null;
}

/** A deleted row, as announced by `message.removed`. */
export interface RemovedRow {
  id: string;
  queue: string;
  state: MessageState;
}

/** Everything a new row needs. */
export interface NewMessage {
  id: string;
  queue: string;
  payload: string;
  snapshot: string;
  snapshotVersion: number;
  priority: number;
  visibleAt: number;
  ready: 0 | 1;
  dedupeKey: string | null;
  now: number;
}

/** The columns a transition writes, all derived from the new snapshot. */
export interface RowTransition {
  seq: number;
  /** Fences: the write lands only if the row is still in this state with this lease token. */
  expectState: MessageState;
  expectToken: string | null;
  state: MessageState;
  snapshot: string;
  attempt: number;
  deliveries: number;
  visibleAt: number;
  ready: 0 | 1;
  leaseToken: string | null;
  leaseExpiresAt: number | null;
  owner: string | null;
  finishedAt: number | null;
  lastError: string | null;
  now: number;
}

const ROW_COLUMNS = `seq, id, queue, payload, state, snapshot, attempt, deliveries, priority,
  visible_at AS visibleAt, lease_token AS leaseToken, lease_expires_at AS leaseExpiresAt, owner,
  created_at AS createdAt, updated_at AS updatedAt, finished_at AS finishedAt, last_error AS lastError`;

/** The claim's candidate query (queue, limit); exported so a test can check its query plan. */
export const CANDIDATES_SQL = `SELECT ${ROW_COLUMNS} FROM messages
     WHERE queue = ? AND state = 'pending' AND ready = 1
     ORDER BY priority DESC, visible_at, seq LIMIT ?`;

/** Promotes due delayed rows (now); exported for the query-plan test. */
export const PROMOTE_SQL = `UPDATE messages SET ready = 1 WHERE state = 'pending' AND ready = 0 AND visible_at <= ? RETURNING queue`;

/** The nearest visible-at among delayed rows; exported for the query-plan test. */
export const NEXT_DELAYED_SQL = `SELECT MIN(visible_at) AS at FROM messages WHERE state = 'pending' AND ready = 0`;

/** The `owner` of a row whose handler a graceful stop abandoned: recovered without a crash. */
export const ABANDONED = 'stopped';

/** Creates the repository over an open database. */
export function createRepository(db: DbHandle) {
  const { sqlite, orm } = db;
  const insert = sqlite.prepare(
    `INSERT INTO messages (id, queue, payload, state, snapshot, snapshot_version, priority, visible_at, ready, dedupe_key, created_at, updated_at)
     VALUES (@id, @queue, @payload, 'pending', @snapshot, @snapshotVersion, @priority, @visibleAt, @ready, @dedupeKey, @now, @now)
     ON CONFLICT DO NOTHING`,
  );
  const liveByKey = sqlite.prepare(
    `SELECT id FROM messages WHERE queue = ? AND dedupe_key = ? AND state IN ('pending', 'activating', 'processing')`,
  );
  const countLive = sqlite.prepare(
    `SELECT COUNT(*) AS n FROM messages WHERE queue = ? AND state IN ('pending', 'activating', 'processing')`,
  );
  const insertQueue = sqlite.prepare('INSERT OR IGNORE INTO queues (name, created_at) VALUES (?, ?)');
  const listQueues = sqlite.prepare('SELECT name FROM queues ORDER BY name');
  const promote = sqlite.prepare(PROMOTE_SQL);
  const nextDelayed = sqlite.prepare(NEXT_DELAYED_SQL);
  const candidates = sqlite.prepare(CANDIDATES_SQL);
  const write = sqlite.prepare(
    `UPDATE messages SET state = @state, snapshot = @snapshot, attempt = @attempt, deliveries = @deliveries,
       visible_at = @visibleAt, ready = @ready, lease_token = @leaseToken, lease_expires_at = @leaseExpiresAt,
       owner = @owner, finished_at = @finishedAt, last_error = @lastError, updated_at = @now
     WHERE seq = @seq AND state = @expectState AND lease_token IS @expectToken`,
  );
  const abandon = sqlite.prepare(
    `UPDATE messages SET owner = '${ABANDONED}' WHERE seq = ? AND state = 'processing' AND lease_token IS ?`,
  );
  const remove = sqlite.prepare(
    `DELETE FROM messages WHERE seq = ? AND state = ? AND lease_token IS ?`,
  );
  const inflight = sqlite.prepare(
    `SELECT ${ROW_COLUMNS} FROM messages WHERE state IN ('activating', 'processing') LIMIT ?`,
  );
  const byId = sqlite.prepare(`SELECT ${ROW_COLUMNS} FROM messages WHERE id = ?`);
  const settingsRow = sqlite.prepare('SELECT overrides, version FROM settings_overrides WHERE id = 1');
  const settingsVersion = sqlite.prepare('SELECT version FROM settings_overrides WHERE id = 1').pluck();

  return {
    /** Inserts a pending row; false when a live row already holds its dedupe key. */
    insert(row: NewMessage): boolean {
      return insert.run(row).changes === 1;
    },
    /** The id of the live message holding `key` in `queue`. */
    liveIdByKey(queue: string, key: string): string | undefined {
      return (liveByKey.get(queue, key) as { id: string } | undefined)?.id;
    },
    /** Pending plus in-flight messages of a queue. */
    countLive(queue: string): number {
      return (countLive.get(queue) as { n: number }).n;
    },
    /** Records a queue name (idempotent). */
    addQueue(name: string, now: number): void {
      insertQueue.run(name, now);
    },
    /** Every queue ever sent to. */
    queueNames(): string[] {
      return (listQueues.all() as { name: string }[]).map((r) => r.name);
    },
    /** Marks delayed rows whose time has come as ready; returns the queues that got some. */
    promoteDue(now: number): Set<string> {
      return new Set((promote.all(now) as { queue: string }[]).map((r) => r.queue));
    },
    /** The earliest visible-at among delayed pending rows. */
    nextDelayedAt(): number | null {
      return (nextDelayed.get() as { at: number | null }).at;
    },
    /** Up to `limit` ready pending rows of `queue`, in claim order. */
    candidates(queue: string, limit: number): MessageRow[] {
      return candidates.all(queue, limit) as MessageRow[];
    },
    /** Applies a fenced transition; false when the row moved on (stale attempt). */
    write(change: RowTransition): boolean {
      return write.run(change).changes === 1;
    },
    /** Marks an in-flight row as abandoned by a graceful stop (not a crash) for the next recovery. */
    markAbandoned(seq: number, token: string): boolean {
      return abandon.run(seq, token).changes === 1;
    },
    /** Deletes a row if still in `state` under `token`; false when stale. */
    remove(seq: number, state: MessageState, token: string | null): boolean {
      return remove.run(seq, state, token).changes === 1;
    },
    /** In-flight rows (for boot recovery), through the partial index: no table scan at boot. */
    inflight(limit: number): MessageRow[] {
      return inflight.all(limit) as MessageRow[];
    },
    /** One message by id. */
    byId(id: string): MessageRow | undefined {
      return byId.get(id) as MessageRow | undefined;
    },
    /** Row counts per queue and state. */
    counts(): { queue: string; state: MessageState; n: number }[] {
      return orm
        .select({ queue: messages.queue, state: messages.state, n: sql<number>`count(*)` })
        .from(messages)
        .groupBy(messages.queue, messages.state)
        .all();
    },
    /** Rows in a state, optionally of one queue, oldest first. */
    listByState(state: MessageState, queue: string | undefined, limit: number): MessageRow[] {
      return orm
        .select(rowSelection)
        .from(messages)
        .where(queue === undefined ? eq(messages.state, state) : and(eq(messages.state, state), eq(messages.queue, queue)))
        .orderBy(asc(messages.seq))
        .limit(limit)
        .all() as MessageRow[];
    },
    /** Deletes up to `limit` rows of `queue` in the given states; returns them. */
    purgeBatch(queue: string, states: MessageState[], limit: number): RemovedRow[] {
      const sub = orm
        .select({ seq: messages.seq })
        .from(messages)
        .where(and(eq(messages.queue, queue), inArray(messages.state, states)))
        .limit(limit);
      return orm.delete(messages).where(inArray(messages.seq, sub)).returning(removedColumns).all();
    },
    /** Deletes up to `limit` rows in `state` finished before `before`; returns them. */
    sweepBatch(state: 'done' | 'dead', before: number, limit: number): RemovedRow[] {
      const sub = orm
        .select({ seq: messages.seq })
        .from(messages)
        .where(and(eq(messages.state, state), sql`${messages.finishedAt} IS NOT NULL`, sql`${messages.finishedAt} < ${before}`))
        .orderBy(asc(messages.finishedAt))
        .limit(limit);
      return orm.delete(messages).where(inArray(messages.seq, sub)).returning(removedColumns).all();
    },
    /** The stored overrides document and its version (0 when none was ever written). */
    readOverrides(): { overrides: string; version: number } {
      return (settingsRow.get() as { overrides: string; version: number } | undefined) ?? { overrides: '{}', version: 0 };
    },
    /** The settings version alone: cheap enough for every poll. */
    overridesVersion(): number {
      return (settingsVersion.get() as number | undefined) ?? 0;
    },
    /** Stores a new overrides document, bumping the version; returns the new version. */
    writeOverrides(overrides: string, now: number): number {
      const row = orm
        .insert(settingsOverrides)
        .values({ id: 1, overrides, version: 1, updatedAt: now })
        .onConflictDoUpdate({
          target: settingsOverrides.id,
          set: { overrides, version: sql`${settingsOverrides.version} + 1`, updatedAt: now },
        })
        .returning({ version: settingsOverrides.version })
        .get();
      return row.version;
    },
    /** Pages on the freelist (reclaimable by incremental_vacuum). */
    freePages(): number {
      return sqlite.pragma('freelist_count', { simple: true }) as number;
    },
    /** Returns up to `pages` free pages to the OS. */
    incrementalVacuum(pages: number): void {
      sqlite.pragma(`incremental_vacuum(${Math.max(1, Math.floor(pages))})`);
    },
    /** Copies what the WAL holds into the database without waiting on readers. */
    checkpointPassive(): void {
      sqlite.pragma('wal_checkpoint(PASSIVE)');
    },
    /** Checkpoints the WAL and truncates it. */
    checkpointTruncate(): void {
      sqlite.pragma('wal_checkpoint(TRUNCATE)');
    },
  };
}

const removedColumns = { id: messages.id, queue: messages.queue, state: messages.state };

const rowSelection = {
  seq: messages.seq,
  id: messages.id,
  queue: messages.queue,
  payload: messages.payload,
  state: messages.state,
  snapshot: messages.snapshot,
  attempt: messages.attempt,
  deliveries: messages.deliveries,
  priority: messages.priority,
  visibleAt: messages.visibleAt,
  leaseToken: messages.leaseToken,
  leaseExpiresAt: messages.leaseExpiresAt,
  owner: messages.owner,
  createdAt: messages.createdAt,
  updatedAt: messages.updatedAt,
  finishedAt: messages.finishedAt,
  lastError: messages.lastError,
};

/** The repository's type. */
export type Repository = ReturnType<typeof createRepository>;
