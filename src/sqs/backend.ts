/**
 * The part of the Spool API that the SQS wire layer calls, and nothing more.
 *
 * These are the signatures of the SQS-shaped library API (queues registry, send, receive, delete by
 * receipt, change visibility) as the core publishes them. A real `Spool` satisfies this interface
 * structurally, so `createSqsHandler(spool)` needs no adapter. Every time here is in milliseconds;
 * seconds exist only on the wire.
 */

/** Tunable and fixed attributes of a queue made by `queues.create` (library units: ms, bytes). */
export interface QueueAttributes {
  /** How long a received message stays hidden, 0–43,200,000 ms (default 30,000). */
  visibilityTimeoutMs: number;
  /** Delay of every new message, 0–900,000 ms (default 0). */
  delayMs: number;
  /** Default long-poll wait of a receive, 0–20,000 ms (default 0). */
  receiveWaitMs: number;
  /** Largest body plus attributes, 1,024–1,048,576 bytes (default 1,048,576). */
  maxPayloadBytes: number;
  /** How long a message is kept, 60,000–1,209,600,000 ms (default 345,600,000); null keeps it forever. */
  retentionMs: number | null;
  /** Where a message goes after `maxReceiveCount` receives (1–1000); null: nowhere. */
  deadLetter: { queue: string; maxReceiveCount: number } | null;
  /** FIFO queue; set at create only, and the name ends in `.fifo` exactly when it is true. */
  fifo: boolean;
  /** FIFO only: the body's SHA-256 is the deduplication id when none is given. */
  contentDedupe: boolean;
  /** FIFO only: how long a deduplication id is remembered, in ms (default 300,000). */
  dedupeWindowMs: number;
}

/** Message counts of one queue. */
export interface QueueCounts {
  /** Visible now (ApproximateNumberOfMessages). */
  visible: number;
  /** Received and not yet deleted or returned (ApproximateNumberOfMessagesNotVisible). */
  inFlight: number;
  /** Waiting for their delay (ApproximateNumberOfMessagesDelayed). */
  delayed: number;
  /** Dead on this queue (no SQS counterpart). */
  dead: number;
}

/** A created queue as `queues.get` describes it. */
export interface QueueInfo {
  /** The queue's name. */
  name: string;
  /** FIFO queue. */
  fifo: boolean;
  /** Its effective attributes. */
  attributes: QueueAttributes;
  /** Its tags. */
  tags: Record<string, string>;
  /** Its message counts. */
  counts: QueueCounts;
  /** Epoch ms of its creation. */
  createdAt: number;
  /** Epoch ms of its last attribute change. */
  updatedAt: number;
}

/** A message attribute in the library's shape (SQS `MessageAttributes` entry). */
export interface MessageAttribute {
  /** `String`, `Number` or `Binary`, optionally with a `.suffix`. */
  type: string;
  /** The value: a string for String and Number types, bytes for Binary ones. */
  value: string | Uint8Array;
}

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

/** A message handed out by `receive`. */
export interface ReceivedMessage {
  /** Opaque message id. */
  id: string;
  /** The queue it came from. */
  queue: string;
  /** Any JSON value; a string body is the SQS `Body` as sent. */
  body: unknown;
  /** Opaque receipt, new on every receive. */
  receipt: string;
  /** How many times it was handed out, this time included. */
  receiveCount: number;
  /** Epoch ms of the send. */
  sentAt: number;
  /** Epoch ms of the first receive. */
  firstReceivedAt: number;
  /** Its message attributes. */
  attributes: Record<string, MessageAttribute>;
  /** Its message group, if any. */
  group?: string;
  /** Strictly increasing per queue. */
  sequence: number;
  /** Its deduplication id, if any. */
  dedupeId?: string;
  /** For a message moved to a dead-letter queue: the queue it came from. */
  sourceQueue?: string;
}

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
