/**
 * createSpool(): the embedding application's handle, a thin facade over its parts:
 * - storage.ts     the database, repository and group committer, opened on first use
 * - producer.ts    send, sendBatch
 * - operations.ts  get, stats, dead, requeue, purge, sweep
 * - observe.ts     watch (and the event bus behind events$)
 * - lifecycle.ts   start, stop, close (the owner lock, the supervisor runtime, the sweep)
 */
import type { Observable } from 'rxjs';
import type { ActorRefFrom } from 'xstate';
import type { MessageState } from '../machines/message.machine.js';
import type { supervisorMachine } from '../machines/supervisor.machine.js';
import { SpoolError } from './errors.js';
import { createEventBus, type SpoolEvent } from './events.js';
import { createLifecycle, type SpoolStatus } from './lifecycle.js';
import { createWatch } from './observe.js';
import { createOperations, type MessageWithHistory, type RemovedHistory, type RequeueFilter, type SpoolStats, type Telemetry } from './operations.js';
import type { BrowsePage, BrowseQuery } from './browse.js';
import { parseOptions, type SpoolOptions } from './options.js';
import { createProducer } from './producer.js';
import { createSchedules, type Schedules } from './schedules/api.js';
import type { Handler } from './runtime/handler.js';
import type { MessageInfo } from './runtime/message-codec.js';
import { createSettingsStore, type SettingsStore } from './settings/store.js';
import { createConsumer, type Consumer } from './pull/consumer.js';
import { createPullEngine } from './pull/engine.js';
import { createSqsCalls, type ReceivedMessage, type ReceiveOptions } from './pull/sqs.js';
import { createQueueDirectory } from './queues/directory.js';
import { createQueues, type Queues } from './queues/registry.js';
import { createIdleRefresh } from './settings/idle-refresh.js';
import { createStorage } from './storage.js';
import type { HandlerPayload, PayloadOf, QueueMap, QueueMapLike, QueueName, SendPayload } from './typed-queues.js';
import { assertQueueName, type SendOptions } from './validate.js';

export type { QueueCounts, RequeueFilter, SpoolStats, MessageWithHistory, RemovedHistory, Telemetry } from './operations.js';
export type { BrowsePage, BrowseQuery } from './browse.js';
export type { SpoolStatus } from './lifecycle.js';

/** The embedding application's handle on one spool file. */
export interface Spool<Q extends QueueMapLike = QueueMap> {
  /** Registers the consumer of `queue`; one per queue (DUPLICATE_CONSUMER otherwise). */
  register<P = never, K extends QueueName<Q> = QueueName<Q>>(queue: K, handler: Handler<HandlerPayload<Q, K, P>>): void;
  /** Recovers in-flight rows, then claims and runs messages. Idempotent. */
  start(): Promise<void>;
  /** Stores a message; resolves with its id once the row is committed. */
  send<K extends QueueName<Q>>(queue: K, payload: SendPayload<Q, K>, options?: SendOptions): Promise<string>;
  /** Stores every payload in one transaction, or none; resolves with the ids in order. */
  sendBatch<K extends QueueName<Q>>(queue: K, payloads: readonly SendPayload<Q, K>[], options?: SendOptions): Promise<string[]>;
  /** A message by id; undefined once done and deleted. With `{ history: true }`, its committed transitions too. */
  get(id: string, options: { history: true }): Promise<MessageWithHistory | undefined>;
  get(id: string, options?: { history?: boolean }): Promise<MessageInfo | undefined>;
  /** The timeline of a message whose row was deleted (done, purged, swept), while history retention keeps it. */
  removedHistory(id: string): Promise<RemovedHistory | undefined>;
  /** A filtered page of messages, newest first, keyset-paged (`cursor` of the previous page). */
  browse(query: BrowseQuery): Promise<BrowsePage>;
  /** Deletes pending, dead and done messages by id (never in flight; only those still in `state` and `queue`, if given); resolves with how many. */
  remove(ids: string[], options?: { state?: 'pending' | 'dead' | 'done'; queue?: string }): Promise<number>;
  /** Counters since this handle opened its file: sent, completed, failed by code, dead, busy tries, commit timings, file sizes. */
  telemetry(): Telemetry;
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
  /** Durable schedules (cron or every N ms), managed by name; only a started spool fires them. */
  readonly schedules: Schedules;
  /** The supervisor's ActorRef: its snapshot shows pool limits and active counts. */
  readonly supervisor: ActorRefFrom<typeof supervisorMachine>;
  /** Where the spool is in its life: idle, starting, running, stopping, closing or closed. */
  readonly status: SpoolStatus;
  /** Stops claiming, waits for handlers (then aborts them); sends still store; start() resumes. */
  stop(options?: { timeoutMs?: number }): Promise<void>;
  /** Stops (as stop(), same timeout), releases the lock, closes the database, completes every observable. */
  close(options?: { timeoutMs?: number }): Promise<void>;
  /** A Q4M-style owner-mode pull consumer (works in any process; needs no owner lock). */
  consumer(options?: { id?: string }): Consumer<Q>;
  /** SQS-shaped queues: create, list, get, update, delete, purge, tags, dead-letter sources, redrive. */
  readonly queues: Queues;
  /** Up to `max` (1–10) messages of an SQS queue under a visibility timeout, long-polling up to `waitMs`. */
  receive<K extends QueueName<Q>>(queue: K, options?: ReceiveOptions): Promise<ReceivedMessage<PayloadOf<Q, K>>[]>;
  /** Deletes the message of a current receipt; a stale or gone one changes nothing (never throws for it). */
  deleteMessage(queue: string, receipt: string): Promise<void>;
  /** 0 makes a received message visible at once (no attempt charged); more extends its lease from now. */
  changeVisibility(queue: string, receipt: string, ms: number): Promise<void>;
}

/**
 * Creates a spool over a SQLite file. Nothing is opened until first use.
 * @example
 * const spool = createSpool({ path: 'data/spool.db' });
 * spool.register('email', async (message) => sendMail(message.payload));
 * await spool.start();
 * await spool.send('email', { to: 'a@b.c' });
 * @example
 * // Typed queues: a wrong payload for 'email' fails to compile.
 * const typed = createSpool<{ email: { to: string } }>({ path: 'data/spool.db' });
 */
export function createSpool<Q extends QueueMapLike = QueueMap>(options: SpoolOptions): Spool<Q> {
  // A thin facade (pg-boss's index.ts): each part is built once, and each method forwards to it.
  const opts = parseOptions(options);
  const { clock } = opts;
  const bus = createEventBus(() => clock.now());
  const consumers = new Map<string, Handler>();
  const storage = createStorage(opts, bus, () => settings.get().history.enabled);
  const directory = createQueueDirectory(() => storage.open().queues, () => settings.get(), () => clock.now());
  const settings = createSettingsStore({
    config: opts.config,
    clock,
    events: bus,
    storage: () => {
      const { repo } = storage.open();
      return {
        read: () => repo.readOverrides(),
        version: () => repo.overridesVersion(),
        atomically: (fn) => storage.transaction(fn),
        write: (overrides, now) => repo.writeOverrides(overrides, now),
      };
    },
  });
  const operations = createOperations({
    storage,
    control: (queues) => lifecycle.ensureSupervisor().control(queues),
    settings,
    bus,
    clock,
    directory,
    pools: () => lifecycle.ensureSupervisor().pools(),
    registered: () => consumers.keys(),
    path: opts.path,
    requeued: (queue) => {
      lifecycle.supervisor?.noteSent(queue, null);
      pull.ready(queue);
    },
  });
  // One for the handle: its sends and its pulls share it (one read per poll interval, not two).
  const refreshSettings = createIdleRefresh(settings, clock, () => lifecycle.supervisor?.running === true);
  const pull = createPullEngine({
    storage,
    settings,
    directory,
    bus,
    clock,
    random: opts.random,
    returned: (queue) => lifecycle.supervisor?.noteSent(queue, null),
    leased: (at) => lifecycle.supervisor?.leaseAt(at),
    gate: () => lifecycle.supervisor?.gate,
    refreshSettings,
  });
  /** A commit of this handle made a message of `queue` claimable: wake its pull waiters. */
  const ready = (queue: string) => pull.ready(queue);
  const lifecycle = createLifecycle({ opts, storage, settings, bus, consumers, operations, directory, ready, expireLeases: () => pull.expireLeases(), released: () => pull.released(), closePull: () => pull.close() });
  const producer = createProducer({ opts, storage, settings, bus, directory, ready, runtime: () => lifecycle.supervisor, refreshSettings });
  const queues = createQueues({ storage, settings, directory, clock, bus, ready: (queue) => (ready(queue), lifecycle.supervisor?.noteSent(queue, null)) });
  const sqs = createSqsCalls(pull, directory, clock);
  const watch = createWatch(bus, (id) => {
    try {
      return storage.open().repo.byId(id);
    } catch {
      return undefined;
    }
  });
  const schedules = createSchedules({ storage, clock, maxPayloadBytes: opts.maxPayloadBytes, directory, changed: () => lifecycle.supervisor?.schedulesChanged() });

  const spool: Spool = {
    register(queue, handler) {
      if (lifecycle.closing) throw new SpoolError('CLOSED', 'The spool is closed');
      assertQueueName(queue);
      if (typeof handler !== 'function') throw new SpoolError('INVALID_ARGUMENT', `Expected a handler function for queue "${queue}", got ${typeof handler}`);
      if (consumers.has(queue)) throw new SpoolError('DUPLICATE_CONSUMER', `Queue "${queue}" already has a consumer`);
      consumers.set(queue, handler as Handler);
    },
    start: () => lifecycle.start(),
    send: (queue, payload, sendOptions) => producer.send(queue, payload, sendOptions),
    // Validated inside (a non-array is INVALID_ARGUMENT), so passed on as it came.
    sendBatch: (queue, payloads, sendOptions) => producer.sendBatch(queue, payloads as unknown[], sendOptions),
    get: ((id: string, getOptions?: { history?: boolean }) => operations.get(id, getOptions)) as Spool['get'],
    removedHistory: (id) => operations.removedHistory(id),
    browse: (query) => operations.browse(query),
    remove: (ids, removeOptions) => operations.remove(ids, removeOptions),
    telemetry: () => operations.telemetry(),
    stats: () => operations.stats(),
    dead: (queue, listOptions) => operations.dead(queue, listOptions),
    requeue: (filter: RequeueFilter) => operations.requeue(filter),
    purge: (queue, purgeOptions) => operations.purge(queue, purgeOptions),
    sweep: () => operations.sweep(),
    get events$(): Observable<SpoolEvent> {
      return bus.events$;
    },
    watch: (id): Observable<MessageState> => watch(id),
    settings,
    schedules,
    get supervisor() {
      return lifecycle.ensureSupervisor().actor;
    },
    get status() {
      return lifecycle.status;
    },
    stop: (stopOptions) => lifecycle.stop(stopOptions),
    close: (closeOptions) => lifecycle.close(closeOptions),
    consumer(consumerOptions) {
      if (lifecycle.closing) throw new SpoolError('CLOSED', 'The spool is closed');
      return createConsumer(pull, directory, clock, consumerOptions);
    },
    queues,
    // Bodies are whatever was sent: the queue map's payload type (typed-queues.ts) is the caller's promise.
    receive: ((queue: string, receiveOptions?: ReceiveOptions) => sqs.receive(queue, receiveOptions)) as Spool['receive'],
    deleteMessage: (queue, receipt) => sqs.deleteMessage(queue, receipt),
    changeVisibility: (queue, receipt, ms) => sqs.changeVisibility(queue, receipt, ms),
  };
  // The queue map only narrows the caller's types (typed-queues.ts); the runtime is the same.
  return spool as unknown as Spool<Q>;
}
