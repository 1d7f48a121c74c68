/**
 * `spool.schedules`: durable schedules managed by name. Any handle can manage them (a producer,
 * the CLI); only a started spool fires their ticks (runner.ts). An upsert decides the anchor and
 * the next tick in one transaction:
 * - a new schedule is anchored at `startAt`, or else at the time of the upsert;
 * - re-upserting an identical spec keeps the anchor, the cursor and the next tick;
 * - a changed spec re-anchors (the cursor, the last tick sent, stays as history, and no tick at or
 *   before it is sent again);
 * - disabling keeps the row and sends nothing; re-enabling resumes with the first tick after the
 *   re-enable (ticks that fell due while it was disabled are not missed ticks: none is sent).
 */
import type { Clock } from '../clock.js';
import { createScheduleStore, type ScheduleRow, type ScheduleStore } from '../db/schedules.js';
import type { QueueDirectory } from '../queues/directory.js';
import type { Storage } from '../storage.js';
import { assertScheduleName, parseSpec, readSpec, ruleOf, specText, type MissedPolicy, type ScheduleSpec } from './spec.js';
import { targetRefusal } from './target.js';
import { createTicker } from './ticks.js';

/** A stored schedule, as `schedules.get()` and `list()` show it. */
export interface ScheduleInfo {
  name: string;
  cron?: string;
  tz?: string;
  everyMs?: number;
  queue: string;
  payload: unknown;
  startAt?: number;
  missed: MissedPolicy;
  enabled: boolean;
  /** everyMs ticks fall at anchor + k × everyMs; no tick is at or before it. */
  anchor: number;
  /** The last tick sent (epoch ms), null before the first. */
  lastTickAt: number | null;
  /** The next tick to send (epoch ms), null while disabled. */
  nextAt: number | null;
  createdAt: number;
  updatedAt: number;
}

/** The public schedules API (`spool.schedules`). */
export interface Schedules {
  /** Creates or changes the schedule `name`; resolves with it as stored. */
  upsert(name: string, spec: ScheduleSpec): Promise<ScheduleInfo>;
  /** The schedule `name`, or undefined. */
  get(name: string): Promise<ScheduleInfo | undefined>;
  /** Every schedule, by name. */
  list(): Promise<ScheduleInfo[]>;
  /** Deletes the schedule `name`; resolves with false when there was none. */
  remove(name: string): Promise<boolean>;
}

/** What the API needs. */
export interface SchedulesDeps {
  storage: Storage;
  clock: Clock;
  maxPayloadBytes: number;
  /** What the target queue is: a FIFO queue or a queue's own maxPayloadBytes refuses a spec. */
  directory: QueueDirectory;
  /** A schedule changed through this handle: the running spool re-arms its timer now. */
  changed(): void;
}

/** The public view of a row (a row no upsert could have written shows its raw spec as payload). */
export function toScheduleInfo(row: ScheduleRow): ScheduleInfo {
  let spec;
  try {
    spec = readSpec(row.spec);
  } catch {
    const { name, anchor, createdAt, updatedAt } = row;
    return { name, queue: '', payload: row.spec, missed: 'one', enabled: row.enabled === 1, anchor, lastTickAt: row.cursor, nextAt: row.nextAt, createdAt, updatedAt };
  }
  return {
    name: row.name,
    ...(spec.cron !== undefined ? { cron: spec.cron } : {}),
    ...(spec.tz !== undefined ? { tz: spec.tz } : {}),
    ...(spec.everyMs !== undefined ? { everyMs: spec.everyMs } : {}),
    queue: spec.queue,
    payload: JSON.parse(spec.payload) as unknown,
    ...(spec.startAt !== undefined ? { startAt: spec.startAt } : {}),
    missed: spec.missed,
    enabled: row.enabled === 1,
    anchor: row.anchor,
    lastTickAt: row.cursor,
    nextAt: row.nextAt,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/** Creates the API. */
export function createSchedules(deps: SchedulesDeps): Schedules {
  const { storage, clock } = deps;
  let store: { sqlite: unknown; store: ScheduleStore } | undefined;
  /** The statements of the current connection (a spool reopens none, but never reuse a closed one). */
  function statements(): ScheduleStore {
    const { db } = storage.open();
    if (store?.sqlite !== db.sqlite) store = { sqlite: db.sqlite, store: createScheduleStore(db.sqlite) };
    return store.store;
  }

  return {
    async upsert(name, input) {
      assertScheduleName(name);
      const { spec, enabled } = parseSpec(input);
      const refusal = targetRefusal(deps.directory, spec.queue, spec.payload, deps.maxPayloadBytes);
      if (refusal) throw refusal;
      const text = specText(spec);
      const s = statements();
      const now = clock.now();
      const row = storage.transaction(() => {
        const existing = s.get(name);
        if (!existing) {
          const anchor = spec.startAt ?? now;
          s.insert({ name, spec: text, enabled, anchor, nextAt: enabled ? createTicker(ruleOf(spec), anchor).after(anchor) : null, now });
          return s.get(name)!;
        }
        const same = existing.spec === text;
        // Enabled without a next tick: parked by the runner (its ticks could not be computed), and
        // an upsert, even of the very spec it holds, is what makes it tick again.
        const parked = existing.enabled === 1 && existing.nextAt === null;
        if (same && (existing.enabled === 1) === enabled && !parked) return existing;
        const anchor = same ? existing.anchor : (spec.startAt ?? now);
        const ticker = createTicker(ruleOf(spec), anchor);
        const sent = existing.cursor ?? -Infinity;
        // Re-enabled or unparked (with its spec changed or not): resume after now, since ticks that
        // fell due while it was disabled (or parked) are not sent, even on an anchor in the past.
        // Changed while enabled: the new spec's ticks after its anchor. Never one at or before a
        // tick already sent.
        const nextAt = !enabled ? null : ticker.after(Math.max(existing.enabled === 0 || parked ? now : anchor, sent));
        s.update({ name, spec: text, enabled, anchor, nextAt, now });
        return s.get(name)!;
      });
      deps.changed();
      return toScheduleInfo(row);
    },
    async get(name) {
      assertScheduleName(name);
      const row = statements().get(name);
      return row && toScheduleInfo(row);
    },
    async list() {
      return statements().list().map(toScheduleInfo);
    },
    async remove(name) {
      assertScheduleName(name);
      const s = statements();
      const removed = storage.transaction(() => s.remove(name));
      if (removed) deps.changed();
      return removed;
    },
  };
}
