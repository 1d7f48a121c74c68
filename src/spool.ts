/**
 * createSpool(): the embedding application's handle. Wires storage, the settings store, the group
 * committer and the supervisor, and owns the lifecycle: start, stop, close.
 */
import { randomUUID } from 'node:crypto';
import { Observable } from 'rxjs';
import type { ActorRefFrom } from 'xstate';
import { MESSAGE_SNAPSHOT_VERSION, type MessageState } from '../machines/message.machine.js';
import { createMessageStepper, type MessageSnapshot } from '../machines/stepper.js';
import type { supervisorMachine } from '../machines/supervisor.machine.js';
import { openDatabase, type DbHandle } from './db/client.js';
import { acquireOwnerLock, type OwnerLock } from './db/lock.js';
import { createRepository, type MessageRow, type RemovedRow, type Repository } from './db/repository.js';
import { isBusy, isFull, runTransaction, sqliteCode } from './db/transaction.js';
import { SpoolError } from './errors.js';
import { createEventBus, type MessageRemovedEvent, type SpoolEvent } from './events.js';
import { parseOptions, type SpoolOptions } from './options.js';
import { crashPoint } from './crash-points.js';
import { MAX_TIMER_MS } from './clock.js';
import { BUSY_GIVE_UP_MS, createCommitter, RETRY_DELAY_MS, toStorageError, type Committer } from './runtime/committer.js';
import type { Handler } from './runtime/handler.js';
import { createMaintenance, type Maintenance } from './runtime/maintenance.js';
import { deadLetter, decodeSnapshot, encodeSnapshot, toMessageInfo, transitionRow, type MessageInfo } from './runtime/message-codec.js';
import { createSupervisor, DRAIN_GRACE_MS, type SupervisorRuntime } from './runtime/supervisor.js';
import { policyFor, queueSettings, type Settings } from './settings/schema.js';
import { createSettingsStore, type SettingsStore } from './settings/store.js';
import { assertQueueName, contentKey, parseSendOptions, serializePayload, type SendOptions } from './validate.js';

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
  pools: {
    default: { concurrency: number; active: number };
    byQueue: Record<string, { concurrency: number; active: number }>;
  };
}

/** Which dead letters requeue() sends back: one id, or every dead message (of a queue). */
export type RequeueFilter = string | { queue?: string };

/** The embedding application's handle on one spool file. */
export interface Spool {
  /** Registers the consumer of `queue`; one per queue (DUPLICATE_CONSUMER otherwise). */
  register<P = unknown>(queue: string, handler: Handler<P>): void;
  /** Recovers in-flight rows, then claims and runs messages. Idempotent. */
  start(): Promise<void>;
  /** Stores a message; resolves with its id once the row is committed. */
  send(queue: string, payload: unknown, options?: SendOptions): Promise<string>;
  /** Stores every payload in one transaction, or none; resolves with the ids in order. */
  sendBatch(queue: string, payloads: unknown[], options?: SendOptions): Promise<string[]>;
  /** A message by id; undefined once done and deleted. */
  get(id: string): Promise<MessageInfo | undefined>;
  /** Counts per queue and state, pool limits and use. */
  stats(): Promise<SpoolStats>;
  /** Dead letters, oldest first. */
  dead(queue?: string, options?: { limit?: number }): Promise<MessageInfo[]>;
  /** Sends dead letters back to pending with attempts reset (redrive); resolves with how many. */
  requeue(filter: RequeueFilter): Promise<number>;
  /** Deletes a queue's messages in the given state (pending, dead or done); resolves with how many. */
  purge(queue: string, options: { state: 'pending' | 'dead' | 'done' }): Promise<number>;
  /** Runs one maintenance sweep now (retention, incremental vacuum). */
  sweep(): Promise<{ deleted: number; freedPages: number; longestBatchMs: number }>;
  /** Every committed change and error, announced after its commit. Never errors. */
  readonly events$: Observable<SpoolEvent>;
  /** The current state of a message, then each change; completes at done or dead. */
  watch(id: string): Observable<MessageState>;
  /** The live settings store. */
  readonly settings: SettingsStore;
  /** The supervisor's ActorRef: its snapshot shows pool limits and active counts. */
  readonly supervisor: ActorRefFrom<typeof supervisorMachine>;
  /** Stops claiming, waits for handlers (then aborts them); sends still store; start() resumes. */
  stop(options?: { timeoutMs?: number }): Promise<void>;
  /** Stops (as stop(), same timeout), releases the lock, closes the database, completes every observable. */
  close(options?: { timeoutMs?: number }): Promise<void>;
}

/**
 * Creates a spool over a SQLite file. Nothing is opened until first use.
 * @example
 * const spool = createSpool({ path: 'data/spool.db' });
 * spool.register('email', async (message) => sendMail(message.payload));
 * await spool.start();
 * await spool.send('email', { to: 'a@b.c' });
 */
export function createSpool(options: SpoolOptions): Spool {
  const opts = parseOptions(options);
  const { clock } = opts;
  const bus = createEventBus(() => clock.now());
  const stepper = createMessageStepper();
  const consumers = new Map<string, Handler>();

  let db: DbHandle | undefined;
  let repo: Repository | undefined;
  let committer: Committer | undefined;
  let supervisor: SupervisorRuntime | undefined;
  let maintenance: Maintenance | undefined;
  let lock: OwnerLock | undefined;
  let closed = false;
  /** Set once close() closes the database: every later call rejects with CLOSED. */
  let dbClosed = false;
  let starting: Promise<void> | undefined;
  let stopping: Promise<void> | undefined;
  let closing: Promise<void> | undefined;
  const knownQueues = new Set<string>();

  function open() {
    if (closed || dbClosed) throw new SpoolError('CLOSED', 'The spool is closed');
    if (!db) {
      const handle = openDatabase(opts.path, opts.durability);
      db = handle;
      repo = createRepository(handle);
      committer = createCommitter(handle.sqlite, bus, clock, () => handle.intact());
    }
    return { db, repo: repo!, committer: committer! };
  }

  const settings = createSettingsStore({
    config: opts.config,
    clock,
    events: bus,
    storage: () => {
      const { db: handle, repo: r } = open();
      return {
        read: () => r.readOverrides(),
        version: () => r.overridesVersion(),
        atomically: (fn) => apiTransaction(handle, fn),
        write: (overrides, now) => r.writeOverrides(overrides, now),
      };
    },
  });

  function ensureSupervisor() {
    const { db: handle, repo: r, committer: c } = open();
    supervisor ??= createSupervisor({
      sqlite: handle.sqlite,
      repo: r,
      committer: c,
      stepper,
      clock,
      events: bus,
      settings,
      consumers,
      inspect: opts.inspect,
      random: opts.random,
    });
    return supervisor;
  }

  function prepareRow(queue: string, payload: unknown, o: SendOptions, s: Settings, now: number) {
    const json = serializePayload(payload, opts.maxPayloadBytes);
    const visibleAt = o.runAt !== undefined ? Math.max(now, +o.runAt) : now + (o.delayMs ?? 0);
    const dedupeKey = o.key !== undefined ? `key:${o.key}` : policyFor(s, queue).dedupe === 'content' ? contentKey(json) : null;
    return {
      id: randomUUID(),
      queue,
      payload: json,
      snapshot: initialSnapshot(visibleAt),
      snapshotVersion: MESSAGE_SNAPSHOT_VERSION,
      priority: o.priority ?? 0,
      visibleAt,
      ready: (visibleAt <= now ? 1 : 0) as 0 | 1,
      dedupeKey,
      now,
    };
  }

  // A new message's snapshot depends only on its visibleAt, so a batch (and a burst of sends in
  // the same millisecond) shares one machine-computed snapshot instead of one per message.
  let lastInitial = { visibleAt: Number.NaN, json: '' };
  function initialSnapshot(visibleAt: number): string {
    if (lastInitial.visibleAt !== visibleAt) {
      lastInitial = { visibleAt, json: encodeSnapshot(stepper, stepper.initial({ visibleAt })) };
    }
    return lastInitial.json;
  }

  function admit(queue: string, s: Settings) {
    if (!s.accepting) throw new SpoolError('NOT_ACCEPTING', 'The spool is not accepting messages (settings.accepting is false)');
    if (queueSettings(s, queue)?.accepting === false) {
      throw new SpoolError('NOT_ACCEPTING', `Queue "${queue}" is not accepting messages (settings.queues.${queue}.accepting is false)`);
    }
  }

  /** Inserts rows inside a transaction; returns each row's id (an existing id on a dedupe hit). */
  function insertRows(r: Repository, rows: ReturnType<typeof prepareRow>[], s: Settings, midBatch: boolean): string[] {
    const queue = rows[0]!.queue;
    if (!knownQueues.has(queue)) r.addQueue(queue, rows[0]!.now);
    const { maxPending } = policyFor(s, queue);
    let live = maxPending === null ? 0 : r.countLive(queue);
    return rows.map((row, i) => {
      if (maxPending !== null && live >= maxPending) {
        // A resend of a live message stores nothing, so a full queue still answers with its id.
        const held = row.dedupeKey === null ? undefined : r.liveIdByKey(queue, row.dedupeKey);
        if (held !== undefined) return held;
        throw new SpoolError('QUEUE_FULL', `Queue "${queue}" holds ${live} pending or in-flight messages; maxPending is ${maxPending}`, {
          details: { queue, maxPending },
        });
      }
      if (midBatch && i === Math.floor(rows.length / 2)) crashPoint('batch.midInsert');
      if (r.insert(row)) {
        live += 1;
        return row.id;
      }
      const existing = row.dedupeKey === null ? undefined : r.liveIdByKey(queue, row.dedupeKey);
      if (existing === undefined) throw new SpoolError('STORAGE_ERROR', `The insert of a message into "${queue}" was ignored`);
      return existing;
    });
  }

  function enqueueRows(queue: string, payloads: unknown[], options: SendOptions | undefined): Promise<string[]> {
    try {
      assertQueueName(queue);
      const o = parseSendOptions(options);
      const { repo: r, committer: c } = open();
      const now = clock.now();
      refreshIfProducer(now);
      const s = settings.get();
      admit(queue, s);
      const rows: ReturnType<typeof prepareRow>[] = [];
      // A plain loop, not map(): map() skips the holes of a sparse array, which would store fewer
      // rows than the caller sent and resolve null ids for the holes.
      for (let i = 0; i < payloads.length; i++) {
        try {
          if (!(i in payloads)) {
            throw new SpoolError('INVALID_PAYLOAD', 'Payload is a hole in a sparse array, not a JSON value', { details: { path: '$', reason: 'json' } });
          }
          rows.push(prepareRow(queue, payloads[i], o, s, now));
        } catch (error) {
          if (error instanceof SpoolError && payloads.length > 1 && error.code === 'INVALID_PAYLOAD') {
            throw new SpoolError('INVALID_PAYLOAD', `Item ${i}: ${error.message}`, { cause: error, details: { ...error.details, index: i } });
          }
          throw error;
        }
      }
      if (rows.length === 0) return Promise.resolve([]);
      // Ready rows: the claim joins this insert's group transaction, so the handler can start
      // right after that one commit (one event-loop turn, not two).
      if (rows[0]!.ready) supervisor?.noteSending(queue);
      return new Promise((resolve, reject) => {
        c.enqueue({
          kind: 'send',
          run: () => {
            crashPoint('enqueue.beforeCommit');
            return insertRows(r, rows, s, rows.length > 1);
          },
          committed: (ids) => {
            knownQueues.add(queue);
            crashPoint('enqueue.afterCommit');
            if (!bus.idle) {
              for (let i = 0; i < ids.length; i++) {
                if (ids[i] === rows[i]!.id) bus.emit({ type: 'message.state', id: ids[i]!, queue, from: null, to: 'pending', attempt: 0, at: now });
              }
            }
            const first = rows[0]!;
            if (!first.ready) supervisor?.noteSent(queue, first.visibleAt);
            resolve(ids);
          },
          failed: reject,
        });
      });
    } catch (error) {
      return Promise.reject(error instanceof SpoolError ? error : toStorageError(error));
    }
  }

  let refreshedAt = -Infinity;
  /**
   * A spool that only sends has no poll, yet must see `accepting` turned off by the CLI or the
   * owner: it re-reads the settings version at most once per poll interval.
   */
  function refreshIfProducer(now: number) {
    if (supervisor?.running || now - refreshedAt < settings.get().processor.pollIntervalMs) return;
    refreshedAt = now;
    try {
      settings.refresh();
    } catch {
      // A busy read keeps the settings already held; the next send tries again.
      refreshedAt = -Infinity;
    }
  }

  function start(): Promise<void> {
    if (closed || closing) return Promise.reject(new SpoolError('CLOSED', 'The spool is closed'));
    if (supervisor?.running) return Promise.resolve();
    starting ??= (async () => {
      await stopping;
      try {
        // close() may have begun while we waited for a stop: starting now would outlive it.
        if (closing) throw new SpoolError('CLOSED', 'The spool closed while start() waited for stop()');
        const { db: handle } = open();
        await whileBusy(() => {
          lock ??= acquireOwnerLock(handle.path, handle.sqlite, clock.now());
        });
        const sup = ensureSupervisor();
        await whileBusy(() => sup.start());
        ensureMaintenance().start();
      } finally {
        starting = undefined;
      }
    })();
    return starting;
  }

  /**
   * Taking ownership and boot recovery need the write lock. Another connection holding it is
   * waited out with short asynchronous retries (as the committer does), never a long blocking
   * busy wait; past BUSY_GIVE_UP_MS start() rejects with STORAGE_BUSY. A failed try changed nothing.
   */
  async function whileBusy(step: () => void) {
    const since = performance.now();
    for (let retries = 1; ; retries++) {
      try {
        return step();
      } catch (error) {
        if (!isBusy(error)) throw error;
        if (performance.now() - since > BUSY_GIVE_UP_MS) throw toStorageError(error);
        bus.emit({ type: 'storage.busy', retries, at: clock.now() });
        await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
        if (closing) throw new SpoolError('CLOSED', 'The spool closed while start() waited for the database');
      }
    }
  }

  function stop(stopOptions?: { timeoutMs?: number }): Promise<void> {
    let timeoutMs: number;
    try {
      timeoutMs = parseStopTimeout(stopOptions, 'stop');
    } catch (error) {
      return Promise.reject(error);
    }
    return stopFor(timeoutMs);
  }

  function stopFor(timeoutMs: number): Promise<void> {
    stopping ??= (async () => {
      await starting?.catch(() => {});
      maintenance?.stop();
      await supervisor?.stop(timeoutMs);
      await committer?.drain(DRAIN_GRACE_MS);
    })().finally(() => {
      stopping = undefined;
    });
    return stopping;
  }

  const api: Spool = {
    register(queue, handler) {
      if (closed || closing) throw new SpoolError('CLOSED', 'The spool is closed');
      assertQueueName(queue);
      if (typeof handler !== 'function') throw new SpoolError('INVALID_ARGUMENT', `Expected a handler function for queue "${queue}", got ${typeof handler}`);
      if (consumers.has(queue)) throw new SpoolError('DUPLICATE_CONSUMER', `Queue "${queue}" already has a consumer`);
      consumers.set(queue, handler as Handler);
    },
    start,
    async send(queue, payload, options) {
      return (await enqueueRows(queue, [payload], options))[0]!;
    },
    sendBatch(queue, payloads, options) {
      if (!Array.isArray(payloads)) return Promise.reject(new SpoolError('INVALID_ARGUMENT', `Expected sendBatch payloads to be an array, got ${typeof payloads}`));
      return enqueueRows(queue, payloads, options);
    },
    async get(id) {
      if (typeof id !== 'string') throw new SpoolError('INVALID_ARGUMENT', `Expected a message id string, got ${typeof id}`);
      const row = open().repo.byId(id);
      return row && toMessageInfo(row);
    },
    async stats() {
      const { repo: r } = open();
      // No prototype: a queue may be called "constructor" or "__proto__".
      const queues: Record<string, QueueCounts> = Object.create(null);
      for (const { queue, state, n } of r.counts()) {
        queues[queue] ??= { pending: 0, activating: 0, processing: 0, dead: 0, done: 0 };
        queues[queue][state] = n;
      }
      const pools = ensureSupervisor().pools();
      return { accepting: settings.get().accepting, queues, pools };
    },
    async dead(queue, listOptions) {
      if (queue !== undefined) assertQueueName(queue);
      const limit = listOptions?.limit ?? 1000;
      if (!Number.isSafeInteger(limit) || limit < 1) {
        throw new SpoolError('INVALID_ARGUMENT', `Expected dead() limit to be a safe integer from 1 and up, got ${String(limit)}`);
      }
      return open().repo.listByState('dead', queue, limit).map(toMessageInfo);
    },
    async requeue(filter) {
      // An id, or a plain filter object: anything else (an undefined id, say) must not mean "all".
      const isFilter = filter !== null && typeof filter === 'object' && !Array.isArray(filter);
      if (typeof filter !== 'string' && !isFilter) {
        throw new SpoolError('INVALID_ARGUMENT', `Expected requeue() to get a message id or { queue? }, got ${filter === null ? 'null' : typeof filter}`);
      }
      if (isFilter && Object.keys(filter).some((key) => key !== 'queue')) {
        throw new SpoolError('INVALID_ARGUMENT', `requeue() filters take only { queue }, got keys ${Object.keys(filter).join(', ')}`);
      }
      const { db: handle, repo: r } = open();
      if (typeof filter !== 'string' && filter?.queue !== undefined) assertQueueName(filter.queue);
      const rows =
        typeof filter === 'string'
          ? [r.byId(filter)].filter((row): row is MessageRow => row?.state === 'dead')
          : r.listByState('dead', filter?.queue, 1_000_000);
      const now = clock.now();
      const moved: MessageRow[] = [];
      apiTransaction(handle, () => {
        for (const row of rows) {
          let snapshot: MessageSnapshot;
          try {
            snapshot = decodeSnapshot(stepper, row);
          } catch {
            // A corrupt dead letter is rebuilt as a fresh one; its payload is checked again at claim.
            snapshot = deadLetter(stepper, row.visibleAt, now, { code: 'CORRUPT_ROW', message: 'rebuilt at requeue' });
          }
          const next = stepper.step(snapshot, { type: 'REQUEUE', at: now });
          const change = transitionRow(stepper, row.seq, { state: 'dead', token: row.leaseToken }, next, { token: null, owner: null }, now);
          try {
            if (r.write(change)) moved.push(row);
          } catch (error) {
            // Its key (or content) is held by a live message sent since: it stays dead, the rest move.
            if (sqliteCode(error) !== 'SQLITE_CONSTRAINT_UNIQUE') throw error;
          }
        }
      });
      for (const row of moved) {
        bus.emit({ type: 'message.state', id: row.id, queue: row.queue, from: 'dead', to: 'pending', attempt: 0, at: now });
        supervisor?.noteSent(row.queue, null);
      }
      return moved.length;
    },
    async purge(queue, purgeOptions) {
      assertQueueName(queue);
      const state = purgeOptions?.state;
      if (state !== 'pending' && state !== 'dead' && state !== 'done') {
        throw new SpoolError('INVALID_ARGUMENT', `purge() takes state 'pending', 'dead' or 'done', got ${String(state)}`);
      }
      let total = 0;
      for (;;) {
        // Re-opened each batch: a close() between batches ends the purge with CLOSED.
        const { db: handle, repo: r } = open();
        const removed = apiTransaction(handle, () => r.purgeBatch(queue, [state], 1000));
        total += removed.length;
        announceRemoved(removed, 'purged');
        if (removed.length < 1000) break;
        // Let claims and sends in between batches.
        await new Promise((resolve) => setImmediate(resolve));
      }
      return total;
    },
    async sweep() {
      return ensureMaintenance().sweep();
    },
    get events$() {
      return bus.events$;
    },
    watch(id) {
      const watching = new Observable<MessageState>((subscriber) => {
        const sub = bus.events$.subscribe((event) => {
          if (event.type === 'message.removed' && event.id === id) return subscriber.complete();
          if (event.type !== 'message.state' || event.id !== id) return;
          subscriber.next(event.to);
          if (event.to === 'done' || event.to === 'dead') subscriber.complete();
        });
        const row = closed ? undefined : safeGet(id);
        if (!row || row.state === 'done' || row.state === 'dead') {
          if (row) subscriber.next(row.state);
          subscriber.complete();
        } else {
          subscriber.next(row.state);
        }
        return () => sub.unsubscribe();
      });
      return bus.isolate(watching, 'watch()');
    },
    settings,
    get supervisor() {
      return ensureSupervisor().actor;
    },
    stop,
    close(closeOptions) {
      let timeoutMs: number;
      try {
        timeoutMs = parseStopTimeout(closeOptions, 'close');
      } catch (error) {
        return Promise.reject(error);
      }
      closing ??= (async () => {
        const errors: unknown[] = [];
        // Every step runs even if an earlier one throws (BullMQ's close()).
        for (const step of [
          () => stopFor(timeoutMs),
          () => maintenance?.close(),
          () => committer?.close(),
          () => supervisor?.dispose(),
          () => lock?.release(),
          () => {
            dbClosed = true;
            db?.close();
          },
          () => settings.complete(),
          () => bus.complete(),
        ]) {
          try {
            await step();
          } catch (error) {
            errors.push(error);
          }
        }
        closed = true;
        if (errors.length) throw errors[0];
      })();
      return closing;
    },
  };

  function ensureMaintenance(): Maintenance {
    const { db: handle, repo: r } = open();
    maintenance ??= createMaintenance({ repo: r, sqlite: handle.sqlite, clock, events: bus, settings, removed: (rows) => announceRemoved(rows, 'swept') });
    return maintenance;
  }

  /** Announces deleted rows (only when someone listens: a purge may delete a million). */
  function announceRemoved(rows: RemovedRow[], reason: MessageRemovedEvent['reason']) {
    if (bus.idle || rows.length === 0) return;
    const at = clock.now();
    for (const row of rows) bus.emit({ type: 'message.removed', id: row.id, queue: row.queue, from: row.state, reason, at });
  }

  function safeGet(id: string) {
    try {
      return open().repo.byId(id);
    } catch {
      return undefined;
    }
  }

  return api;
}

/**
 * A transaction run directly by an API call (settings, requeue, purge): a locked or full database
 * rejects the call with a coded STORAGE_BUSY / STORAGE_FULL instead of a raw SqliteError, and a
 * database file deleted under us with STORAGE_LOST rather than a success that was never kept.
 */
function apiTransaction<T>(handle: DbHandle, fn: () => T): T {
  let result: T;
  try {
    result = runTransaction(handle.sqlite, fn);
  } catch (error) {
    throw isBusy(error) || isFull(error) ? toStorageError(error) : error;
  }
  if (!handle.intact()) throw new SpoolError('STORAGE_LOST', 'The database file was deleted or replaced; this change was not kept');
  return result;
}

/** `timeoutMs` of stop() and close(): a number ≥ 0, or Infinity; huge values are capped. */
function parseStopTimeout(options: unknown, method: 'stop' | 'close'): number {
  if (options === undefined) return DEFAULT_STOP_TIMEOUT_MS;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new SpoolError('INVALID_ARGUMENT', `${method}() takes an options object { timeoutMs }, got ${options === null ? 'null' : typeof options}`);
  }
  const extra = Object.keys(options).filter((key) => key !== 'timeoutMs');
  if (extra.length) throw new SpoolError('INVALID_ARGUMENT', `${method}() takes only { timeoutMs }, got ${extra.join(', ')}`);
  const value = (options as { timeoutMs?: unknown }).timeoutMs;
  if (value === undefined) return DEFAULT_STOP_TIMEOUT_MS;
  if (value === Infinity) return Infinity;
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
    throw new SpoolError('INVALID_ARGUMENT', `Expected ${method}() timeoutMs to be a number of ms ≥ 0 or Infinity, got ${typeof value === 'number' ? String(value) : JSON.stringify(value) ?? typeof value}`, {
      details: { timeoutMs: typeof value === 'number' ? value : typeof value },
    });
  }
  return Math.min(value, MAX_TIMER_MS);
}

/** How long stop() and close() wait for running handlers by default, ms. */
export const DEFAULT_STOP_TIMEOUT_MS = 10_000;
