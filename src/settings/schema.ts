/**
 * The settings schema and its defaults, in one place. Every key is documented in the README's
 * settings table; unknown keys are invalid at every level.
 */
import { z } from 'zod';
import { QUEUE_NAME } from '../validate.js';

const concurrency = z.number().int().min(1).max(10_000);
const ms = z.number().int().min(0).max(2_147_483_647);

const backoffSchema = z.strictObject({
  type: z.enum(['fixed', 'exponential']),
  delayMs: ms,
  maxDelayMs: ms,
  jitter: z.boolean(),
});

/** A rolling-window rate limit: at most `max` handler starts (or pull hand-outs) per `perMs`. */
const rateLimitSchema = z.strictObject({
  max: z.number().int().min(1).max(1_000_000),
  perMs: z.number().int().min(10).max(86_400_000),
});

/** A time budget: handlers of the queue busy at most `busyMs` (summed) per rolling `perMs`. */
const budgetSchema = z
  .strictObject({
    busyMs: z.number().int().min(1),
    perMs: z.number().int().min(10).max(86_400_000),
  })
  .refine((b) => b.busyMs <= b.perMs, { message: 'busyMs must be at most perMs', path: ['busyMs'] });

const queuePolicyShape = {
  maxAttempts: z.number().int().min(1).max(1_000_000),
  backoff: backoffSchema,
  timeoutMs: ms.min(1).nullable(),
  dedupe: z.enum(['none', 'content']),
  maxPending: z.number().int().min(1).nullable(),
  maxCrashes: z.number().int().min(1).max(1_000_000),
  rateLimit: rateLimitSchema.nullable(),
  budget: budgetSchema.nullable(),
};

/**
 * SQS queue attributes (issue 12), in ms as everywhere in the library. On a queue that
 * `queues.create` made, an absent key takes SQS's default (QUEUE_ATTRIBUTE_DEFAULTS); on any other
 * queue it has no effect unless set.
 */
export const queueAttributesShape = {
  /** The lease a receive or a pull consumer's wait takes by default. 0–43,200,000 (12 h). */
  visibilityTimeoutMs: z.number().int().min(0).max(43_200_000),
  /** The delay every send to the queue gets (FIFO: the only delay). 0–900,000 (15 min). */
  delayMs: z.number().int().min(0).max(900_000),
  /** How long a receive waits for messages by default (long polling). 0–20,000. */
  receiveWaitMs: z.number().int().min(0).max(20_000),
  /** The largest body plus attributes, bytes. 1,024–1,048,576; replaces the spool-wide limit. */
  maxPayloadBytes: z.number().int().min(1024).max(1_048_576),
  /** Messages older than this are deleted, in flight or not; false keeps them forever. */
  retentionMs: z.union([z.number().int().min(60_000).max(1_209_600_000), z.literal(false)]),
  /** Where messages that run out of receives (or attempts) go; false for nowhere. */
  deadLetter: z.union([
    z.strictObject({
      queue: z.string().regex(QUEUE_NAME, 'queue names are 1–80 characters of [A-Za-z0-9._-]'),
      maxReceiveCount: z.number().int().min(1).max(1000),
    }),
    z.literal(false),
  ]),
  /** FIFO: deduplicate by the body's hash when a send has no key. */
  contentDedupe: z.boolean(),
  /** FIFO: how long a deduplication id is remembered from its send. 1,000–86,400,000. */
  dedupeWindowMs: z.number().int().min(1000).max(86_400_000),
};

/** SQS's defaults for the attributes of a queue made by `queues.create`. */
export const QUEUE_ATTRIBUTE_DEFAULTS = {
  visibilityTimeoutMs: 30_000,
  delayMs: 0,
  receiveWaitMs: 0,
  maxPayloadBytes: 1_048_576,
  retentionMs: 345_600_000 as number | false,
  deadLetter: false as false | { queue: string; maxReceiveCount: number },
  contentDedupe: false,
  dedupeWindowMs: 300_000,
};

/** The settings of one queue; every key optional (absent: the spool-wide value applies). */
const queueSettingsSchema = z.strictObject({
  visibilityTimeoutMs: queueAttributesShape.visibilityTimeoutMs.optional(),
  delayMs: queueAttributesShape.delayMs.optional(),
  receiveWaitMs: queueAttributesShape.receiveWaitMs.optional(),
  maxPayloadBytes: queueAttributesShape.maxPayloadBytes.optional(),
  retentionMs: queueAttributesShape.retentionMs.optional(),
  deadLetter: queueAttributesShape.deadLetter.optional(),
  contentDedupe: queueAttributesShape.contentDedupe.optional(),
  dedupeWindowMs: queueAttributesShape.dedupeWindowMs.optional(),
  executor: z.strictObject({ concurrency }).optional(),
  accepting: z.boolean().optional(),
  paused: z.boolean().optional(),
  maxAttempts: queuePolicyShape.maxAttempts.optional(),
  backoff: backoffSchema.partial().optional(),
  timeoutMs: queuePolicyShape.timeoutMs.optional(),
  dedupe: queuePolicyShape.dedupe.optional(),
  maxPending: queuePolicyShape.maxPending.optional(),
  maxCrashes: queuePolicyShape.maxCrashes.optional(),
  // false opts the queue out of a queueDefaults limit (null, a tombstone, falls back to it).
  rateLimit: z.union([rateLimitSchema, z.literal(false)]).optional(),
  budget: z.union([budgetSchema, z.literal(false)]).optional(),
});

/** The whole effective settings document. */
export const settingsSchema = z.strictObject({
  accepting: z.boolean(),
  executor: z.strictObject({ concurrency }),
  processor: z.strictObject({
    pollIntervalMs: z.number().int().min(10).max(3_600_000),
    batchSize: z.number().int().min(1).max(10_000),
  }),
  noConsumer: z.enum(['dead', 'delete', 'keep']),
  queueDefaults: z.strictObject(queuePolicyShape),
  queues: z.record(z.string().regex(QUEUE_NAME, 'queue names are 1–80 characters of [A-Za-z0-9._-]'), queueSettingsSchema),
  retention: z.strictObject({ doneMs: ms, deadMs: ms.nullable() }),
  maintenance: z.strictObject({ intervalMs: z.number().int().min(100).max(2_147_483_647) }),
  /**
   * Message history (the dashboard's timelines): every committed transition is kept with its
   * message, and a deleted message's timeline for `retentionMs` more (the sweep deletes it then).
   */
  history: z.strictObject({
    enabled: z.boolean(),
    retentionMs: z.number().int().min(60_000).max(2_147_483_647),
  }),
});

/** Effective settings. */
export type Settings = z.infer<typeof settingsSchema>;
/** One queue's own settings. */
export type QueueSettings = z.infer<typeof queueSettingsSchema>;
/** A queue's resolved delivery policy: queueDefaults overlaid with the queue's own keys. */
export type QueuePolicy = Settings['queueDefaults'];
/** A queue's rate limit. */
export type QueueRateLimit = z.infer<typeof rateLimitSchema>;
/** A queue's time budget. */
export type QueueBudget = z.infer<typeof budgetSchema>;

/**
 * Freezes `value` and every object in it, and returns it: settings are handed out as they are,
 * and a caller's edit of one would change the running spool with nothing validated or stored.
 */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  return Object.freeze(value);
}

/** Built-in defaults: the lowest layer. */
export const DEFAULT_SETTINGS: Settings = deepFreeze({
  accepting: true,
  executor: { concurrency: 4 },
  processor: { pollIntervalMs: 1000, batchSize: 100 },
  noConsumer: 'dead',
  queueDefaults: {
    maxAttempts: 3,
    backoff: { type: 'exponential', delayMs: 1000, maxDelayMs: 300_000, jitter: true },
    timeoutMs: null,
    dedupe: 'none',
    maxPending: null,
    maxCrashes: 5,
    rateLimit: null,
    budget: null,
  },
  queues: {},
  retention: { doneMs: 0, deadMs: null },
  maintenance: { intervalMs: 60_000 },
  history: { enabled: true, retentionMs: 604_800_000 },
});

/** A queue's own settings entry, if any (own properties only). */
export function queueSettings(settings: Settings, queue: string): QueueSettings | undefined {
  return Object.hasOwn(settings.queues, queue) ? settings.queues[queue] : undefined;
}

/** The delivery policy of `queue` under `settings`. */
export function policyFor(settings: Settings, queue: string): QueuePolicy {
  // Own keys only: a queue named like an Object.prototype member must not read one.
  const own = queueSettings(settings, queue);
  const base = settings.queueDefaults;
  if (!own) return base;
  return {
    maxAttempts: own.maxAttempts ?? base.maxAttempts,
    backoff: { ...base.backoff, ...own.backoff },
    timeoutMs: own.timeoutMs === undefined ? base.timeoutMs : own.timeoutMs,
    dedupe: own.dedupe ?? base.dedupe,
    maxPending: own.maxPending === undefined ? base.maxPending : own.maxPending,
    maxCrashes: own.maxCrashes ?? base.maxCrashes,
    rateLimit: own.rateLimit === undefined ? base.rateLimit : own.rateLimit === false ? null : own.rateLimit,
    budget: own.budget === undefined ? base.budget : own.budget === false ? null : own.budget,
  };
}
