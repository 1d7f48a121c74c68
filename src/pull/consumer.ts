/**
 * Q4M-shaped consumers (`spool.consumer()`): a consumer waits on one or more queues and becomes
 * the exclusive owner of one message (owner mode). It ends the message (done: Q4M deletes the
 * row) or aborts it (back to pending for others, no attempt charged). Calling wait() again while
 * it owns one ends that one first, as Q4M's queue_wait does. If the consumer's process dies, the
 * message returns when its lease runs out.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { SpoolError } from '../errors.js';
import type { HandlerPayload, QueueMap, QueueMapLike, QueueName } from '../typed-queues.js';
import type { QueueDirectory } from '../queues/directory.js';
import { pullOwner, type Leased } from '../runtime/lease.js';
import { assertQueueName, assertSignal, optionsObject, readInput } from '../validate.js';
import type { LeaseRef, PullEngine } from './engine.js';
import { formatReceipt } from './receipts.js';
import { compileWhere, type Where } from './where.js';

/** The longest a lease may last from its hand-out (SQS's limit), ms. */
export const MAX_LEASE_MS = 43_200_000;

/** A message a pull consumer owns. */
export interface PulledMessage<P = unknown> {
  id: string;
  queue: string;
  payload: P;
  /** 1 on the first delivery; grows with each charged failure. */
  attempt: number;
  /** Every hand-out (the SQS receive count). */
  deliveries: number;
  priority: number;
  /** Epoch ms of the send. */
  createdAt: number;
  /** The receipt of this hand-out (SQS ReceiptHandle). */
  receipt: string;
  /** The lease deadline, epoch ms. */
  leaseExpiresAt: number;
}

/** Options of `consumer.wait()` and `consumer.messages()`. */
export interface WaitOptions {
  /** Give up after this long and resolve null; default: wait forever. */
  timeoutMs?: number;
  /** The lease; default the queue's visibilityTimeoutMs (30,000). At most 12 h. */
  leaseMs?: number;
  /** Only messages whose payload matches (see where.ts). */
  where?: Where;
  /** Cancels the wait (it resolves null). */
  signal?: AbortSignal;
}

/** A Q4M owner-mode consumer. */
export interface Consumer<Q extends QueueMapLike = QueueMap> {
  /** This consumer's id (the `owner` of its leases). */
  readonly id: string;
  /** Ends what it owns, then waits for a message of `queues` (earlier ones first) and owns it. */
  wait<P = never, K extends QueueName<Q> = QueueName<Q>>(queues: K | readonly K[], options?: WaitOptions): Promise<PulledMessage<HandlerPayload<Q, K, P>> | null>;
  /** The owned message is done (deleted, or kept as done by retention); LEASE_EXPIRED if the lease ran out first. */
  end(): Promise<void>;
  /** The owned message goes back to pending at once, no attempt charged (Q4M queue_abort); LEASE_EXPIRED if it already went back. */
  abort(): Promise<void>;
  /** The lease of the owned message now lasts `ms` from now (up to 12 h after its hand-out). */
  extend(ms: number): Promise<void>;
  /** Aborts what it owns and ends a pending wait with CLOSED. */
  close(): Promise<void>;
  /**
   * The common loop: each iteration ends the previous message, unless it was aborted. Leaving the
   * loop (break, return, a throw) gives back the last message, unless it was ended or aborted, as abort() does.
   */
  messages<P = never, K extends QueueName<Q> = QueueName<Q>>(queues: K | readonly K[], options?: WaitOptions): AsyncIterableIterator<PulledMessage<HandlerPayload<Q, K, P>>>;
}

/** The owned lease as the engine names it, with what ending it needs of its row (no read then). */
function ownedRef(lease: Leased): LeaseRef {
  const { row } = lease;
  return { id: row.id, seq: row.seq, token: lease.token, known: { id: row.id, queue: row.queue, grp: row.grp, attempt: lease.state.context.attempt } };
}

/** Creates a consumer over the pull engine. */
export function createConsumer(engine: PullEngine, directory: QueueDirectory, clock: Clock, given?: { id?: string }): Consumer {
  const options = optionsObject(given, 'consumer()');
  if (options.id !== undefined && (typeof options.id !== 'string' || !/^[A-Za-z0-9._:-]{1,128}$/.test(options.id))) {
    throw new SpoolError('INVALID_ARGUMENT', `A consumer id is 1–128 characters of [A-Za-z0-9._:-], got ${JSON.stringify(String(options.id).slice(0, 140))}`, { details: { field: 'id' } });
  }
  const id = options.id ?? randomUUID();
  const owner = pullOwner(id);
  let owned: Leased | undefined;
  /** True while a wait() runs. */
  let waiting = false;
  let closed = false;
  /** Aborted by close(): ends every wait in progress. */
  const closing = new AbortController();

  function queueList(queues: string | readonly string[]): string[] {
    const list = typeof queues === 'string' ? [queues] : Array.isArray(queues) ? [...queues] : undefined;
    if (!list || list.length === 0) throw new SpoolError('INVALID_ARGUMENT', 'wait() takes a queue name or a non-empty array of them', { details: { field: 'queues' } });
    for (const queue of list) assertQueueName(queue);
    return list;
  }

  function checkLease(ms: unknown, field: string): number {
    if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 1 || ms > MAX_LEASE_MS) {
      throw new SpoolError('INVALID_ARGUMENT', `${field} must be an integer from 1 to ${MAX_LEASE_MS} ms, got ${String(ms)}`, { details: { field, min: 1, max: MAX_LEASE_MS, value: ms } });
    }
    return ms;
  }

  async function finish(kind: 'end' | 'abort'): Promise<void> {
    const lease = owned;
    if (!lease) return;
    owned = undefined;
    const ref = ownedRef(lease);
    let row: unknown;
    try {
      row = await (kind === 'end' ? engine.complete(ref) : engine.settle(ref, () => ({ type: 'DEFER', at: clock.now(), retryAt: clock.now() })));
    } catch (error) {
      // Nothing changed (the commit failed): the message is still this consumer's, so a retried
      // end() or abort(), the next wait() or close() acts on it rather than on nothing.
      owned ??= lease;
      throw error;
    }
    // The lease ran out first and the message went back (maybe to another consumer): the caller's
    // work may run again, and must hear so rather than believe it ended the message.
    if (!row) throw new SpoolError('LEASE_EXPIRED', `Consumer ${id} no longer owns message ${lease.row.id}: its lease ran out and it was returned before this ${kind}`, { details: { id: lease.row.id } });
  }

  const consumer = {
    id,
    async wait<P>(queues: string | readonly string[], given?: WaitOptions): Promise<PulledMessage<P> | null> {
      if (closed) throw new SpoolError('CLOSED', `Consumer ${id} is closed`);
      const o = optionsObject(given, 'wait()');
      // One owner, one wait: a second at once would lease a second message that nothing tracks.
      if (waiting) throw new SpoolError('CONSUMER_BUSY', `Consumer ${id} is already waiting; wait() again once that wait has resolved`);
      const list = queueList(queues);
      assertSignal(o.signal);
      const where = readInput('where', () => compileWhere(o.where));
      if (o.timeoutMs !== undefined && (typeof o.timeoutMs !== 'number' || o.timeoutMs < 0 || Number.isNaN(o.timeoutMs))) {
        throw new SpoolError('INVALID_ARGUMENT', `timeoutMs must be a number of ms ≥ 0, got ${String(o.timeoutMs)}`, { details: { field: 'timeoutMs' } });
      }
      const leaseMs = o.leaseMs === undefined ? undefined : checkLease(o.leaseMs, 'leaseMs');
      const until = o.timeoutMs === undefined ? null : clock.now() + o.timeoutMs;
      // Registered before the first await, so a close() from now on ends this wait.
      // Only a caller's own signal needs a controller of this wait's own (the common loop has none).
      const abort = o.signal ? new AbortController() : closing;
      const onAbort = () => abort.abort();
      if (o.signal) {
        o.signal.addEventListener('abort', onAbort, { once: true });
        closing.signal.addEventListener('abort', onAbort, { once: true });
        if (o.signal.aborted) abort.abort();
      }
      waiting = true;
      try {
        // Owner mode: waiting again ends what this consumer owns (Q4M deletes the owned row), in
        // the commit of the first attempt to take the next.
        const previous = owned;
        owned = undefined;
        let ended = false;
        let lease: Leased | undefined;
        try {
          [lease] = await engine.lease(
            { queues: list, max: 1, owner, leaseMs: (queue) => leaseMs ?? Math.max(1, directory.attributes(queue).visibilityTimeoutMs), ...(where ? { where } : {}) },
            {
              until,
              signal: abort.signal,
              ...(previous ? { first: (l, now, log) => void engine.completeIn(l, ownedRef(previous), now, log), firstCommitted: () => (ended = true) } : {}),
            },
          );
        } catch (error) {
          // The end rolled back with the attempt that failed: the message is still this consumer's.
          if (previous && !ended) owned = previous;
          throw error;
        }
        if (closed) {
          if (lease) await engine.settle({ id: lease.row.id, seq: lease.row.seq, token: lease.token }, () => ({ type: 'DEFER', at: clock.now(), retryAt: clock.now() }));
          throw new SpoolError('CLOSED', `Consumer ${id} closed while it waited`);
        }
        if (!lease) return null;
        owned = lease;
        return {
          id: lease.row.id,
          queue: lease.row.queue,
          payload: lease.payload as P,
          attempt: lease.state.context.attempt,
          deliveries: lease.state.context.deliveries,
          priority: lease.row.priority,
          createdAt: lease.row.createdAt,
          receipt: formatReceipt(lease.row.id, lease.token),
          leaseExpiresAt: lease.leaseExpiresAt,
        };
      } finally {
        waiting = false;
        o.signal?.removeEventListener('abort', onAbort);
        if (o.signal) closing.signal.removeEventListener('abort', onAbort);
      }
    },
    end: () => finish('end'),
    abort: () => finish('abort'),
    async extend(ms: number): Promise<void> {
      // The argument first: a bad one is INVALID_ARGUMENT whatever the consumer owns.
      checkLease(ms, 'ms');
      const lease = owned;
      if (!lease) throw new SpoolError('MESSAGE_NOT_INFLIGHT', `Consumer ${id} owns no message to extend`);
      const handedOut = Number.parseInt(lease.token.slice(0, lease.token.indexOf('.')), 36);
      const until = clock.now() + ms;
      if (until - handedOut > MAX_LEASE_MS) {
        throw new SpoolError('INVALID_ARGUMENT', `A lease lasts at most 12 h from its hand-out; ${ms} ms from now is past that`, { details: { field: 'ms', max: MAX_LEASE_MS } });
      }
      const row = await engine.settle({ id: lease.row.id, seq: lease.row.seq, token: lease.token }, () => ({ type: 'EXTEND', at: clock.now(), leaseExpiresAt: until }));
      if (!row) {
        owned = undefined;
        throw new SpoolError('MESSAGE_NOT_INFLIGHT', `The lease of ${lease.row.id} ran out or was taken over; it is no longer owned`);
      }
      owned = { ...lease, leaseExpiresAt: until };
    },
    async close(): Promise<void> {
      closed = true;
      closing.abort();
      // Closing gives back what it holds; one already returned by its expiry needs nothing more.
      await finish('abort').catch((error: unknown) => {
        if (!(error instanceof SpoolError && error.code === 'LEASE_EXPIRED')) throw error;
      });
    },
    async *messages(queues: string | readonly string[], o: WaitOptions = {}): AsyncIterableIterator<PulledMessage<unknown>> {
      for (;;) {
        // wait() ends the previous message first, unless it was aborted (then nothing is owned).
        const message = await consumer.wait(queues, o);
        if (!message) return;
        const token = owned?.token;
        let resumed = false;
        try {
          yield message;
          resumed = true;
        } finally {
          // Left by break, return or a throw: the message handed out, unless the loop ended or
          // aborted it, goes back at once as abort() gives it (no attempt charged), rather than
          // waiting out its lease (a failed attempt on a plain queue). One whose lease already
          // ran out went back by itself.
          if (!resumed && token !== undefined && owned?.token === token) {
            await finish('abort').catch((error: unknown) => {
              if (!(error instanceof SpoolError && error.code === 'LEASE_EXPIRED')) throw error;
            });
          }
        }
      }
    },
  };
  // Payloads are whatever was sent: the queue map's types (typed-queues.ts) are the caller's promise.
  return consumer as Consumer;
}
