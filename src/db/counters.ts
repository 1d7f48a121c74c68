/**
 * The `counters` table, kept without an index on `messages`:
 * - Row counts per queue and state. The repository records a delta for every row it moves or
 *   deletes, and the deltas of a transaction are written just before it commits (one upsert per
 *   queue and state touched, not one per row).
 * - The fold mark (`last_seq`): the seq of a new message is the next one after it (or after the
 *   newest row), so a seq, and the id made from it, is never reused even when the newest row is
 *   deleted.
 * - Arrivals per queue (scope '', name `arrivals:<queue>`): how many rows ever entered `pending`
 *   there (a send, a retry, an abort, a requeue, a move) or became claimable in it (a group's next
 *   head, when the message before it left). It only grows, so a pull waiter in
 *   another process can tell from one small read whether its queues got anything since it looked,
 *   instead of querying the messages at every commit of any queue (see pull/wait-room.ts).
 *
 * A send does not write this table: its row, above the mark, is "unfolded", and readers add the
 * unfolded rows to the stored counts (UNFOLDED_SQL). A transaction folds them in (counts,
 * arrivals and mark) before its first update or delete of a message row (beforeChange), so an
 * unfolded row is always exactly as it was inserted; and once the unfolded range reaches
 * FOLD_EVERY seqs, which bounds what a reader scans. A transaction that inserted every unfolded
 * row folds them in its own deltas, without reading them back (foldOwn). So a one-by-one send
 * commits two B-tree pages (its row and its claim-index entry), not three. Savepoints that roll
 * back take their deltas with them, so the counts always agree with
 * `SELECT queue, state, count(*) FROM messages GROUP BY 1, 2` (a test and the crash checker
 * compare the two).
 *
 * Migration 0004 had two triggers do that fold, before any update or delete of an unfolded row by
 * any connection. They cost every UPDATE of a message row about 5 µs and every DELETE about 2.5 µs
 * even when they did not fire (test/bench/trigger-cost.ts: SQLite reads the old row for a trigger
 * and checks its WHEN, a subquery on the mark, row by row), and a message takes one of each at
 * least. Every write of a message row goes through the repository, so 0005 dropped them and the
 * repository folds first.
 */
import type Database from 'better-sqlite3';
import type { MessageState } from '../../machines/message.machine.js';
import { MAX_SEQ, seqExhausted } from './seq-limit.js';
import { onTransaction } from './transaction.js';

/** The counters of the current transaction on one connection. */
export interface Counters {
  /** Records `delta` rows of `queue` in `state`. */
  add(queue: string, state: MessageState, delta: number): void;
  /** A waiting row of `queue` became claimable without entering pending (a group's next head). */
  arrived(queue: string): void;
  /** The delta recorded so far in this transaction for one queue and state. */
  pending(queue: string, state: MessageState): number;
  /**
   * The seq for the next new message (inside a write transaction), or the first of `count`
   * consecutive ones; its row stays unfolded. Throws STORAGE_ERROR, handing out none, when the
   * last would pass MAX_SEQ (seq-limit.ts).
   */
  nextSeq(count?: number): number;
  /** `count` rows of `queue` were inserted, the last with the last seq handed out (this transaction's own, unfolded). */
  inserted(queue: string, count?: number): void;
  /**
   * Before a statement that may update or delete message rows: folds every unfolded row first (this
   * transaction's own into its deltas, others with one fold in SQL), once per transaction and
   * again only after it inserts.
   */
  beforeChange(): void;
  /** Counts committed outcomes for telemetry (kept in memory only, with the transaction). */
  tally(outcome: 'sent' | 'completed' | 'dead', count?: number): void;
  /** Counts a failed attempt with its error code, for telemetry. */
  failed(code: string): void;
  /** What this connection's committed transactions did since it opened (telemetry). */
  readonly totals: OutcomeTotals;
}

/** Messages sent, completed, dead, and failed attempts by code, over committed transactions. */
export interface OutcomeTotals {
  sent: number;
  completed: number;
  dead: number;
  failed: Map<string, number>;
}

/** The counters name of a queue's arrivals (under scope ''; queue names never hold a colon). */
function arrivalsName(queue: string): string {
  return `arrivals:${queue}`;
}

/** The fold mark: rows with a greater seq are not yet in the counts. */
const READ_MARK_SQL = "SELECT n FROM counters WHERE scope = '' AND name = 'last_seq'";
const MARK_SQL = `(${READ_MARK_SQL})`;

/** Sends above the mark before a transaction folds them itself (a reader scans at most these). */
export const FOLD_EVERY = 64;

/** The unfolded rows of `@queue` in `@state`: add them to the stored count. */
const UNFOLDED_SQL = `(SELECT count(*) FROM messages WHERE seq > ${MARK_SQL} AND queue = @queue AND state = @state)`;

/** The stored count of `@queue` in `@state` plus its unfolded rows. */
export const COUNT_SQL = `SELECT coalesce((SELECT n FROM counters WHERE scope = @queue AND name = @state), 0) + ${UNFOLDED_SQL}`;

/** The pending and in-flight rows of `@queue`, stored counts plus unfolded rows, in one statement. */
export const LIVE_COUNT_SQL = `SELECT coalesce((SELECT sum(n) FROM counters WHERE scope = @queue AND name IN ('pending', 'activating', 'processing')), 0)
  + (SELECT count(*) FROM messages WHERE seq > ${MARK_SQL} AND queue = @queue AND state IN ('pending', 'activating', 'processing'))`;

/** The arrivals of `@queue`, unfolded pending rows included (the value a waiter compares). */
export const ARRIVALS_SQL = `coalesce((SELECT n FROM counters WHERE scope = '' AND name = 'arrivals:' || @queue), 0)
  + (SELECT count(*) FROM messages WHERE seq > ${MARK_SQL} AND queue = @queue AND state = 'pending')`;

/** Every queue's count per state (positive ones), unfolded rows included, by queue and state. */
export const COUNTS_SQL = `SELECT queue, state, sum(n) AS n FROM (
    SELECT scope AS queue, name AS state, n FROM counters WHERE scope != ''
    UNION ALL SELECT queue, state, count(*) FROM messages WHERE seq > ${MARK_SQL} GROUP BY queue, state)
  GROUP BY queue, state HAVING sum(n) > 0 ORDER BY queue, state`;

interface Pending {
  /** queue → state → delta. Nested maps, so a queue name never has to be joined into a key. */
  deltas: Map<string, Map<MessageState, number>>;
  /** The last seq handed out in this transaction, or null before the first. */
  lastSeq: number | null;
  /** The fold mark as this transaction read it at its first seq (or last moved it to). */
  mark: number;
  /**
   * True while every unfolded row is one this transaction inserted: none was unfolded at its first
   * seq, and no fold of other rows has moved the mark since (it is still `mark`).
   */
  clean: boolean;
  /** queue → rows this transaction inserted that are still unfolded; null for none. */
  own: Map<string, number> | null;
  /** The seq of the last row this transaction inserted (a dedupe hit uses a seq but adds no row). */
  ownTo: number;
  /** queue → rows that entered pending in this transaction. */
  arrivals: Map<string, number>;
  /** Outcomes of this transaction, added to the totals at its commit. */
  sent: number;
  completed: number;
  dead: number;
  /** Failed attempts by code; null until the first (most transactions have none). */
  failed: Map<string, number> | null;
}

/** Attaches the counters to a connection. */
export function attachCounters(sqlite: Database.Database): Counters {
  const upsert = sqlite.prepare('INSERT INTO counters (scope, name, n) VALUES (?, ?, ?) ON CONFLICT (scope, name) DO UPDATE SET n = n + excluded.n');
  // Rows written by hand (an operator's INSERT) take max + 1: never hand out a seq below them.
  const readSeqs = sqlite.prepare(`SELECT coalesce(${MARK_SQL}, 0), coalesce((SELECT max(seq) FROM messages), 0)`).raw();
  // Changes when another connection commits (never for this one's own commits).
  const dataVersion = sqlite.prepare('PRAGMA data_version').pluck();
  // The fold of any unfolded rows at all, read back from the table (foldOwn only folds rows this
  // transaction inserted, counted as it inserted them); the mark then moves to the newest row.
  const foldCounts = sqlite.prepare(
    `INSERT INTO counters (scope, name, n) SELECT queue, state, count(*) FROM messages WHERE seq > ${MARK_SQL}
       GROUP BY queue, state ON CONFLICT (scope, name) DO UPDATE SET n = n + excluded.n`,
  );
  const foldArrivals = sqlite.prepare(
    `INSERT INTO counters (scope, name, n) SELECT '', 'arrivals:' || queue, count(*) FROM messages WHERE seq > ${MARK_SQL} AND state = 'pending'
       GROUP BY queue ON CONFLICT (scope, name) DO UPDATE SET n = n + excluded.n`,
  );
  const setMark = sqlite.prepare("INSERT INTO counters (scope, name, n) VALUES ('', 'last_seq', ?) ON CONFLICT (scope, name) DO UPDATE SET n = excluded.n");
  const fresh = (): Pending => ({
    deltas: new Map(),
    lastSeq: null,
    mark: 0,
    clean: false,
    own: null,
    ownTo: 0,
    arrivals: new Map(),
    sent: 0,
    completed: 0,
    dead: 0,
    failed: null,
  });
  let pending: Pending = fresh();
  let dirty = false;
  /** True once this transaction left no row unfolded (beforeChange); false again after it inserts. */
  let folded = false;
  /**
   * The fold mark and the newest seq as this transaction knows them (read, then kept as it hands
   * out seqs and moves the mark), or null before it needs them.
   */
  let seen: { mark: number; newest: number } | null = null;
  /**
   * What this connection's last commit left, and `PRAGMA data_version` then. While that version
   * holds, no other connection has committed, so the next transaction starts from these values
   * without reading them: a send or a concurrency-1 step read them in every transaction (~4 µs).
   * Null after a rollback, when this connection cannot tell what it left.
   */
  let known: { mark: number; newest: number; version: number } | null = null;

  /** The fold mark and the newest seq now: this transaction's, the last commit's if still current, or read. */
  function seqs(): { mark: number; newest: number } {
    if (seen === null) {
      if (known !== null && dataVersion.get() === known.version) seen = { mark: known.mark, newest: known.newest };
      else {
        const [mark, newest] = readSeqs.get() as [number, number];
        seen = { mark, newest };
      }
    }
    return seen;
  }

  /** Moves the fold mark to `to` (this transaction's view too). */
  function moveMark(to: number) {
    setMark.run(to);
    seqs().mark = to;
  }
  const totals: OutcomeTotals = { sent: 0, completed: 0, dead: 0, failed: new Map() };

  const reset = () => {
    pending = fresh();
    dirty = false;
    folded = false;
    seen = null;
  };

  function add(queue: string, state: MessageState, delta: number) {
    let states = pending.deltas.get(queue);
    if (!states) pending.deltas.set(queue, (states = new Map()));
    states.set(state, (states.get(state) ?? 0) + delta);
    if (state === 'pending' && delta > 0) pending.arrivals.set(queue, (pending.arrivals.get(queue) ?? 0) + delta);
    dirty = true;
  }

  /**
   * The fold of this transaction's own new rows. They are exactly what a fold would count: pending
   * rows, unchanged since their insert. So they go into this transaction's deltas and one small
   * write moves the mark, where a fold in SQL scans the unfolded rows twice: a batch folds without
   * reading its rows back (sendBatch of 1,000 ran about 8% faster), and a send claimed in its own
   * commit writes no pending count (+1 and −1 cancel). If the mark moved since this transaction
   * took it, or rows it did not insert lie above it, foldAll folds them in SQL instead.
   * The mark moves first: if that write fails, nothing was counted, and the rows stay unfolded.
   * It moves to the newest row, not past it.
   */
  function foldOwn(): boolean {
    const own = pending.own;
    if (own === null) return false;
    // The mark as this transaction knows it (seqs() follows every move it makes), not read again.
    if (!pending.clean || seqs().mark !== pending.mark) {
      pending.own = null;
      pending.clean = false;
      return false;
    }
    moveMark(pending.ownTo);
    pending.own = null;
    pending.mark = pending.ownTo;
    for (const [queue, n] of own) add(queue, 'pending', n);
    // Clean, and folded to its newest row: nothing is left unfolded (no other writer can insert
    // inside this write transaction).
    return pending.ownTo === pending.lastSeq;
  }

  /** Folds every unfolded row, whoever inserted it: its counts, its arrivals, then the mark. */
  function foldAll() {
    if (foldOwn()) return;
    const { mark, newest } = seqs();
    if (newest > mark) {
      foldCounts.run();
      foldArrivals.run();
      moveMark(newest);
    }
    // Any own rows were folded just now with the rest; rows inserted from here on are this
    // transaction's own again, above a mark it knows.
    pending.own = null;
    if (pending.lastSeq !== null) {
      pending.mark = Math.max(mark, newest);
      pending.clean = true;
      pending.lastSeq = Math.max(pending.lastSeq, newest);
    }
  }

  function beforeChange() {
    if (folded) return;
    foldAll();
    folded = true;
  }

  /** The deltas and outcomes of a transaction that changed any, written just before its COMMIT. */
  function writeDeltas() {
    if (pending.lastSeq !== null && pending.lastSeq - pending.mark >= FOLD_EVERY) foldAll();
    for (const [queue, states] of pending.deltas) for (const [state, n] of states) if (n !== 0) upsert.run(queue, state, n);
    for (const [queue, n] of pending.arrivals) upsert.run('', arrivalsName(queue), n);
    // Counted here, the last step before COMMIT: a commit that then fails is rare enough
    // (IOERR, a full disk at the journal's last page) that telemetry may over-count it.
    totals.sent += pending.sent;
    totals.completed += pending.completed;
    totals.dead += pending.dead;
    if (pending.failed) for (const [code, n] of pending.failed) totals.failed.set(code, (totals.failed.get(code) ?? 0) + n);
  }

  onTransaction(sqlite, {
    beforeCommit() {
      if (dirty) writeDeltas();
      // What this commit leaves, for the next transaction (see `known`); unchanged if it never
      // needed the seqs (nothing inserted, changed or folded: the last values still hold).
      if (seen !== null) known = { mark: seen.mark, newest: seen.newest, version: dataVersion.get() as number };
      reset();
    },
    rolledBack() {
      reset();
      known = null;
    },
    mark() {
      if (!dirty) return null;
      const deltas = new Map<string, Map<MessageState, number>>();
      for (const [queue, states] of pending.deltas) deltas.set(queue, new Map(states));
      const { sent, completed, dead } = pending;
      const { lastSeq, mark, clean, ownTo } = pending;
      const own = pending.own && new Map(pending.own);
      return { deltas, lastSeq, mark, clean, own, ownTo, arrivals: new Map(pending.arrivals), sent, completed, dead, failed: pending.failed && new Map(pending.failed) };
    },
    restore(mark) {
      // A fold inside the savepoint rolled back with it, and any move of the mark: read them again.
      folded = false;
      seen = null;
      known = null;
      if (mark === null) return reset();
      pending = mark as Pending;
      dirty = true;
    },
  });

  return {
    add,
    arrived(queue) {
      pending.arrivals.set(queue, (pending.arrivals.get(queue) ?? 0) + 1);
      dirty = true;
    },
    pending: (queue, state) => pending.deltas.get(queue)?.get(state) ?? 0,
    nextSeq(count = 1) {
      if (pending.lastSeq === null) {
        const { mark, newest } = seqs();
        pending.mark = mark;
        pending.clean = newest <= mark;
        pending.lastSeq = Math.max(mark, newest);
      }
      // One comparison per send or batch, before anything is inserted: past it a seq is not exact.
      if (pending.lastSeq + count > MAX_SEQ) throw seqExhausted(pending.lastSeq, count);
      const first = pending.lastSeq + 1;
      pending.lastSeq += count;
      dirty = true;
      folded = false;
      return first;
    },
    inserted(queue, count = 1) {
      // The newest row now (a dedupe hit uses up a seq but stores no row: it is not the newest).
      seqs().newest = pending.lastSeq!;
      if (!pending.clean) return;
      pending.ownTo = pending.lastSeq!;
      pending.own ??= new Map();
      pending.own.set(queue, (pending.own.get(queue) ?? 0) + count);
    },
    beforeChange,
    tally(outcome, count = 1) {
      pending[outcome] += count;
      dirty = true;
    },
    failed(code) {
      pending.failed ??= new Map();
      pending.failed.set(code, (pending.failed.get(code) ?? 0) + 1);
      dirty = true;
    },
    totals,
  };
}
