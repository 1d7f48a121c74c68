/**
 * The SQS shape of pull consumption: `receive` (up to 10 messages under a visibility timeout,
 * long-polling up to 20 s), `deleteMessage` by receipt, and `changeVisibility`. Only queues that
 * `queues.create` made answer; any other name is QUEUE_NOT_FOUND. A stale receipt deletes nothing
 * and never throws (Spool fences stale owners where AWS may delete anyway).
 */
import type { Clock } from '../clock.js';
import { SpoolError } from '../errors.js';
import type { MessageAttributes } from '../queues/message-attributes.js';
import type { QueueDirectory } from '../queues/directory.js';
import { handedOutAt, pullOwner } from '../runtime/lease.js';
import { assertQueueName, assertSignal, optionsObject } from '../validate.js';
import { MAX_LEASE_MS } from './consumer.js';
import type { PullEngine } from './engine.js';
import { formatReceipt, parseReceipt } from './receipts.js';

/** A message as `receive` returns it. */
export interface ReceivedMessage<B = unknown> {
  id: string;
  queue: string;
  /** The body as sent: any JSON value. */
  body: B;
  receipt: string;
  /** Hand-outs so far, this one included (ApproximateReceiveCount). */
  receiveCount: number;
  /** Epoch ms. */
  sentAt: number;
  /** Epoch ms of the first hand-out (ApproximateFirstReceiveTimestamp). */
  firstReceivedAt: number;
  attributes: MessageAttributes;
  /** FIFO: the message group. */
  group?: string;
  /** FIFO: the deduplication id, the send's key or the hex SHA-256 of the body (MessageDeduplicationId). */
  dedupeId?: string;
  /** Strictly increasing per queue (FIFO SequenceNumber). */
  sequence: number;
  /** The queue a dead-letter queue's message came from. */
  sourceQueue?: string;
  /** The lease deadline, epoch ms. */
  visibleAt: number;
}

/** Options of `receive`. */
export interface ReceiveOptions {
  /** 1–10, default 1. */
  max?: number;
  /** The lease for these messages; default the queue's visibilityTimeoutMs. 0–43,200,000. */
  visibilityTimeoutMs?: number;
  /** Long polling: wait up to this long for a first message; default the queue's receiveWaitMs. 0–20,000. */
  waitMs?: number;
  /** Ends the wait; resolves [] and nothing stays claimed. */
  signal?: AbortSignal;
}

function range(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new SpoolError('INVALID_ARGUMENT', `${field} must be an integer from ${min} to ${max}, got ${String(value)}`, { details: { field, min, max, value } });
  }
  return value;
}

/** Creates receive, deleteMessage and changeVisibility over the pull engine. */
export function createSqsCalls(engine: PullEngine, directory: QueueDirectory, clock: Clock) {
  const owner = pullOwner('sqs');

  function created(queue: string) {
    assertQueueName(queue);
    if (!directory.isSqs(queue)) throw new SpoolError('QUEUE_NOT_FOUND', `Queue "${queue}" does not exist (queues.create never made it)`, { details: { queue } });
  }

  return {
    async receive(queue: string, given?: ReceiveOptions): Promise<ReceivedMessage[]> {
      const options = optionsObject(given, 'receive()');
      created(queue);
      // The queue's attributes as they are now, whoever changed them.
      engine.refreshSettings();
      const attrs = directory.attributes(queue);
      const max = range(options.max ?? 1, 'max', 1, 10);
      const visibility = range(options.visibilityTimeoutMs ?? attrs.visibilityTimeoutMs, 'visibilityTimeoutMs', 0, MAX_LEASE_MS);
      const waitMs = range(options.waitMs ?? attrs.receiveWaitMs, 'waitMs', 0, 20_000);
      assertSignal(options.signal);
      const leased = await engine.lease({ queues: [queue], max, owner, leaseMs: () => visibility }, { until: clock.now() + waitMs, ...(options.signal ? { signal: options.signal } : {}) });
      return leased.map((m) => {
        const message: ReceivedMessage = {
          id: m.row.id,
          queue: m.row.queue,
          body: m.payload,
          receipt: formatReceipt(m.row.id, m.token),
          receiveCount: m.state.context.deliveries,
          sentAt: m.row.createdAt,
          firstReceivedAt: m.row.firstDeliveredAt ?? clock.now(),
          attributes: m.attributes,
          sequence: m.row.seq,
          visibleAt: m.leaseExpiresAt,
        };
        if (m.row.grp !== null) message.group = m.row.grp;
        if (m.row.dedupeId !== null) message.dedupeId = m.row.dedupeId;
        if (m.row.sourceQueue !== null) message.sourceQueue = m.row.sourceQueue;
        return message;
      });
    },
    /** Deletes the message of a current receipt; a stale or gone one changes nothing. */
    async deleteMessage(queue: string, receipt: string): Promise<void> {
      created(queue);
      const r = parseReceipt(receipt);
      await engine.complete({ id: r.id, seq: r.seq, token: r.token, queue });
    },
    /** 0 makes the message visible at once (no attempt charged); more extends from now. */
    async changeVisibility(queue: string, receipt: string, ms: number): Promise<void> {
      created(queue);
      const r = parseReceipt(receipt);
      range(ms, 'ms', 0, MAX_LEASE_MS);
      const start = handedOutAt(r.token);
      if (ms > 0 && start !== undefined && clock.now() + ms - start > MAX_LEASE_MS) {
        throw new SpoolError('INVALID_ARGUMENT', `A message stays invisible at most 12 h from its receive; ${ms} ms from now is past that`, { details: { field: 'ms', max: MAX_LEASE_MS } });
      }
      const now = clock.now();
      const row = await engine.settle({ id: r.id, seq: r.seq, token: r.token, queue }, () =>
        ms === 0 ? { type: 'DEFER', at: now, retryAt: now } : { type: 'EXTEND', at: now, leaseExpiresAt: now + ms },
      );
      if (!row) throw new SpoolError('MESSAGE_NOT_INFLIGHT', `The message of this receipt is not in flight under it (received again, deleted, or its visibility ran out)`, { details: { queue } });
    },
  };
}

/** The SQS calls' type. */
export type SqsCalls = ReturnType<typeof createSqsCalls>;
