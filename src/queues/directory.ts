/**
 * What a queue is, asked many times a second on hot paths (send, claim, receive): its kind and
 * FIFO flag from the registry (cached for a second: another process may create or delete it),
 * and its SQS attributes from the live settings, with SQS's defaults for queues that
 * `queues.create` made.
 */
import type { QueuesRepository, QueueRow } from '../db/queues-repository.js';
import { QUEUE_ATTRIBUTE_DEFAULTS, queueSettings, type Settings } from '../settings/schema.js';

/** A queue's attributes, resolved (ms; false: none / forever). */
export interface ResolvedAttributes {
  visibilityTimeoutMs: number;
  delayMs: number;
  receiveWaitMs: number;
  /** null: the spool-wide maxPayloadBytes applies (a push queue without its own). */
  maxPayloadBytes: number | null;
  retentionMs: number | false;
  deadLetter: false | { queue: string; maxReceiveCount: number };
  contentDedupe: boolean;
  dedupeWindowMs: number;
}

/**
 * How long a kind read from the registry is trusted before it is read again, ms: another process
 * may create a queue, or delete one (`spool queues delete`, a second handle), at any time.
 */
const RECHECK_MS = 1000;

/** Creates the directory over the registry (opened on first use) and the live settings. */
export function createQueueDirectory(registry: () => QueuesRepository, settings: () => Settings, now: () => number = Date.now) {
  const cache = new Map<string, { row: QueueRow | undefined; at: number }>();

  function row(queue: string): QueueRow | undefined {
    const hit = cache.get(queue);
    if (hit && now() - hit.at < RECHECK_MS) return hit.row;
    const found = registry().get(queue);
    cache.set(queue, { row: found, at: now() });
    return found;
  }

  return {
    /** The registry row (kind, FIFO, tags), if the queue was ever used. */
    row,
    /** True when `queues.create` made the queue. */
    isSqs: (queue: string) => row(queue)?.kind === 'sqs',
    isFifo: (queue: string) => row(queue)?.fifo === true,
    /** Forget what is cached about a queue (after a local create, update or delete). */
    forget: (queue: string) => void cache.delete(queue),
    /** The queue's attributes under the current settings. */
    attributes(queue: string): ResolvedAttributes {
      return attributesOf(queue, row(queue)?.kind === 'sqs');
    },
    /**
     * Queues whose messages expire (SQS MessageRetentionPeriod): every SQS queue unless it keeps
     * them forever, and any other queue with its own retentionMs. For the maintenance sweep, which
     * deletes in any state: the kinds are read fresh, never from the cache (a queue deleted by
     * another process and used since as a push queue must not keep SQS's four days).
     */
    retentions(): { queue: string; retentionMs: number }[] {
      const sqs = new Set(registry().listSqs());
      const out: { queue: string; retentionMs: number }[] = [];
      for (const queue of new Set([...sqs, ...Object.keys(settings().queues)])) {
        const { retentionMs } = attributesOf(queue, sqs.has(queue));
        if (retentionMs !== false) out.push({ queue, retentionMs });
      }
      return out;
    },
    /** Where the queue's dead letters go, if anywhere. */
    dlqOf(queue: string): string | null {
      const dl = queueSettings(settings(), queue)?.deadLetter;
      if (!dl) return null;
      // An SQS queue's dead-letter queue must be an SQS queue (create and update check it). One
      // deleted since, or named only by a settings change, is no place to move to: a move would
      // make it a push queue, out of reach of receive and redrive. The letter stays dead here,
      // where dead(), requeue and the dashboard reach it. Read fresh: another process may have
      // deleted it, and a message dies rarely.
      const source = row(queue);
      const target = registry().get(dl.queue);
      if (source?.kind === 'sqs' && target?.kind !== 'sqs') return null;
      // A FIFO queue's messages all have a group: a standard queue's letters cannot go there
      // (queues.create and update refuse the pair; a settings change could name it).
      if (target?.fifo && !source?.fifo) return null;
      return dl.queue;
    },
  };

  /** A queue's attributes under the current settings, for an SQS queue (`sqs`) or a push one. */
  function attributesOf(queue: string, sqs: boolean): ResolvedAttributes {
    const own = queueSettings(settings(), queue);
    return {
      visibilityTimeoutMs: own?.visibilityTimeoutMs ?? QUEUE_ATTRIBUTE_DEFAULTS.visibilityTimeoutMs,
      delayMs: own?.delayMs ?? QUEUE_ATTRIBUTE_DEFAULTS.delayMs,
      receiveWaitMs: own?.receiveWaitMs ?? QUEUE_ATTRIBUTE_DEFAULTS.receiveWaitMs,
      maxPayloadBytes: own?.maxPayloadBytes ?? (sqs ? QUEUE_ATTRIBUTE_DEFAULTS.maxPayloadBytes : null),
      // A push queue keeps its messages unless it says otherwise; an SQS queue for 4 days.
      retentionMs: own?.retentionMs ?? (sqs ? QUEUE_ATTRIBUTE_DEFAULTS.retentionMs : false),
      deadLetter: own?.deadLetter ?? QUEUE_ATTRIBUTE_DEFAULTS.deadLetter,
      contentDedupe: own?.contentDedupe ?? QUEUE_ATTRIBUTE_DEFAULTS.contentDedupe,
      dedupeWindowMs: own?.dedupeWindowMs ?? QUEUE_ATTRIBUTE_DEFAULTS.dedupeWindowMs,
    };
  }
}

/** The directory's type. */
export type QueueDirectory = ReturnType<typeof createQueueDirectory>;
