/**
 * The part of the Spool API that the SQS wire layer calls, and nothing more.
 *
 * These are the signatures of the SQS-shaped library API (queues registry, send, receive, delete by
 * receipt, change visibility) as the core publishes them. A real `Spool` satisfies this interface
 * structurally, so `createSqsHandler(spool)` needs no adapter. Every time here is in milliseconds;
 * seconds exist only on the wire.
 */

import type { MessageAttribute, QueueAttributes, QueueInfo, ReceivedMessage as CoreReceivedMessage } from '../index.js';

export type { MessageAttribute, QueueAttributes, QueueInfo } from '../index.js';

/** The send options the wire uses. */
export interface BackendSendOptions {
  /** Delay before the message is visible, in ms (SQS `DelaySeconds`). */
  delayMs?: number;
  /** Deduplication id (SQS `MessageDeduplicationId`). */
  key?: string;
  /** Message group (SQS `MessageGroupId`). */
  group?: string;
  /** Message attributes (SQS `MessageAttributes`). */
  attributes?: Record<string, MessageAttribute>;
  /** Refuse with QUEUE_NOT_FOUND instead of creating a push queue. */
  mustExist?: boolean;
}

/** The receive options the wire uses. */
export interface BackendReceiveOptions {
  /** 1–10 messages (default 1). */
  max?: number;
  /** Visibility of the messages returned, in ms (default: the queue's). */
  visibilityTimeoutMs?: number;
  /** Long-poll wait in ms, 0–20,000 (default: the queue's `receiveWaitMs`). */
  waitMs?: number;
  /** Aborting resolves the receive with `[]` and claims nothing. */
  signal?: AbortSignal;
}

/** A received message as the core hands it out (the wire never reads its lease deadline). */
export type ReceivedMessage = Omit<CoreReceivedMessage, 'visibleAt'>;

/** The subset of `Spool` that `createSqsHandler` calls. */
export interface SqsBackend {
  /** The SQS-shaped queue registry. */
  readonly queues: {
    /** Idempotent for equal attributes; QUEUE_EXISTS for different ones. */
    create(name: string, attributes?: Partial<QueueAttributes>, options?: { tags?: Record<string, string> }): Promise<QueueInfo>;
    /** Created queues, sorted; `prefix` is case-sensitive. */
    list(options?: { prefix?: string }): Promise<string[]>;
    /** QUEUE_NOT_FOUND for a queue `create` never made. */
    get(name: string): Promise<QueueInfo>;
    /** Changes tunable attributes; `fifo` never changes. */
    update(name: string, attributes: Partial<Omit<QueueAttributes, 'fifo'>>): Promise<QueueInfo>;
    /** The queue, its settings and its messages. */
    delete(name: string): Promise<void>;
    /** Every message, in flight included; resolves with the count. */
    purge(name: string): Promise<number>;
    /** Adds or replaces tags. */
    tag(name: string, tags: Record<string, string>): Promise<void>;
    /** Removes tags. */
    untag(name: string, keys: string[]): Promise<void>;
    /** Queues whose `deadLetter.queue` is `name`. */
    deadLetterSources(name: string): Promise<string[]>;
    /** Moves messages from a dead-letter queue back to their source (or to `destination`). */
    redrive(dlq: string, options?: { destination?: string; maxPerSecond?: number }): Promise<{ taskId: string; moved: number }>;
  };
  /** Stores a message; resolves with its id (the first id on a deduplication hit). */
  send(queue: string, body: unknown, options?: BackendSendOptions): Promise<string>;
  /** A stored message; the wire reads only its FIFO `sequence`. */
  get(id: string): Promise<{ sequence: number } | undefined>;
  /** Up to `max` messages under a visibility timeout, long-polling up to `waitMs`. */
  receive(queue: string, options?: BackendReceiveOptions): Promise<ReceivedMessage[]>;
  /** Deletes by receipt; stale or gone resolves with no effect, garbage is INVALID_RECEIPT. */
  deleteMessage(queue: string, receipt: string): Promise<void>;
  /** Sets visibility to now + `ms`; stale is MESSAGE_NOT_INFLIGHT. */
  changeVisibility(queue: string, receipt: string, ms: number): Promise<void>;
}
