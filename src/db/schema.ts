/**
 * The tables. drizzle-kit generates `drizzle/` from this file (`npm run db:generate`).
 * Times are epoch ms, set from the injected clock, never from SQLite's own clock.
 */
import { sql } from 'drizzle-orm';
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

/**
 * XState's persisted snapshot of a message, assembled by SQLite from the context columns on every
 * read: a VIRTUAL generated column, so it can never disagree with the columns, costs no disk, and
 * a transition writes only the fields that change. Its shape is `getPersistedSnapshot()`'s.
 */
const SNAPSHOT_SQL = sql`json_object(
  'status', CASE WHEN state = 'done' THEN 'done' ELSE 'active' END,
  'value', state,
  'historyValue', json_object(),
  'context', json_object(
    'failures', failures, 'attempt', attempt, 'deliveries', deliveries, 'crashes', crashes,
    'visibleAt', visible_at, 'leaseExpiresAt', lease_expires_at, 'lastError', iif(json_valid(last_error), json(last_error), last_error)),
  'children', json_object())`;

/**
 * One row per message, from send until done (deleted) or purged. The message machine's context is
 * stored column by column (failures, attempt, deliveries, crashes, visible_at, lease_expires_at,
 * last_error), so the claim and the settle rewrite a few integers, not a snapshot document.
 */
export const messages = sqliteTable(
  'messages',
  {
    /**
     * Send sequence and the message's id (as a decimal string). Assigned by the repository as the
     * next after both the newest row and the `last_seq` mark, never by SQLite's max + 1 alone: a
     * row above the mark is folded (the mark moved past it) before it can be deleted, so a seq is
     * never reused, even after the newest row is deleted: an id never names two messages.
     * (AUTOINCREMENT would do the same at the price of one more page, sqlite_sequence's, written by
     * every commit that inserts.)
     */
    seq: integer('seq').primaryKey(),
    /** The UUID id of a message stored before 0.2.0 (null for later ones, whose id is the seq). */
    legacyId: text('legacy_id'),
    /** The seed's "message type". */
    queue: text('queue').notNull(),
    payload: text('payload').notNull(),
    /** Always equals json_extract(snapshot, '$.value'): the snapshot is generated from it. */
    state: text('state', { enum: ['pending', 'activating', 'processing', 'dead', 'done'] }).notNull(),
    failures: integer('failures').notNull().default(0),
    attempt: integer('attempt').notNull().default(0),
    /** Every hand-out, redeliveries after a crash included (SQS's ApproximateReceiveCount). */
    deliveries: integer('deliveries').notNull().default(0),
    crashes: integer('crashes').notNull().default(0),
    visibleAt: integer('visible_at').notNull(),
    /** The in-flight deadline: handler timeout, or a pull consumer's visibility deadline. */
    leaseExpiresAt: integer('lease_expires_at'),
    /** JSON `{ code, message, stack }` of the last failure. */
    lastError: text('last_error'),
    priority: integer('priority').notNull().default(0),
    /**
     * 1 once visible_at has passed. Claims read only ready rows, so delayed rows (of any priority)
     * never sit in the claim index's path; a due delayed row is promoted before each claim.
     */
    ready: integer('ready').notNull(),
    /** The receipt of the current claim; a new one on every claim, checked by every settle. */
    leaseToken: text('lease_token'),
    /** Who holds the lease: null for the push runtime, a consumer id for pull consumers. */
    owner: text('owner'),
    /** Idempotency key (`key:`) or content hash (`content:`), unique per queue while live. */
    dedupeKey: text('dedupe_key'),
    /**
     * A FIFO message's deduplication id (SQS MessageDeduplicationId): the send's key, or the hex
     * SHA-256 of the body under content-based deduplication. Kept for the message's whole life,
     * unlike its dedupe_window entry, so a receive can return it. Null on other queues.
     */
    dedupeId: text('dedupe_id'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    /** When the row reached done or dead: the clock that retention counts from. */
    finishedAt: integer('finished_at'),
    /**
     * The message group (SQS MessageGroupId): within a group, messages are handed out in send
     * order, one at a time. Null for ungrouped messages.
     */
    grp: text('grp'),
    /**
     * 1 when the message may be claimed within its group: always for ungrouped messages; for a
     * grouped one, only while it is its group's oldest live message (the group's head).
     */
    head: integer('head').notNull().default(1),
    /** SQS message attributes, JSON `{ name: { type, value } }` (binary values in base64). */
    attributes: text('attributes'),
    /** The queue a dead-letter queue's message came from (SQS redrive). */
    sourceQueue: text('source_queue'),
    /** The first hand-out (SQS ApproximateFirstReceiveTimestamp), epoch ms. */
    firstDeliveredAt: integer('first_delivered_at'),
    /** The schedule that sent the message, and the tick (epoch ms) it was sent for. */
    schedule: text('schedule'),
    scheduledFor: integer('scheduled_for'),
    /** The message's committed transitions, compact JSON (see runtime/history.ts); null when off. */
    history: text('history'),
    snapshot: text('snapshot').generatedAlwaysAs(SNAPSHOT_SQL, { mode: 'virtual' }),
    /** The public id, for people reading the table by hand: computed, never stored or indexed. */
    id: text('id').generatedAlwaysAs(sql`coalesce(legacy_id, CAST(seq AS TEXT))`, { mode: 'virtual' }),
  },
  (t) => [
    uniqueIndex('messages_legacy_id').on(t.legacyId).where(sql`${t.legacyId} IS NOT NULL`),
    // The claim path: one seek per queue, in the exact ORDER BY of the claim, no temp B-tree.
    index('messages_claim')
      .on(t.queue, sql`${t.priority} DESC`, t.visibleAt, t.seq)
      .where(sql`${t.state} = 'pending' AND ${t.ready} = 1 AND ${t.head} = 1`),
    // A group's live messages in send order: the next head when the current one leaves. Live is
    // `finished_at IS NULL` (set exactly when a row becomes done or dead), not a test of `state`:
    // SQLite rewrites a partial index's entry on every UPDATE that sets a column its WHERE names,
    // and the claim sets `state` but leaves `finished_at` alone (migration 0006).
    index('messages_group')
      .on(t.queue, t.grp, t.seq)
      .where(sql`${t.grp} IS NOT NULL AND ${t.finishedAt} IS NULL`),
    // Promotion of delayed rows and the nearest visible-at timer.
    index('messages_delayed').on(t.visibleAt).where(sql`${t.state} = 'pending' AND ${t.ready} = 0`),
    // In-flight rows: boot recovery, lease expiry.
    index('messages_inflight')
      .on(t.leaseExpiresAt)
      .where(sql`${t.state} IN ('activating', 'processing')`),
    // Dedup: a key is taken only while its message is pending or in flight (finished_at IS NULL,
    // as for messages_group: the claim does not rewrite the entry; migration 0007).
    uniqueIndex('messages_dedupe')
      .on(t.queue, t.dedupeKey)
      .where(sql`${t.dedupeKey} IS NOT NULL AND ${t.finishedAt} IS NULL`),
    // Dead-letter listing and retention sweeps (done/dead rows only: not on the hot path).
    index('messages_finished').on(t.state, t.finishedAt).where(sql`${t.finishedAt} IS NOT NULL`),
  ],
);

/**
 * Small counters, in one table so that they share its one page (a commit writes every page it
 * touched to the WAL). See counters.ts for how they are kept and read:
 * - scope = a queue name, name = a state: the rows of that queue in that state (stats and
 *   maxPending read here, not a messages index), kept by deltas in the transaction of each change,
 *   and for new rows by the fold (triggers of migration 0004);
 * - scope = '', name = 'last_seq': the fold mark, the newest seq counted (no queue has that name);
 * - scope = '', name = `arrivals:<queue>`: rows that ever entered pending in the queue.
 */
export const counters = sqliteTable(
  'counters',
  {
    scope: text('scope').notNull(),
    name: text('name').notNull(),
    n: integer('n').notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.name] })],
);

/** Every queue that has ever been sent to: the claim loop's list of queues. */
export const queues = sqliteTable('queues', {
  name: text('name').primaryKey(),
  createdAt: integer('created_at').notNull(),
  /**
   * 'push' for a queue that sends created (it has a handler, or will); 'sqs' for one made by
   * `queues.create` (SQS shape: the push runtime never claims it without a handler). Not a
   * setting: no settings layer can change it.
   */
  kind: text('kind', { enum: ['push', 'sqs'] }).notNull().default('push'),
  /** 1 for a FIFO queue (name ends in .fifo); fixed at create. */
  fifo: integer('fifo').notNull().default(0),
  /** SQS queue tags, JSON `{ key: value }`. */
  tags: text('tags'),
  updatedAt: integer('updated_at'),
});

/**
 * FIFO deduplication (SQS): a deduplication id (or body hash) is remembered for the queue's
 * dedupeWindowMs from the send, whatever state its message reaches; a second send inside the
 * window returns the first message's id.
 */
export const dedupeWindow = sqliteTable(
  'dedupe_window',
  {
    queue: text('queue').notNull(),
    key: text('key').notNull(),
    seq: integer('seq').notNull(),
    expiresAt: integer('expires_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.queue, t.key] }), index('dedupe_window_expires').on(t.expiresAt)],
);

/**
 * Durable schedules (cron or every-N-ms), managed by name. `cursor` is the last tick sent: it is
 * advanced by compare-and-set in the same transaction as that tick's message, so no tick is ever
 * sent twice, across crashes, restarts and processes.
 */
export const schedules = sqliteTable(
  'schedules',
  {
    name: text('name').primaryKey(),
    /** JSON of the schedule's spec: cron or everyMs, tz, queue, payload, startAt, missed. */
    spec: text('spec').notNull(),
    enabled: integer('enabled').notNull().default(1),
    /** everyMs schedules tick at anchor + k × everyMs. */
    anchor: integer('anchor').notNull(),
    /** The last tick sent (epoch ms); null before the first. */
    cursor: integer('cursor'),
    /** The next tick due (epoch ms), for the one timer across all schedules. */
    nextAt: integer('next_at'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('schedules_next').on(t.nextAt).where(sql`${t.enabled} = 1`)],
);

/**
 * The timelines of finished messages whose rows were deleted (done, purged, swept), kept for the
 * dashboard's message page until `history.retentionMs` passes.
 */
export const messageHistory = sqliteTable(
  'message_history',
  {
    seq: integer('seq').primaryKey(),
    id: text('id').notNull(),
    queue: text('queue').notNull(),
    /** The state it ended in ('done', or the state it was removed from). */
    state: text('state').notNull(),
    /** Why the row went: 'done', 'purged', 'swept', 'deleted'. */
    reason: text('reason').notNull(),
    timeline: text('timeline').notNull(),
    createdAt: integer('created_at').notNull(),
    finishedAt: integer('finished_at').notNull(),
  },
  (t) => [index('message_history_finished').on(t.finishedAt)],
);

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
