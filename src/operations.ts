/**
 * Operations on stored messages, the admin side of a spool: get, stats, dead, requeue, purge and
 * sweep. None needs the owner lock: a producer or the CLI runs them beside the running owner.
 * Bulk deletes announce each removed row (`message.removed`) when someone listens.
 */
import type { MessageRow, RemovedRow } from './db/repository.js';
import { sqliteCode } from './db/transaction.js';
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

/** Which dead letters requeue() sends back: one id, or every dead message (of a queue). */
export type RequeueFilter = string | { queue?: string };

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
}

/** Rows per purge transaction: small enough that claims and sends get in between. */
const PURGE_BATCH = 1000;

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

  return {
    /** The maintenance sweep (its schedule runs while the spool is started). */
    maintenance: ensureMaintenance,
    /** The sweep if it was ever created (for shutdown steps). */
    get existingMaintenance() {
      return maintenance;
    },
    async get(id: string): Promise<MessageInfo | undefined> {
      if (typeof id !== 'string') throw new SpoolError('INVALID_ARGUMENT', `Expected a message id string, got ${typeof id}`);
      const row = storage.open().repo.byId(id);
      return row && toMessageInfo(row);
    },
    async stats(): Promise<SpoolStats> {
      const { repo } = storage.open();
      // No prototype: a queue may be called "constructor" or "__proto__".
      const queues: Record<string, QueueCounts> = Object.create(null);
      for (const { queue, state, n } of repo.counts()) {
        queues[queue] ??= { pending: 0, activating: 0, processing: 0, dead: 0, done: 0 };
        queues[queue][state] = n;
      }
      const known = [...Object.keys(queues), ...Object.keys(settings.get().queues)];
      return { accepting: settings.get().accepting, queues, pools: deps.pools(), control: deps.control?.(known) ?? {} };
    },
    async dead(queue?: string, listOptions?: { limit?: number }): Promise<MessageInfo[]> {
      if (queue !== undefined) assertQueueName(queue);
      const limit = listOptions?.limit ?? 1000;
      if (!Number.isSafeInteger(limit) || limit < 1) {
        throw new SpoolError('INVALID_ARGUMENT', `Expected dead() limit to be a safe integer from 1 and up, got ${String(limit)}`);
      }
      return storage.open().repo.listByState('dead', queue, limit).map(toMessageInfo);
    },
    async requeue(filter: RequeueFilter): Promise<number> {
      // An id, or a plain filter object: anything else (an undefined id, say) must not mean "all".
      const isFilter = filter !== null && typeof filter === 'object' && !Array.isArray(filter);
      if (typeof filter !== 'string' && !isFilter) {
        throw new SpoolError('INVALID_ARGUMENT', `Expected requeue() to get a message id or { queue? }, got ${filter === null ? 'null' : typeof filter}`);
      }
      if (isFilter && Object.keys(filter).some((key) => key !== 'queue')) {
        throw new SpoolError('INVALID_ARGUMENT', `requeue() filters take only { queue }, got keys ${Object.keys(filter).join(', ')}`);
      }
      const { repo } = storage.open();
      if (typeof filter !== 'string' && filter?.queue !== undefined) assertQueueName(filter.queue);
      const rows =
        typeof filter === 'string'
          ? [repo.byId(filter)].filter((row): row is MessageRow => row?.state === 'dead')
          : repo.listByState('dead', filter?.queue, 1_000_000);
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
    },
    async purge(queue: string, purgeOptions: { state: 'pending' | 'dead' | 'done' }): Promise<number> {
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
    },
    async sweep(): Promise<{ deleted: number; freedPages: number; longestBatchMs: number }> {
      return ensureMaintenance().sweep();
    },
  };
}

/** The operations' type. */
export type Operations = ReturnType<typeof createOperations>;
