/**
 * The tables. drizzle-kit generates `drizzle/` from this file (`npm run db:generate`).
 * Times are epoch ms, set from the injected clock, never from SQLite's own clock.
 */
import { sql } from 'drizzle-orm';
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

/** One row per message, from send until done (deleted) or purged. */
export const messages = sqliteTable(
  'messages',
  {
    /** Send sequence: the rowid (max + 1 on insert, so it orders every live row by send). */
    seq: integer('seq').primaryKey(),
    id: text('id').notNull(),
    /** The seed's "message type". */
    queue: text('queue').notNull(),
    payload: text('payload').notNull(),
    /** Always equals json_extract(snapshot, '$.value'): both change in one statement. */
    state: text('state', { enum: ['pending', 'activating', 'processing', 'dead', 'done'] }).notNull(),
    snapshot: text('snapshot').notNull(),
    snapshotVersion: integer('snapshot_version').notNull(),
    attempt: integer('attempt').notNull().default(0),
    /** Every hand-out, redeliveries after a crash included (SQS's ApproximateReceiveCount). */
    deliveries: integer('deliveries').notNull().default(0),
    priority: integer('priority').notNull().default(0),
    visibleAt: integer('visible_at').notNull(),
    /**
     * 1 once visible_at has passed. Claims read only ready rows, so delayed rows (of any priority)
     * never sit in the claim index's path; a due delayed row is promoted before each claim.
     */
    ready: integer('ready').notNull(),
    /** The receipt of the current claim; a new one on every claim, checked by every settle. */
    leaseToken: text('lease_token'),
    /** The in-flight deadline: handler timeout, or a pull consumer's visibility deadline. */
    leaseExpiresAt: integer('lease_expires_at'),
    /** Who holds the lease: null for the push runtime, a consumer id for pull consumers. */
    owner: text('owner'),
    /** Idempotency key (`key:`) or content hash (`content:`), unique per queue while live. */
    dedupeKey: text('dedupe_key'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    /** When the row reached done or dead: the clock that retention counts from. */
    finishedAt: integer('finished_at'),
    /** JSON `{ code, message, stack }` of the last failure. */
    lastError: text('last_error'),
  },
  (t) => [
    uniqueIndex('messages_id').on(t.id),
    // The claim path: one seek per queue, in the exact ORDER BY of the claim, no temp B-tree.
    index('messages_claim')
      .on(t.queue, sql`${t.priority} DESC`, t.visibleAt, t.seq)
      .where(sql`${t.state} = 'pending' AND ${t.ready} = 1`),
    // Promotion of delayed rows and the nearest visible-at timer.
    index('messages_delayed').on(t.visibleAt).where(sql`${t.state} = 'pending' AND ${t.ready} = 0`),
    // In-flight rows: boot recovery, lease expiry.
    index('messages_inflight')
      .on(t.leaseExpiresAt)
      .where(sql`${t.state} IN ('activating', 'processing')`),
    // Dedup: a key is taken only while its message is pending or in flight.
    uniqueIndex('messages_dedupe')
      .on(t.queue, t.dedupeKey)
      .where(sql`${t.dedupeKey} IS NOT NULL AND ${t.state} IN ('pending', 'activating', 'processing')`),
    // Stats, dead-letter listing, retention sweeps.
    index('messages_queue_state').on(t.queue, t.state),
    index('messages_finished').on(t.state, t.finishedAt).where(sql`${t.finishedAt} IS NOT NULL`),
  ],
);

/** Every queue that has ever been sent to: the claim loop's list of queues. */
export const queues = sqliteTable('queues', {
  name: text('name').primaryKey(),
  createdAt: integer('created_at').notNull(),
});

/**
 * Settings overrides: one row holding the override document and a version that grows on every
 * change, so another process can tell a real change from any other write.
 */
export const settingsOverrides = sqliteTable('settings_overrides', {
  id: integer('id').primaryKey(),
  overrides: text('overrides').notNull(),
  version: integer('version').notNull(),
  updatedAt: integer('updated_at').notNull(),
});

/**
 * The running owner's identity (one row, id 1, while a spool is started). The lock file alone
 * cannot tell a second owner that the first still runs if someone deleted that file: this row can
 * (host, pid, process start time, and the dev/inode of the lock file the owner holds).
 */
export const owner = sqliteTable('owner', {
  id: integer('id').primaryKey(),
  host: text('host').notNull(),
  pid: integer('pid').notNull(),
  /** `<boot id>:<start time in clock ticks>` from /proc, or '' where /proc is missing. */
  processStart: text('process_start').notNull(),
  /** Unique per started spool, so two spools in one process are told apart. */
  nonce: text('nonce').notNull(),
  /** The held lock file's device and inode, as decimal strings (inodes may exceed 2^53). */
  lockDev: text('lock_dev').notNull(),
  lockIno: text('lock_ino').notNull(),
  acquiredAt: integer('acquired_at').notNull(),
});
