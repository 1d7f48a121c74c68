/**
 * A schedule's spec: validation at the edge (nothing invalid is ever stored), its stored JSON, and
 * the comparison that tells an identical re-upsert (keeps the anchor and cursor) from a change
 * (re-anchors).
 */
import { z } from 'zod';
import { SpoolError } from '../errors.js';
import { assertQueueName, canonicalJson, describeZod, MAX_DATE_MS, QUEUE_NAME, readInput, serializePayload } from '../validate.js';
import { createTicker, cronJob, type TickRule } from './ticks.js';

/** What to do with ticks that fell due while no started spool ran the schedule. */
export type MissedPolicy = 'one' | 'all' | 'none';

/** The most missed ticks one catch-up with `missed: 'all'` sends (the latest ones). */
export const MAX_BACKFILL = 1000;
/** The shortest `everyMs`. */
export const MIN_EVERY_MS = 1000;
/** The longest `everyMs` (ten years, as for send delays). */
export const MAX_EVERY_MS = 10 * 365 * 86_400_000;

/** What `schedules.upsert(name, spec)` takes. */
export interface ScheduleSpec {
  /** A cron expression of 5 fields (minute first) or 6 (seconds first); give this or `everyMs`. */
  cron?: string;
  /** Ticks every this many ms (≥ 1000) from the anchor; give this or `cron`. */
  everyMs?: number;
  /** The IANA time zone the cron's wall-clock times are in (cron only; default 'UTC'). */
  tz?: string;
  /** The queue each tick sends a message to. */
  queue: string;
  /** Each tick's message payload (any JSON value; default null). */
  payload?: unknown;
  /** The anchor: no tick at or before it (default: the time of the upsert that creates the schedule). */
  startAt?: Date | number;
  /** Ticks missed while no started spool ran the schedule: 'one' (default), 'all' (up to 1,000) or 'none'. */
  missed?: MissedPolicy;
  /** False keeps the schedule stored but sends nothing (default true). */
  enabled?: boolean;
}

/** A validated spec as stored (JSON in `schedules.spec`); `enabled` lives in its own column. */
export interface StoredSpec {
  cron?: string;
  tz?: string;
  everyMs?: number;
  queue: string;
  /** The payload's JSON text. */
  payload: string;
  startAt?: number;
  missed: MissedPolicy;
}

const specSchema = z
  .strictObject({
    cron: z.string().min(1).max(1000).optional(),
    everyMs: z.number().int().min(MIN_EVERY_MS).max(MAX_EVERY_MS).optional(),
    tz: z.string().min(1).max(100).optional(),
    queue: z.string(),
    payload: z.unknown().optional(),
    startAt: z.union([z.date().min(new Date(0)).max(new Date(MAX_DATE_MS)), z.number().int().min(0).max(MAX_DATE_MS)]).optional(),
    missed: z.enum(['one', 'all', 'none']).optional(),
    enabled: z.boolean().optional(),
  })
  .refine((s) => (s.cron === undefined) !== (s.everyMs === undefined), { message: 'give exactly one of cron or everyMs' })
  .refine((s) => s.tz === undefined || s.cron !== undefined, { message: 'tz applies to cron schedules only' });

/** Throws INVALID_ARGUMENT unless `name` can name a schedule (the queue-name rules). */
export function assertScheduleName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || !QUEUE_NAME.test(name)) {
    const shown = typeof name === 'string' ? JSON.stringify(name.slice(0, 100)) : typeof name;
    throw new SpoolError('INVALID_ARGUMENT', `Expected a schedule name of 1–80 characters from [A-Za-z0-9._-], got ${shown}`);
  }
}

/**
 * Validates a spec: INVALID_QUEUE_NAME for its queue, INVALID_ARGUMENT for anything else (an
 * unknown key, both or neither of cron and everyMs, everyMs < 1000, a cron expression or time zone
 * that croner refuses, a cron that never fires, a payload that is not JSON). Its size is the
 * target queue's to judge (target.ts), as for a send.
 */
export function parseSpec(input: unknown): { spec: StoredSpec; enabled: boolean } {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new SpoolError('INVALID_ARGUMENT', `Expected a schedule spec object, got ${input === null ? 'null' : Array.isArray(input) ? 'an array' : typeof input}`);
  }
  // A getter that throws is bad input, not a crash: INVALID_ARGUMENT.
  assertQueueName(readInput('The schedule spec', () => (input as { queue?: unknown }).queue));
  const parsed = readInput('The schedule spec', () => specSchema.safeParse(input));
  if (!parsed.success) throw new SpoolError('INVALID_ARGUMENT', `Invalid schedule: ${describeZod(parsed.error)}`, { cause: parsed.error });
  const s = parsed.data;
  let payload: string;
  try {
    payload = serializePayload(s.payload ?? null, Number.MAX_SAFE_INTEGER, 'Schedule payload');
  } catch (error) {
    throw new SpoolError('INVALID_ARGUMENT', (error as Error).message, { cause: error, details: (error as SpoolError).details });
  }
  const spec: StoredSpec = {
    ...(s.cron !== undefined ? { cron: s.cron.trim() } : {}),
    ...(s.tz !== undefined ? { tz: s.tz } : {}),
    ...(s.everyMs !== undefined ? { everyMs: s.everyMs } : {}),
    queue: s.queue,
    payload,
    ...(s.startAt !== undefined ? { startAt: +s.startAt } : {}),
    missed: s.missed ?? 'one',
  };
  if (spec.cron !== undefined) {
    try {
      cronJob(spec.cron, spec.tz);
    } catch (error) {
      throw new SpoolError('INVALID_ARGUMENT', `Invalid cron schedule: ${(error as Error).message}`, { cause: error });
    }
    let first: number | null;
    try {
      // A bad time zone shows only when a time is converted.
      first = createTicker(ruleOf(spec), spec.startAt ?? 0).after(spec.startAt ?? 0);
    } catch (error) {
      throw new SpoolError('INVALID_ARGUMENT', `Invalid cron schedule (time zone ${JSON.stringify(spec.tz ?? 'UTC')}): ${(error as Error).message}`, { cause: error });
    }
    if (first === null) throw new SpoolError('INVALID_ARGUMENT', `The cron expression ${JSON.stringify(spec.cron)} never fires`);
  }
  return { spec, enabled: s.enabled ?? true };
}

/** The tick rule of a stored spec. */
export function ruleOf(spec: StoredSpec): TickRule {
  return spec.everyMs !== undefined ? { everyMs: spec.everyMs } : { cron: spec.cron!, ...(spec.tz !== undefined ? { tz: spec.tz } : {}) };
}

/** The stored text of a spec: keys in a fixed order and the payload canonical, so equal specs give equal text. */
export function specText(spec: StoredSpec): string {
  return JSON.stringify({
    cron: spec.cron,
    tz: spec.tz,
    everyMs: spec.everyMs,
    queue: spec.queue,
    payload: canonicalJson(spec.payload),
    startAt: spec.startAt,
    missed: spec.missed,
  });
}

/** Reads a stored spec back; throws on a row that no valid upsert could have written. */
export function readSpec(text: string): StoredSpec {
  const raw = JSON.parse(text) as Partial<StoredSpec> | null;
  if (raw === null || typeof raw !== 'object' || typeof raw.queue !== 'string' || typeof raw.payload !== 'string') {
    throw new Error('the stored schedule spec is not an object with a queue and a payload');
  }
  if ((raw.cron === undefined) === (raw.everyMs === undefined)) throw new Error('the stored schedule spec has neither or both of cron and everyMs');
  return raw as StoredSpec;
}
