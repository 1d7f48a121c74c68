/**
 * All SQL over the messages, queues and settings tables. Hot-path statements are prepared once and
 * bound positionally (an ad-hoc builder re-prepares on every call, and named parameters cost a
 * property lookup each); cold paths use drizzle's typed builder. Every "now" is a bound parameter
 * from the injected clock. Every change to a message row records its count delta (counters.ts; a
 * new row is counted by the fold).
 */
import { and, asc, eq, gt, inArray, isNotNull, sql } from 'drizzle-orm';
import type { MessageContext, MessageState } from '../../machines/message.machine.js';
import type Database from 'better-sqlite3';
import type { DbHandle } from './client.js';
import { ARRIVALS_SQL, attachCounters, COUNTS_SQL, LIVE_COUNT_SQL } from './counters.js';
import { messages, settingsOverrides } from './schema.js';
import { runTransaction } from './transaction.js';
import { createRemoval, LIVE_ROW, type RemovedRow } from './removal.js';
import { decodeTimeline, encodeEntry, type HistoryEntry, withSendEntry } from '../runtime/history.js';

/** A row as the runtime reads it: the machine's context column by column. */
export interface MessageRow {
  seq: number;
  /** The public id: the legacy UUID of a pre-0.2.0 row, else the seq as a decimal string. */
  id: string;
  queue: string;
  payload: string;
  state: MessageState;
  failures: number;
  attempt: number;
  deliveries: number;
  crashes: number;
  visibleAt: number;
  leaseExpiresAt: number | null;
  /** JSON text of `{ code, message, stack }`, or null. */
  lastError: string | null;
  priority: number;
  leaseToken: string | null;
  owner: string | null;
  createdAt: number;
  updatedAt: number;
  finishedAt: number | null;
  /** The message group, or null. */
  grp: string | null;
  /** Stored SQS message attributes (JSON text), or null. */
  attributes: string | null;
  sourceQueue: string | null;
  firstDeliveredAt: number | null;
  schedule: string | null;
  scheduledFor: number | null;
  /** A FIFO message's deduplication id (SQS MessageDeduplicationId), or null. */
  dedupeId: string | null;
}

/** Everything a new row needs: the machine's initial context, and where the message goes. */
export interface NewMessage {
  queue: string;
  payload: string;
  context: MessageContext;
  priority: number;
  ready: 0 | 1;
  dedupeKey: string | null;
  now: number;
  /** Message group (FIFO); its head flag is decided at insert. */
  group?: string | null;
  /** SQS message attributes, as stored (JSON). */
  attributes?: string | null;
  /** The queue a dead-lettered message came from. */
  sourceQueue?: string | null;
  /** The schedule that sent it, and the tick. */
  schedule?: string | null;
  scheduledFor?: number | null;
  /** A FIFO message's deduplication id (its key, or the hex SHA-256 of its body). */
  dedupeId?: string | null;
}

/** The columns a transition writes, all derived from the machine's next state. */
export interface RowTransition {
  seq: number;
  queue: string;
  /** The row's group: when it leaves the live states, the group's next message heads it. */
  group?: string | null;
  /** A hand-out: sets first_delivered_at unless already set. */
  handedOut?: boolean;
  /** Fences: the write lands only if the row is still in this state with this lease token. */
  expectState: MessageState;
  expectToken: string | null;
  state: MessageState;
  context: MessageContext;
  leaseToken: string | null;
  owner: string | null;
  now: number;
  /** The error code of the failure that caused this transition (kept in the message history). */
  code?: string;
  /** A state the machine passed through in the same step (a claim's activating), for the history. */
  via?: MessageState;
}

/** How a deleted row's timeline ends, for the message history. */
export interface RowEnd {
  /** The state the deletion means ('done' at completion); the row's own state when absent. */
  to?: MessageState;
  attempt: number;
  at: number;
  /** Why the row went: 'done', 'deleted', 'purged', 'swept', 'retention'. */
  reason: string;
}

/** What the repository needs besides the database. */
export interface RepositoryOptions {
  /** Whether transitions are recorded in the message history now (the `history.enabled` setting). */
  history?: () => boolean;
}

/** A message's timeline: from its row, or, once the row is gone, from the history table. */
export interface StoredHistory {
  entries: HistoryEntry[];
  /** Set once the row was deleted: why, the state it was in, and its queue. */
  removed?: { reason: string; state: string; queue: string; createdAt: number; at: number };
}

/** The seq an id names: a decimal id is the seq itself; anything else is a legacy UUID. */
export function seqOf(id: string): number | undefined {
  if (!/^[1-9][0-9]{0,15}$/.test(id)) return undefined;
  const seq = Number(id);
  return Number.isSafeInteger(seq) ? seq : undefined;
}

const ROW_COLUMNS = `seq, coalesce(legacy_id, CAST(seq AS TEXT)) AS id, queue, payload, state, failures, attempt,
  deliveries, crashes, visible_at AS visibleAt, lease_expires_at AS leaseExpiresAt, last_error AS lastError,
  priority, lease_token AS leaseToken, owner, created_at AS createdAt, updated_at AS updatedAt,
  finished_at AS finishedAt, grp, attributes, source_queue AS sourceQueue, first_delivered_at AS firstDeliveredAt,
  schedule, scheduled_for AS scheduledFor, dedupe_id AS dedupeId`;

/** Exported for the query builders of pull consumers (where filters) and the admin listing. */
export { ROW_COLUMNS };

/**
 * A row of ROW_COLUMNS read in raw mode (an array, in that order) as a MessageRow. On the claim's
 * path this replaces better-sqlite3's own row objects, which it builds property by property (about
 * 3 KB and several µs per row, measured at 8 rows per claim): a literal of one fixed shape is a
 * fraction of both. A test reads one row both ways and compares them.
 */
export function toMessageRow(r: unknown[]): MessageRow {
  return {
    seq: r[0] as number,
    id: r[1] as string,
    queue: r[2] as string,
    payload: r[3] as string,
    state: r[4] as MessageState,
    failures: r[5] as number,
    attempt: r[6] as number,
    deliveries: r[7] as number,
    crashes: r[8] as number,
    visibleAt: r[9] as number,
    leaseExpiresAt: r[10] as number | null,
    lastError: r[11] as string | null,
    priority: r[12] as number,
    leaseToken: r[13] as string | null,
    owner: r[14] as string | null,
    createdAt: r[15] as number,
    updatedAt: r[16] as number,
    finishedAt: r[17] as number | null,
    grp: r[18] as string | null,
    attributes: r[19] as string | null,
    sourceQueue: r[20] as string | null,
    firstDeliveredAt: r[21] as number | null,
    schedule: r[22] as string | null,
    scheduledFor: r[23] as number | null,
    dedupeId: r[24] as string | null,
  };
}

/** The claim's candidate query (queue, limit); exported so a test can check its query plan. */
export const CANDIDATES_SQL = `SELECT ${ROW_COLUMNS} FROM messages
     WHERE queue = ? AND state = 'pending' AND ready = 1 AND head = 1
     ORDER BY priority DESC, visible_at, seq LIMIT ?`;

/** Promotes due delayed rows (now); exported for the query-plan test. */
export const PROMOTE_SQL = `UPDATE messages SET ready = 1 WHERE state = 'pending' AND ready = 0 AND visible_at <= ? RETURNING queue`;

/** The nearest visible-at among delayed rows; exported for the query-plan test. */
export const NEXT_DELAYED_SQL = `SELECT MIN(visible_at) AS at FROM messages WHERE state = 'pending' AND ready = 0`;

/** The `owner` of a row whose handler a graceful stop abandoned: recovered without a crash. */
export const ABANDONED = 'stopped';

/** In-flight rows under a pull lease: the push runtime's own have no owner, or ABANDONED. */
const PULL_LEASED = `state IN ('activating', 'processing') AND owner IS NOT NULL AND owner != '${ABANDONED}'`;

/** Pull leases run out by `?` (now), oldest deadline first (a range of the in-flight index); exported for the query-plan test. */
export const EXPIRED_LEASES_SQL = `SELECT ${ROW_COLUMNS} FROM messages WHERE ${PULL_LEASED} AND lease_expires_at <= ? ORDER BY lease_expires_at LIMIT ?`;

/**
 * Pull leases without a deadline (lease_expires_at NULL), which count as run out. Spool never
 * writes one (a hand edit or a damaged file does), and nothing else would ever return its message:
 * not a restart (boot recovery leaves pull leases to their deadlines, as their holders may live on
 * in other processes), not an owner, not a lease call. They are the in-flight index's NULL entries
 * (the others there: the push runtime's rows without a timeout). Apart from EXPIRED_LEASES_SQL: an
 * OR of both made SQLite scan the whole index, every pull lease in flight, at each expiry pass.
 * Exported for the query-plan test.
 */
export const UNDATED_LEASES_SQL = `SELECT ${ROW_COLUMNS} FROM messages WHERE ${PULL_LEASED} AND lease_expires_at IS NULL LIMIT ?`;

/**
 * The nearest pull lease deadline (null: no pull lease), or 0 (due now) for a lease without one:
 * what tells a lease call, the owner's timer and a waiter that leases are due must agree with what
 * the expiry pass then finds, or they would wake again at once, and spin. The first pull lease in
 * the in-flight index's order: the entries before it are the push runtime's rows in flight (at
 * most its concurrency), those without a timeout now as well as those with one. Exported for the
 * query-plan test.
 */
export const NEXT_LEASE_EXPIRY_SQL = `(SELECT coalesce(lease_expires_at, 0) FROM messages WHERE ${PULL_LEASED} ORDER BY lease_expires_at LIMIT 1)`;

const LIVE: MessageState[] = ['pending', 'activating', 'processing'];

/** The columns a new row sets; every value but the state is bound (newRowValues, in this order). */
const INSERT_SQL = `INSERT INTO messages (seq, queue, payload, state, failures, attempt, deliveries, crashes, visible_at, lease_expires_at,
  last_error, priority, ready, dedupe_key, created_at, updated_at, grp, head, attributes, source_queue, schedule, scheduled_for, history, dedupe_id)`;

/** A send whose key a live message of its queue holds stores nothing (the caller answers with that message's id). */
const ON_LIVE_KEY = `ON CONFLICT (queue, dedupe_key) WHERE dedupe_key IS NOT NULL AND ${LIVE_ROW} DO NOTHING`;

/** Rows per statement of insertMany: per-statement costs paid once for 16 rows (about 3 µs a row less, measured). */
export const INSERT_CHUNK = 16;

/** How many values newRowValues gives, and where its seq and payload are. */
const NEW_ROW_VALUES = 23;
const SEQ_VALUE = 0;
const PAYLOAD_VALUE = 2;

/**
 * The bound values of a new row, in INSERT_SQL's column order without the state. Spread them into
 * run(): better-sqlite3 binds an array argument about 1.6 µs slower than the same values spread.
 */
function newRowValues(row: NewMessage, seq: number, head: 0 | 1, history: string | null): unknown[] {
  const c = row.context;
  return [
    seq, row.queue, row.payload, c.failures, c.attempt, c.deliveries, c.crashes, c.visibleAt, c.leaseExpiresAt,
    c.lastError === null ? null : JSON.stringify(c.lastError), row.priority, row.ready, row.dedupeKey, row.now, row.now,
    row.group ?? null, head, row.attributes ?? null, row.sourceQueue ?? null, row.schedule ?? null, row.scheduledFor ?? null,
    history, row.dedupeId ?? null,
  ];
}

/** One VALUES tuple of INSERT_SQL: `param(i)` places bound value i, the state is always pending. */
function newRowTuple(param: (i: number) => string): string {
  const p = Array.from({ length: NEW_ROW_VALUES }, (_, i) => param(i));
  return `(${p.slice(0, 3).join(', ')}, 'pending', ${p.slice(3).join(', ')})`;
}

/** What ending a pull lease needs of its row: it is announced, counted and archived with these. */
export interface LeasedRow {
  id: string;
  queue: string;
  grp: string | null;
  attempt: number;
}

/** Creates the repository over an open database. */
export function createRepository(db: DbHandle, options: RepositoryOptions = {}) {
  const { sqlite, orm } = db;
  const recording = options.history ?? (() => false);
  /** A new row's history, when history is kept: its entry into pending, implied ('') when withSendEntry can rebuild it. */
  const firstEntry = (row: NewMessage) =>
    !recording() ? null : row.context.attempt === 0 ? '' : encodeEntry(row.now, null, 'pending', row.context.attempt);
  const deltas = attachCounters(sqlite);
  const removal = createRemoval(sqlite, deltas);
  const { promoteGroup } = removal;
  const insert = sqlite.prepare(`${INSERT_SQL} VALUES ${newRowTuple(() => '?')} ${ON_LIVE_KEY}`);
  // A chunk of rows that differ only in seq and payload: the shared values are bound once, by
  // name (v<i>: value i of newRowValues), and each row adds its payload.
  const insertChunk = sqlite.prepare(
    `${INSERT_SQL} VALUES ${Array.from({ length: INSERT_CHUNK }, (_, k) =>
      newRowTuple((i) => (i === SEQ_VALUE ? `@v${SEQ_VALUE} + ${k}` : i === PAYLOAD_VALUE ? '?' : `@v${i}`)),
    ).join(', ')}`,
  );
  const groupHeadOf = sqlite
    .prepare(`SELECT seq FROM messages WHERE queue = ? AND grp = ? AND ${LIVE_ROW} ORDER BY seq LIMIT 1`)
    .pluck();
  const liveByKey = sqlite.prepare(
    `SELECT coalesce(legacy_id, CAST(seq AS TEXT)) FROM messages
     WHERE queue = ? AND dedupe_key = ? AND ${LIVE_ROW}`,
  ).pluck();
  const liveCount = sqlite.prepare(LIVE_COUNT_SQL).pluck();
  const insertQueue = sqlite.prepare('INSERT OR IGNORE INTO queues (name, created_at) VALUES (?, ?)');
  const listQueues = sqlite.prepare('SELECT name FROM queues ORDER BY name').pluck();
  const promote = sqlite.prepare(PROMOTE_SQL).pluck();
  const nextDelayed = sqlite.prepare(NEXT_DELAYED_SQL).pluck();
  const candidates = sqlite.prepare(CANDIDATES_SQL).raw();
  // The same query with its LIMIT written in: SQLite runs `LIMIT 8` several µs faster than `LIMIT ?`
  // bound to 8 (measured: 3 µs against 9), and a claim or a lease runs it on every hand-out.
  const candidatesByLimit = new Map<number, Database.Statement>();
  const candidatesFor = (limit: number): Database.Statement => {
    let st = candidatesByLimit.get(limit);
    if (!st) {
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) return candidates;
      candidatesByLimit.set(limit, (st = sqlite.prepare(CANDIDATES_SQL.replace(/LIMIT \?$/, `LIMIT ${limit}`)).raw()));
    }
    return st;
  };
  const writeSql = (finishedAt: string) =>
    `UPDATE messages SET state = ?, failures = ?, attempt = ?, deliveries = ?, crashes = ?, visible_at = ?,
       lease_expires_at = ?, last_error = ?, ready = ?, lease_token = ?, owner = ?, ${finishedAt}updated_at = ?,
       first_delivered_at = coalesce(first_delivered_at, ?),
       history = CASE WHEN ? IS NULL THEN history ELSE coalesce(history || ',', '') || ? END
     WHERE seq = ? AND state = ? AND lease_token IS ?`;
  const write = sqlite.prepare(writeSql('finished_at = ?, '));
  // A step between live states (the claim, a retry) leaves finished_at NULL, so it does not set it:
  // SQLite then leaves the row's messages_group and messages_dedupe entries alone, instead of
  // deleting and inserting them again (those indexes' WHERE names finished_at; see LIVE_ROW).
  const writeLive = sqlite.prepare(writeSql(''));
  const expiredLeases = sqlite.prepare(EXPIRED_LEASES_SQL);
  const undatedLeases = sqlite.prepare(UNDATED_LEASES_SQL);
  // Both times a lease call may have to act on, in one statement: most calls find neither due.
  const dueTimes = sqlite.prepare(`SELECT (${NEXT_DELAYED_SQL.replace(' AS at', '')}), ${NEXT_LEASE_EXPIRY_SQL}`).raw();
  // A pull waiter's poll: its queue's arrivals and both due times, in one statement.
  const pollState = sqlite.prepare(`SELECT ${ARRIVALS_SQL}, (${NEXT_DELAYED_SQL.replace(' AS at', '')}), ${NEXT_LEASE_EXPIRY_SQL}`).raw();
  const nextLeaseExpiry = sqlite.prepare(`SELECT ${NEXT_LEASE_EXPIRY_SQL}`).pluck();
  // The live-key index is per queue, so the key is dropped; dedupe_id stays, as SQS keeps a
  // message's MessageDeduplicationId in its dead-letter queue and back.
  // A move into a FIFO dead-letter queue (a source named) restarts the message's enqueue time, as
  // in SQS: its retention there counts from the move. A standard one keeps the original time.
  const moveQueue = sqlite.prepare(
    `UPDATE messages SET queue = @to, source_queue = @source, dedupe_key = NULL, updated_at = @now,
       created_at = CASE WHEN @source IS NOT NULL AND EXISTS (SELECT 1 FROM queues WHERE name = @to AND fifo = 1) THEN @now ELSE created_at END
     WHERE seq = @seq AND state = @state AND queue = @from`,
  );
  // A group's head: its message in flight if it has one (one at a time per group), else its oldest
  // pending message; every other one waits (see the head column). A message moved back into a
  // group (a redrive) with an older seq than the one in flight must not head it beside that one.
  // Named parameters, bound once each (better-sqlite3 refuses positional values for ?1/?2).
  // Only rows whose flag changes are written (at most two): a group of 100,000 is read, not rewritten.
  const reheadStatement = sqlite.prepare(
    `UPDATE messages SET head = 1 - head
       WHERE queue = @queue AND grp = @group AND ${LIVE_ROW} AND head != (seq = coalesce(
         (SELECT min(seq) FROM messages WHERE queue = @queue AND grp = @group AND ${LIVE_ROW} AND state IN ('activating', 'processing')),
         (SELECT min(seq) FROM messages WHERE queue = @queue AND grp = @group AND ${LIVE_ROW} AND state = 'pending')))`,
  );
  const rehead = { run: (queue: string, group: string) => reheadStatement.run({ queue, group }) };
  // The head of a group other than `seq`, found in send order: the head is nearly always the
  // group's oldest live message, so this reads a row or two, whatever the group's size.
  const otherHead = sqlite.prepare(
    `SELECT seq, state FROM messages WHERE queue = ? AND grp = ? AND ${LIVE_ROW} AND head = 1 AND seq != ? ORDER BY seq LIMIT 1`,
  );
  const setHead = sqlite.prepare('UPDATE messages SET head = ? WHERE seq = ? AND head != ?');
  /**
   * A finished message of a group back to life (a requeue, a dead letter revived) left with the
   * head flag it had: it heads the group only if the group has no message in flight and it is
   * older than the group's pending head (which then waits), so the group keeps exactly one head.
   */
  function reviveInGroup(seq: number, queue: string, group: string): void {
    const head = otherHead.get(queue, group, seq) as { seq: number; state: MessageState } | undefined;
    const leads = head === undefined || (head.state === 'pending' && seq < head.seq);
    if (leads && head !== undefined) setHead.run(0, head.seq, 0);
    setHead.run(leads ? 1 : 0, seq, leads ? 1 : 0);
  }
  const arrivalsOf = sqlite.prepare(`SELECT ${ARRIVALS_SQL}`).pluck();
  const nextDelayedIn = sqlite.prepare(`SELECT MIN(visible_at) FROM messages WHERE state = 'pending' AND ready = 0 AND queue = ?`).pluck();
  const statements = new Map<string, Database.Statement>();
  const abandon = sqlite.prepare(`UPDATE messages SET owner = ? WHERE seq = ? AND state = 'processing' AND lease_token IS ?`);
  // The archive, then a fenced DELETE, not DELETE … RETURNING: SQLite collects RETURNING's output in
  // memory before it hands out the first row. In a loop that cost 2–9 µs more per deleted row (7
  // of 8 rounds), and a drain at concurrency 1 ran 4–8% faster without it.
  const removeFenced = sqlite.prepare('DELETE FROM messages WHERE seq = ? AND state = ? AND lease_token IS ?');
  const leased = sqlite.prepare(
    `SELECT coalesce(legacy_id, CAST(seq AS TEXT)) AS id, queue, grp, attempt
       FROM messages WHERE seq = ? AND state = 'processing' AND lease_token = ?`,
  );
  const removeLeased = sqlite.prepare("DELETE FROM messages WHERE seq = ? AND state = 'processing' AND lease_token = ?");
  // A row with a timeline leaves one row here, copied from the row itself under the same fence as
  // its DELETE, so the timeline never travels through JavaScript (a read of it, then an insert of
  // it, cost ~6 µs more per message in a drain). The timeline is kept as the row stored it, with
  // its send entry implied (withSendEntry restores it), plus the entry of the deletion, if any.
  // Seqs are never reused: REPLACE only guards.
  const archive = sqlite.prepare(
    `INSERT OR REPLACE INTO message_history (seq, id, queue, state, reason, timeline, created_at, finished_at)
       SELECT seq, coalesce(legacy_id, CAST(seq AS TEXT)), queue, ?, ?, history || ?, created_at, ? FROM messages
       WHERE seq = ? AND state = ? AND lease_token IS ? AND history IS NOT NULL`,
  );
  // Fenced on the id as well as the seq: a migrated 0.1.0 row keeps its UUID as its id, and the
  // decimal string of its seq names no message.
  const historyOfRow = sqlite.prepare('SELECT history, created_at FROM messages WHERE seq = ? AND coalesce(legacy_id, CAST(seq AS TEXT)) = ?').raw();
  const archivedBySeq = sqlite.prepare('SELECT id, queue, state, reason, timeline, created_at AS createdAt, finished_at AS finishedAt FROM message_history WHERE seq = ? AND id = ?');
  const archivedById = sqlite.prepare('SELECT id, queue, state, reason, timeline, created_at AS createdAt, finished_at AS finishedAt FROM message_history WHERE id = ?');
  /**
   * Copies the row `seq` (if it is still in `state` under `token`, and has a timeline) to the
   * history table, ended by `end`. Runs just before the row's fenced DELETE, in one transaction.
   */
  const archiveRow = (seq: number, state: MessageState, token: string | null, end: RowEnd) => {
    const to = end.to ?? state;
    archive.run(to, end.reason, to === state ? '' : `,${encodeEntry(end.at, state, to, end.attempt)}`, end.at, seq, state, token);
  };
  /** Runs `remove` in a transaction of its own when the caller has none: archive and DELETE must land together. */
  const together = <T>(remove: () => T): T => (sqlite.inTransaction ? remove() : runTransaction(sqlite, remove));
  // The push runtime's own rows (owner null, or 'stopped' when a graceful stop abandoned them):
  // a pull consumer's lease keeps its deadline across the owner's restart.
  const inflight = sqlite.prepare(
    `SELECT ${ROW_COLUMNS} FROM messages WHERE state IN ('activating', 'processing') AND (owner IS NULL OR owner = '${ABANDONED}') LIMIT ?`,
  );
  const bySeq = sqlite.prepare(`SELECT ${ROW_COLUMNS} FROM messages WHERE seq = ?`);
  // A row a claim read earlier, if it is still a candidate (the claim compares its columns).
  const candidateBySeq = sqlite.prepare(`SELECT ${ROW_COLUMNS} FROM messages WHERE seq = ? AND state = 'pending' AND ready = 1 AND head = 1`).raw();
  const dataVersion = sqlite.prepare('PRAGMA data_version').pluck();
  const byLegacyId = sqlite.prepare(`SELECT ${ROW_COLUMNS} FROM messages WHERE legacy_id = ?`);
  // A decimal id is the seq of a row without a legacy id only: a migrated 0.1.0 row answers to its UUID alone.
  const byNumericId = sqlite.prepare(`SELECT ${ROW_COLUMNS} FROM messages WHERE seq = ? AND legacy_id IS NULL`);
  const seqOfNumericId = sqlite.prepare('SELECT seq FROM messages WHERE seq = ? AND legacy_id IS NULL').pluck();
  const seqOfLegacyId = sqlite.prepare('SELECT seq FROM messages WHERE legacy_id = ?').pluck();
  const counts = sqlite.prepare(COUNTS_SQL);
  const settingsRow = sqlite.prepare('SELECT overrides, version FROM settings_overrides WHERE id = 1');
  const settingsVersion = sqlite.prepare('SELECT version FROM settings_overrides WHERE id = 1').pluck();

  return {
    /** This connection's counters (shared with the other repositories on it). */
    counters: deltas,
    /** Inserts a pending row; its seq, or undefined when a live row already holds its dedupe key. */
    insert(row: NewMessage): number | undefined {
      const seq = deltas.nextSeq();
      // A grouped message heads its group only when the group has no other live message.
      const head = row.group == null || groupHeadOf.get(row.queue, row.group) === undefined ? 1 : 0;
      const info = insert.run(...newRowValues(row, seq, head, firstEntry(row)));
      // Counted by the next fold, not here: the send's commit leaves the counters page alone.
      if (info.changes !== 1) return undefined;
      deltas.inserted(row.queue);
      deltas.tally('sent');
      return seq;
    },
    /**
     * Inserts one row per payload, each otherwise as `template` (which has no dedupe key and no
     * group, so every row is new and heads itself), INSERT_CHUNK rows per statement; returns the
     * first seq (the rows take consecutive seqs). `midway` runs once about half of them are in.
     */
    insertMany(template: NewMessage, payloads: string[], midway?: () => void): number {
      if (template.dedupeKey !== null || template.group != null) throw new Error('insertMany takes rows without a dedupe key or a group');
      const n = payloads.length;
      const first = deltas.nextSeq(n);
      const values = newRowValues(template, first, 1, firstEntry(template));
      const shared: Record<string, unknown> = {};
      for (let i = 0; i < values.length; i++) if (i !== PAYLOAD_VALUE) shared[`v${i}`] = values[i];
      let done = 0;
      const landed = (rows: number, changes: number) => {
        if (changes !== rows) throw new Error(`An insert of ${rows} new rows stored ${changes}`);
        const before = done;
        done += rows;
        if (midway && before < n / 2 && done >= n / 2) midway();
      };
      while (n - done >= INSERT_CHUNK) {
        shared[`v${SEQ_VALUE}`] = first + done;
        landed(INSERT_CHUNK, insertChunk.run(...payloads.slice(done, done + INSERT_CHUNK), shared).changes);
      }
      while (done < n) {
        values[SEQ_VALUE] = first + done;
        values[PAYLOAD_VALUE] = payloads[done];
        landed(1, insert.run(...values).changes);
      }
      deltas.inserted(template.queue, n);
      deltas.tally('sent', n);
      return first;
    },
    /** The id of the live message holding `key` in `queue`. */
    liveIdByKey(queue: string, key: string): string | undefined {
      return liveByKey.get(queue, key) as string | undefined;
    },
    /** Pending plus in-flight messages of a queue, this transaction's changes included. */
    countLive(queue: string): number {
      let n = liveCount.get({ queue }) as number;
      for (const state of LIVE) n += deltas.pending(queue, state);
      return n;
    },
    /** Records a queue name (idempotent). */
    addQueue(name: string, now: number): void {
      insertQueue.run(name, now);
    },
    /** Every queue ever sent to. */
    queueNames(): string[] {
      return listQueues.all() as string[];
    },
    /** Marks delayed rows whose time has come as ready; returns the queues that got some. */
    promoteDue(now: number): Set<string> {
      deltas.beforeChange();
      return new Set(promote.all(now) as string[]);
    },
    /** The earliest visible-at among delayed pending rows. */
    nextDelayedAt(): number | null {
      return (nextDelayed.get() as number | null | undefined) ?? null;
    },
    /** Up to `limit` ready pending rows of `queue`, in claim order. */
    candidates(queue: string, limit: number): MessageRow[] {
      const st = candidatesFor(limit);
      return ((st === candidates ? st.all(queue, limit) : st.all(queue)) as unknown[][]).map(toMessageRow);
    },
    /** Row `seq` as `candidates` would return it now, or undefined when it is no longer a candidate. */
    candidate(seq: number): MessageRow | undefined {
      const r = candidateBySeq.get(seq) as unknown[] | undefined;
      return r === undefined ? undefined : toMessageRow(r);
    },
    /** `PRAGMA data_version`: changes when another connection commits to the database. */
    dataVersion(): number {
      return dataVersion.get() as number;
    },
    /** Applies a fenced transition; false when the row moved on (stale attempt). */
    write(t: RowTransition): boolean {
      deltas.beforeChange();
      const c = t.context;
      const done = t.state === 'dead' || t.state === 'done';
      const entry = !recording()
        ? null
        : t.via === undefined
          ? encodeEntry(t.now, t.expectState, t.state, c.attempt, t.code)
          : `${encodeEntry(t.now, t.expectState, t.via, c.attempt)},${encodeEntry(t.now, t.via, t.state, c.attempt, t.code)}`;
      const lastError = c.lastError === null ? null : JSON.stringify(c.lastError);
      const ready = c.visibleAt <= t.now ? 1 : 0;
      const firstDelivery = t.handedOut ? t.now : null;
      const { seq, expectState, expectToken } = t;
      const info =
        done || expectState === 'dead' || expectState === 'done'
          ? write.run(t.state, c.failures, c.attempt, c.deliveries, c.crashes, c.visibleAt, c.leaseExpiresAt, lastError, ready, t.leaseToken, t.owner,
              done ? t.now : null, t.now, firstDelivery, entry, entry, seq, expectState, expectToken)
          : writeLive.run(t.state, c.failures, c.attempt, c.deliveries, c.crashes, c.visibleAt, c.leaseExpiresAt, lastError, ready, t.leaseToken, t.owner,
              t.now, firstDelivery, entry, entry, seq, expectState, expectToken);
      const changed = info.changes === 1;
      if (changed && t.code !== undefined) deltas.failed(t.code);
      if (changed && t.state !== t.expectState) {
        deltas.add(t.queue, t.expectState, -1);
        deltas.add(t.queue, t.state, 1);
        if (done) deltas.tally(t.state === 'done' ? 'completed' : 'dead');
        if (t.group != null && !LIVE.includes(t.state)) promoteGroup(t.queue, t.group);
        // Back to life (a requeue) with the head flag it left with, while the group's next message
        // heads it now: decided again, or two of its messages would run at once.
        else if (t.group != null && !LIVE.includes(t.expectState)) reviveInGroup(t.seq, t.queue, t.group);
      }
      return changed;
    },
    /** Marks an in-flight row as abandoned by a graceful stop (not a crash) for the next recovery. */
    markAbandoned(seq: number, token: string): boolean {
      deltas.beforeChange();
      return abandon.run(ABANDONED, seq, token).changes === 1;
    },
    /**
     * Takes back the mark of a row whose abandoned handler still runs in this process: a crash
     * from now on happens with it really in flight, and must be counted as one.
     */
    unmarkAbandoned(seq: number, token: string): boolean {
      deltas.beforeChange();
      return abandon.run(null, seq, token).changes === 1;
    },
    /** Deletes a row if still in `state` under `token` (its timeline ended by `end`); false when stale. */
    remove(seq: number, queue: string, state: MessageState, token: string | null, group: string | null, end: RowEnd): boolean {
      return together(() => {
        deltas.beforeChange();
        archiveRow(seq, state, token, end);
        // The archive matched nothing unless this DELETE will delete (the same fence, in the same
        // transaction), and a failed DELETE rolls back with the transaction.
        if (removeFenced.run(seq, state, token).changes !== 1) return false;
        deltas.add(queue, state, -1);
        if (end.reason === 'done') deltas.tally('completed');
        if (group !== null && LIVE.includes(state)) promoteGroup(queue, group);
        return true;
      });
    },
    /** The queue, group and attempt of the processing row `token` holds, or undefined (stale). */
    leasedRow(seq: number, token: string): LeasedRow | undefined {
      return leased.get(seq, token) as LeasedRow | undefined;
    },
    /**
     * Deletes a processing row if `token` still holds it (an ended lease, kept nowhere): what it
     * was, or undefined for a stale token. `known` is what the lease's holder already has; the
     * row is then not read first (a leased row keeps its queue, group and attempt under one token).
     */
    removeLeased(seq: number, token: string, now: number, known?: LeasedRow): LeasedRow | undefined {
      return together(() => {
        deltas.beforeChange();
        const row = known ?? (leased.get(seq, token) as LeasedRow | undefined);
        if (!row) return undefined;
        archiveRow(seq, 'processing', token, { to: 'done', attempt: row.attempt, at: now, reason: 'done' });
        if (removeLeased.run(seq, token).changes !== 1) return undefined;
        deltas.add(row.queue, 'processing', -1);
        deltas.tally('completed');
        if (row.grp !== null) promoteGroup(row.queue, row.grp);
        return row;
      });
    },
    /** A message's timeline, oldest first: from its row, or from the history table once it is gone. */
    history(id: string): StoredHistory | undefined {
      const seq = seqOf(id);
      const live = seq === undefined ? byLegacyId.get(id) as MessageRow | undefined : undefined;
      const rowSeq = seq ?? live?.seq;
      if (rowSeq !== undefined) {
        const row = historyOfRow.get(rowSeq, id) as [string | null, number] | undefined;
        if (row !== undefined) return { entries: row[0] === null ? [] : decodeTimeline(withSendEntry(row[0], row[1])) };
      }
      const gone = (seq === undefined ? archivedById.get(id) : archivedBySeq.get(seq, id)) as
        | { id: string; queue: string; state: string; reason: string; timeline: string; createdAt: number; finishedAt: number }
        | undefined;
      if (!gone) return undefined;
      return {
        entries: decodeTimeline(withSendEntry(gone.timeline, gone.createdAt)),
        removed: { reason: gone.reason, state: gone.state, queue: gone.queue, createdAt: gone.createdAt, at: gone.finishedAt },
      };
    },
    sweepHistory: removal.sweepHistory,
    sweepDedupeWindow: removal.sweepDedupeWindow,
    removeSettled: removal.removeSettled,
    /** In-flight rows whose pull lease ran out by `now`: those without a deadline, then oldest deadline first. */
    expiredLeases(now: number, limit: number): MessageRow[] {
      const undated = undatedLeases.all(limit) as MessageRow[];
      return undated.length < limit ? undated.concat(expiredLeases.all(now, limit - undated.length) as MessageRow[]) : undated;
    },
    /** How many rows ever entered pending in `queue` (committed; grows only). */
    arrivals(queue: string): number {
      return arrivalsOf.get({ queue }) as number;
    },
    /** A queue's arrivals counter, the earliest delayed visible-at and the earliest pull lease deadline. */
    pollState(queue: string): [number, number | null, number | null] {
      return pollState.get({ queue }) as [number, number | null, number | null];
    },
    /** The nearest delayed row's visible-at and the nearest pull lease deadline (null: none). */
    dueTimes(): [number | null, number | null] {
      return dueTimes.get() as [number | null, number | null];
    },
    /** The nearest pull lease deadline, or null. */
    nextLeaseExpiry(): number | null {
      return (nextLeaseExpiry.get() as number | null | undefined) ?? null;
    },
    /** The nearest delayed row of one queue, or null. */
    nextDelayedIn(queue: string): number | null {
      return (nextDelayedIn.get(queue) as number | null | undefined) ?? null;
    },
    /**
     * Moves a row to another queue (a dead-letter queue, or back from one), keeping its id, body,
     * attributes and deduplication id (and its send time, except into a FIFO dead-letter queue,
     * where its retention starts over, as in SQS); false when it moved on. Its old group gets its next head;
     * in the new queue it waits while its group has a message in flight there, then goes by seq.
     */
    move(row: { seq: number; queue: string; state: MessageState; grp: string | null }, to: string, sourceQueue: string | null, now: number): boolean {
      deltas.beforeChange();
      const moved = moveQueue.run({ to, source: sourceQueue, now, seq: row.seq, state: row.state, from: row.queue }).changes === 1;
      if (moved) {
        deltas.add(row.queue, row.state, -1);
        deltas.add(to, row.state, 1);
        if (row.grp !== null) {
          rehead.run(row.queue, row.grp);
          rehead.run(to, row.grp);
          deltas.arrived(row.queue); // The group's next message there may head it now.
        }
      }
      return moved;
    },
    /** A statement prepared once per SQL text (the query builders' dynamic SQL). */
    statement(text: string): Database.Statement {
      let st = statements.get(text);
      if (!st) {
        if (statements.size > 200) statements.clear();
        statements.set(text, (st = sqlite.prepare(text)));
      }
      return st;
    },
    /** The push runtime's in-flight rows (for boot recovery), through the partial index: no table scan at boot. */
    inflight(limit: number): MessageRow[] {
      return inflight.all(limit) as MessageRow[];
    },
    /** One message by seq. */
    bySeq(seq: number): MessageRow | undefined {
      return bySeq.get(seq) as MessageRow | undefined;
    },
    /** One message by id. */
    byId(id: string): MessageRow | undefined {
      const seq = seqOf(id);
      return (seq === undefined ? byLegacyId.get(id) : byNumericId.get(seq)) as MessageRow | undefined;
    },
    /** The seq of the live message with this id, or undefined (reads only the seq, not the row). */
    seqOfId(id: string): number | undefined {
      const seq = seqOf(id);
      return (seq === undefined ? seqOfLegacyId.get(id) : seqOfNumericId.get(seq)) as number | undefined;
    },
    /** Row counts per queue and state (states with none left out). */
    counts(): { queue: string; state: MessageState; n: number }[] {
      return counts.all() as { queue: string; state: MessageState; n: number }[];
    },
    /**
     * Rows in a state, optionally of one queue, oldest first (after `afterSeq`: pages by seq; with
     * `sourced`, only rows that came from another queue: a redrive's candidates).
     */
    listByState(state: MessageState, queue: string | undefined, limit: number, afterSeq = 0, sourced = false): MessageRow[] {
      return orm
        .select(rowSelection)
        .from(messages)
        .where(
          and(
            eq(messages.state, state),
            queue === undefined ? undefined : eq(messages.queue, queue),
            afterSeq > 0 ? gt(messages.seq, afterSeq) : undefined,
            sourced ? isNotNull(messages.sourceQueue) : undefined,
          ),
        )
        .orderBy(asc(messages.seq))
        .limit(limit)
        .all() as MessageRow[];
    },
    /** Deletes up to `limit` rows of `queue` in the given states; returns them. */
    purgeBatch(queue: string, states: MessageState[], limit: number): RemovedRow[] {
      const seqs = orm
        .select({ seq: messages.seq })
        .from(messages)
        .where(and(eq(messages.queue, queue), inArray(messages.state, states)))
        .limit(limit)
        .all()
        .map((r) => r.seq);
      return removal.removeSeqs(seqs);
    },
    expiredSeqs: removal.expiredSeqs,
    deleteExpired: removal.deleteExpired,
    sweepBatch: removal.sweepBatch,
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
    freePages: removal.freePages,
    incrementalVacuumOn: removal.incrementalVacuumOn,
    incrementalVacuum: removal.incrementalVacuum,
    checkpointPassive: removal.checkpointPassive,
    checkpointTruncate: removal.checkpointTruncate,
  };
}

const rowSelection = {
  seq: messages.seq,
  id: sql<string>`coalesce(${messages.legacyId}, CAST(${messages.seq} AS TEXT))`.as('id'),
  queue: messages.queue,
  payload: messages.payload,
  state: messages.state,
  failures: messages.failures,
  attempt: messages.attempt,
  deliveries: messages.deliveries,
  crashes: messages.crashes,
  visibleAt: messages.visibleAt,
  leaseExpiresAt: messages.leaseExpiresAt,
  lastError: messages.lastError,
  priority: messages.priority,
  leaseToken: messages.leaseToken,
  owner: messages.owner,
  createdAt: messages.createdAt,
  updatedAt: messages.updatedAt,
  finishedAt: messages.finishedAt,
  grp: messages.grp,
  attributes: messages.attributes,
  sourceQueue: messages.sourceQueue,
  firstDeliveredAt: messages.firstDeliveredAt,
  schedule: messages.schedule,
  scheduledFor: messages.scheduledFor,
  dedupeId: messages.dedupeId,
};

/** The repository's type. */
export type Repository = ReturnType<typeof createRepository>;
