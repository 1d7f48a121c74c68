/**
 * Operations on stored messages, the admin side of a spool: get, stats, dead, requeue, purge and
 * sweep. None needs the owner lock: a producer or the CLI runs them beside the running owner.
 * Bulk deletes announce each removed row (`message.removed`) when someone listens.
 */
import { statSync } from 'node:fs';
import { browse, type BrowsePage, type BrowseQuery } from './browse.js';
import { type MessageRow, type Repository } from './db/repository.js';
import type { RemovedRow } from './db/removal.js';
import { COMMIT_BUCKETS_MS, toStorageError } from './runtime/committer.js';
import type { HistoryEntry } from './runtime/history.js';
import { runTransaction, sqliteCode } from './db/transaction.js';
import { SpoolError } from './errors.js';
import type { EventBus, MessageRemovedEvent } from './events.js';
import type { Clock } from './clock.js';
import { compiledMessageMachine as machine, type MessageMachineState } from '../machines/compiled.js';
import type { QueueDirectory } from './queues/directory.js';
import { createMaintenance, type Maintenance } from './runtime/maintenance.js';
import { deadLetter, rowState, toMessageInfo, transitionRow, type MessageInfo } from './runtime/message-codec.js';
import type { QueueControlStats } from './runtime/control.js';
import type { PoolsView } from './runtime/pools.js';
import type { SettingsRuntime } from './settings/store.js';
import type { Storage } from './storage.js';
import { assertQueueName } from './validate.js';

/** Per-queue counts in stats(). `done` counts finished rows kept by retention. */
export interface QueueCounts {
  pending: number;
  activating: number;
  processing: number;
  dead: number;
  done: number;
}

/** What stats() returns. */
export interface SpoolStats {
  accepting: boolean;
  queues: Record<string, QueueCounts>;
  pools: PoolsView;
  /** Load control of each queue that has a rate limit, a budget or a RateLimitError pause. */
  control: Record<string, QueueControlStats>;
}

/**
 * Which dead letters requeue() sends back: one id, every dead message (of a queue), or these ids
 * (with `queue`, only those still dead in that queue).
 */
export type RequeueFilter = string | { queue?: string } | { ids: string[]; queue?: string };

/** `get(id, { history: true })`: the message and its committed transitions, oldest first. */
export type MessageWithHistory = MessageInfo & { history: HistoryEntry[] };

/** Counters since the spool opened its file (`spool.telemetry()`), for metrics. */
export interface Telemetry {
  /** Messages stored by this handle's commits. */
  sent: number;
  completed: number;
  /** Failed attempts by error code. */
  failed: Record<string, number>;
  dead: number;
  /** Writes that met a database locked by another connection. */
  storageBusy: number;
  /** Group commits: count, summed ms, cumulative counts per upper bound `le` (ms). */
  commit: { count: number; sumMs: number; buckets: { le: number; count: number }[] };
  /** Sizes of the database file and its WAL, bytes (0 when absent). */
  dbBytes: number;
  walBytes: number;
}

/** A deleted message's timeline: why and when it went, and its transitions, oldest first. */
export interface RemovedHistory {
  id: string;
  queue: string;
  /** The state it ended in ('done', or the state it was removed from). */
  state: string;
  /** 'done', 'deleted', 'purged', 'swept' or 'retention'. */
  reason: string;
  createdAt: number;
  /** When its row was deleted (epoch ms; a sweep's deletes: its last change). */
  at: number;
  history: HistoryEntry[];
}

/** Ids per remove() or requeue({ ids }) call, at most. */
export const MAX_IDS = 10_000;

/** What the operations need. */
export interface OperationsDeps {
  storage: Storage;
  settings: SettingsRuntime;
  bus: EventBus;
  clock: Clock;
  /** Queue kinds and attributes (which queues' messages expire). */
  directory: QueueDirectory;
  /** Pool limits and use (the supervisor's view; created on demand). */
  pools(): PoolsView;
  /** Load control per queue (the supervisor's view); `queues` are the names stats() knows. */
  control?(queues: Iterable<string>): Record<string, QueueControlStats>;
  /** A requeued message of `queue` is ready: the running supervisor may claim it. */
  requeued(queue: string): void;
  /** Queues with a registered handler (stats lists them even when idle). */
  registered?(): Iterable<string>;
  /** The database file's path (telemetry reads its size). */
  path?: string;
}

/** Rows per purge transaction: small enough that claims and sends get in between. */
const PURGE_BATCH = 1000;
/** Dead letters per requeue({ queue }) transaction, for the same reason. */
const REQUEUE_BATCH = 1000;

/**
 * The operation, rejecting only with a SpoolError: its reads run outside storage.transaction(),
 * and on a damaged file a raw SqliteError would escape the public API (STORAGE_ERROR instead).
 */
function coded<A extends unknown[], R>(operation: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args) => {
    try {
      return await operation(...args);
    } catch (error) {
      throw toStorageError(error);
    }
  };
}

/** Creates the operations. */
export function createOperations(deps: OperationsDeps) {
  const { storage, settings, bus, clock } = deps;
  let maintenance: Maintenance | undefined;

  /** Announces deleted rows (only when someone listens: a purge may delete a million). */
  function announceRemoved(rows: RemovedRow[], reason: MessageRemovedEvent['reason']) {
    if (bus.idle || rows.length === 0) return;
    const at = clock.now();
    for (const row of rows) bus.emit({ type: 'message.removed', id: row.id, queue: row.queue, from: row.state, reason, at });
  }

  function ensureMaintenance(): Maintenance {
    const { db, repo, committer } = storage.open();
    maintenance ??= createMaintenance({
      db,
      repo,
      clock,
      events: bus,
      settings,
      gate: committer,
      removed: (rows, reason) => announceRemoved(rows, reason),
      retentions: () => deps.directory.retentions(),
    });
    return maintenance;
  }

  /** Moves dead `rows` back to pending in one transaction, announcing each; how many moved. */
  function requeueRows(rows: MessageRow[]): number {
    const { repo } = storage.open();
    const now = clock.now();
    const moved: MessageRow[] = [];
    storage.transaction(() => {
      for (const row of rows) {
        let state: MessageMachineState;
        try {
          state = rowState(row);
        } catch {
          // A corrupt dead letter is rebuilt as a fresh one; its payload is checked again at claim.
          state = deadLetter(row.visibleAt, now, { code: 'CORRUPT_ROW', message: 'rebuilt at requeue' });
        }
        const next = machine.step(state, { type: 'REQUEUE', at: now });
        const change = transitionRow(row, { state: 'dead', token: row.leaseToken }, next, { token: null, owner: null }, now);
        try {
          if (repo.write(change)) moved.push(row);
        } catch (error) {
          // Its key (or content) is held by a live message sent since: it stays dead, the rest move.
          if (sqliteCode(error) !== 'SQLITE_CONSTRAINT_UNIQUE') throw error;
        }
      }
    });
    for (const row of moved) {
      bus.emit({ type: 'message.state', id: row.id, queue: row.queue, from: 'dead', to: 'pending', attempt: 0, at: now });
      deps.requeued(row.queue);
    }
    return moved.length;
  }

  return {
    /** The maintenance sweep (its schedule runs while the spool is started). */
    maintenance: ensureMaintenance,
    /** The sweep if it was ever created (for shutdown steps). */
    get existingMaintenance() {
      return maintenance;
    },
    get: coded(async (id: string, getOptions?: { history?: boolean }): Promise<MessageInfo | MessageWithHistory | undefined> => {
      if (typeof id !== 'string') throw new SpoolError('INVALID_ARGUMENT', `Expected a message id string, got ${typeof id}`);
      if (
        getOptions !== undefined &&
        (getOptions === null || typeof getOptions !== 'object' || Array.isArray(getOptions) || Object.keys(getOptions).some((k) => k !== 'history') || !['undefined', 'boolean'].includes(typeof getOptions.history))
      ) {
        throw new SpoolError('INVALID_ARGUMENT', 'get() options take only { history: boolean }', { details: { field: 'options' } });
      }
      const { repo, db } = storage.open();
      if (getOptions?.history !== true) {
        const row = repo.byId(id);
        return row && toMessageInfo(row);
      }
      // One read transaction: the row and its timeline agree.
      return runTransaction(db.sqlite, () => {
        const row = repo.byId(id);
        if (!row) return undefined;
        return { ...toMessageInfo(row), history: repo.history(id)?.entries ?? [] };
      }, 'deferred');
    }),
    /** A deleted message's timeline (why it went, and when), from the history table. */
    removedHistory: coded(async (id: string): Promise<RemovedHistory | undefined> => {
      if (typeof id !== 'string') throw new SpoolError('INVALID_ARGUMENT', `Expected a message id string, got ${typeof id}`);
      const found = storage.open().repo.history(id);
      return found?.removed ? { ...found.removed, id, history: found.entries } : undefined;
    }),
    browse: coded(async (query: BrowseQuery): Promise<BrowsePage> => {
      return browse(storage.open().repo, query);
    }),
    remove: coded(async (ids: string[], removeOptions?: { state?: 'pending' | 'dead' | 'done'; queue?: string }): Promise<number> => {
      const seqs = seqsOf(ids, 'remove()', storage.open().repo);
      const state = removeOptions?.state;
      if (
        removeOptions !== undefined &&
        (removeOptions === null || typeof removeOptions !== 'object' || Array.isArray(removeOptions) || Object.keys(removeOptions).some((k) => k !== 'state' && k !== 'queue') ||
          (state !== undefined && state !== 'pending' && state !== 'dead' && state !== 'done'))
      ) {
        throw new SpoolError('INVALID_ARGUMENT', "remove() options take only { state?: 'pending' | 'dead' | 'done', queue?: string }", { details: { field: 'options' } });
      }
      if (removeOptions?.queue !== undefined) assertQueueName(removeOptions.queue);
      const fence = { ...(state === undefined ? {} : { state }), ...(removeOptions?.queue === undefined ? {} : { queue: removeOptions.queue }) };
      let total = 0;
      for (let i = 0; i < seqs.length; i += PURGE_BATCH) {
        const { repo } = storage.open();
        const removed = storage.transaction(() => repo.removeSettled(seqs.slice(i, i + PURGE_BATCH), fence));
        total += removed.length;
        announceRemoved(removed, 'deleted');
      }
      return total;
    }),
    telemetry(): Telemetry {
      const opened = storage.opened;
      const totals = opened?.repo.counters.totals;
      const commit = opened?.committer.telemetry;
      let cumulative = 0;
      return {
        sent: totals?.sent ?? 0,
        completed: totals?.completed ?? 0,
        failed: Object.fromEntries(totals?.failed ?? []),
        dead: totals?.dead ?? 0,
        storageBusy: commit?.storageBusy ?? 0,
        commit: {
          count: commit?.count ?? 0,
          sumMs: commit?.sumMs ?? 0,
          buckets: COMMIT_BUCKETS_MS.map((le, i) => ({ le, count: (cumulative += commit?.buckets[i] ?? 0) })),
        },
        dbBytes: fileBytes(deps.path),
        walBytes: fileBytes(deps.path === undefined ? undefined : `${deps.path}-wal`),
      };
    },
    stats: coded(async (): Promise<SpoolStats> => {
      const { repo } = storage.open();
      // No prototype: a queue may be called "constructor" or "__proto__".
      const queues: Record<string, QueueCounts> = Object.create(null);
      for (const { queue, state, n } of repo.counts()) {
        queues[queue] ??= { pending: 0, activating: 0, processing: 0, dead: 0, done: 0 };
        queues[queue][state] = n;
      }
      // Every queue the spool knows is listed, idle ones with zeros: sent to or created (the
      // queues table), configured, or with a registered handler.
      for (const name of [...repo.queueNames(), ...Object.keys(settings.get().queues), ...(deps.registered?.() ?? [])]) {
        queues[name] ??= { pending: 0, activating: 0, processing: 0, dead: 0, done: 0 };
      }
      const known = Object.keys(queues);
      return { accepting: settings.get().accepting, queues, pools: deps.pools(), control: deps.control?.(known) ?? {} };
    }),
    dead: coded(async (queue?: string, listOptions?: { limit?: number }): Promise<MessageInfo[]> => {
      if (queue !== undefined) assertQueueName(queue);
      if (listOptions !== undefined && (listOptions === null || typeof listOptions !== 'object' || Array.isArray(listOptions) || Object.keys(listOptions).some((k) => k !== 'limit'))) {
        throw new SpoolError('INVALID_ARGUMENT', 'dead() options take only { limit: number }', { details: { field: 'options' } });
      }
      const limit = listOptions?.limit ?? 1000;
      if (!Number.isSafeInteger(limit) || limit < 1) {
        throw new SpoolError('INVALID_ARGUMENT', `Expected dead() limit to be a safe integer from 1 and up, got ${String(limit)}`);
      }
      return storage.open().repo.listByState('dead', queue, limit).map(toMessageInfo);
    }),
    requeue: coded(async (filter: RequeueFilter): Promise<number> => {
      // An id, or a plain filter object: anything else (an undefined id, say) must not mean "all".
      const isFilter = filter !== null && typeof filter === 'object' && !Array.isArray(filter);
      if (typeof filter !== 'string' && !isFilter) {
        throw new SpoolError('INVALID_ARGUMENT', `Expected requeue() to get a message id, { queue? } or { ids }, got ${filter === null ? 'null' : typeof filter}`);
      }
      const byIds = isFilter && 'ids' in filter;
      if (isFilter && Object.keys(filter).some((key) => key !== 'queue' && (!byIds || key !== 'ids'))) {
        throw new SpoolError('INVALID_ARGUMENT', `requeue() filters take only { queue } or { ids, queue? }, got keys ${Object.keys(filter).join(', ')}`);
      }
      const { repo } = storage.open();
      const seqs = byIds ? seqsOf((filter as { ids: string[] }).ids, 'requeue({ ids })', repo) : [];
      const queue = typeof filter === 'string' ? undefined : (filter as { queue?: string }).queue;
      if (queue !== undefined) assertQueueName(queue);
      // With ids, `queue` fences: a letter redriven or moved since its caller chose it stays.
      const isDead = (row: MessageRow | undefined): row is MessageRow => row?.state === 'dead' && (queue === undefined || row.queue === queue);
      if (typeof filter === 'string') return requeueRows([repo.byId(filter)].filter(isDead));
      if (byIds) return requeueRows(seqs.map((seq) => repo.bySeq(seq)).filter(isDead));
      // Every dead letter (of a queue): a transaction per batch, walked by seq, so the write lock is
      // let go between batches and a letter that dies again meanwhile is not requeued twice.
      let total = 0;
      for (let after = 0; ; ) {
        // Re-opened each batch: a close() between batches ends the requeue with CLOSED.
        const rows = storage.open().repo.listByState('dead', queue, REQUEUE_BATCH, after);
        if (rows.length === 0) return total;
        total += requeueRows(rows);
        after = rows.at(-1)!.seq;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }),
    purge: coded(async (queue: string, purgeOptions: { state: 'pending' | 'dead' | 'done' }): Promise<number> => {
      assertQueueName(queue);
      const state = purgeOptions?.state;
      if (state !== 'pending' && state !== 'dead' && state !== 'done') {
        throw new SpoolError('INVALID_ARGUMENT', `purge() takes state 'pending', 'dead' or 'done', got ${String(state)}`);
      }
      let total = 0;
      for (;;) {
        // Re-opened each batch: a close() between batches ends the purge with CLOSED.
        const { repo } = storage.open();
        const removed = storage.transaction(() => repo.purgeBatch(queue, [state], PURGE_BATCH));
        total += removed.length;
        announceRemoved(removed, 'purged');
        if (removed.length < PURGE_BATCH) break;
        // Let claims and sends in between batches.
        await new Promise((resolve) => setImmediate(resolve));
      }
      return total;
    }),
    async sweep(): Promise<{ deleted: number; freedPages: number; longestBatchMs: number }> {
      return ensureMaintenance().sweep();
    },
  };
}

/** The seqs of message ids (legacy UUIDs looked up); INVALID_ARGUMENT for anything but a list of ids. */
function seqsOf(ids: unknown, call: string, repo: Repository): number[] {
  if (!Array.isArray(ids) || ids.length > MAX_IDS || ids.some((id) => typeof id !== 'string' || id.length === 0 || id.length > 200)) {
    throw new SpoolError('INVALID_ARGUMENT', `Expected ${call} to get an array of up to ${MAX_IDS} message id strings`, { details: { field: 'ids', max: MAX_IDS } });
  }
  const seqs: number[] = [];
  for (const id of ids as string[]) {
    // Looked up even when decimal: the seq of a migrated 0.1.0 row is not its id.
    const seq = repo.seqOfId(id);
    if (seq !== undefined) seqs.push(seq);
  }
  return seqs;
}

function fileBytes(file: string | undefined): number {
  if (file === undefined) return 0;
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** The operations' type. */
export type Operations = ReturnType<typeof createOperations>;
