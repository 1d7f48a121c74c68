/**
 * Firing schedules, in a started spool only. One timer for the nearest tick across all schedules
 * (never one per schedule), re-read on every poll for schedules that other processes changed.
 *
 * Exactly one message per tick: each firing reads the due rows inside the group transaction, moves
 * the row's cursor (the last tick sent) and next tick by compare-and-set, and inserts the ticks'
 * messages in that same transaction. A crash before the commit sends nothing and moves nothing; a
 * crash after it has sent everything it moved past. A second process (or a second firing) that read
 * the row before the move finds it changed and sends nothing.
 *
 * Which ticks: those at or before max(start of this spool, the schedule's last change) fell due
 * while no started spool ran the schedule: they are missed ticks and follow its `missed` policy
 * ('one': the latest of them, 'all': each, the latest 1,000 at most, 'none': none). Every later tick
 * is sent, however late the timer fired: a running spool never skips one. A tick refused by the
 * queue (NOT_ACCEPTING, QUEUE_FULL) is reported as an `error` event and the cursor still moves, so a
 * schedule never floods a queue that refused it.
 */
import type Database from 'better-sqlite3';
import { compiledMessageMachine as machine } from '../../machines/compiled.js';
import { MAX_TIMER_MS, type Clock, type TimerHandle } from '../clock.js';
import { crashPoint } from '../crash-points.js';
import type { Repository } from '../db/repository.js';
import { createScheduleStore, type ScheduleRow } from '../db/schedules.js';
import { runSavepoint } from '../db/transaction.js';
import { messageOf, type SpoolErrorCode } from '../errors.js';
import type { QueueDirectory } from '../queues/directory.js';
import type { EventBus } from '../events.js';
import type { Committer } from '../runtime/committer.js';
import { policyFor, queueSettings } from '../settings/schema.js';
import type { SettingsRuntime } from '../settings/store.js';
import { MAX_BACKFILL, readSpec, ruleOf, type StoredSpec } from './spec.js';
import { targetRefusal } from './target.js';
import { createTicker } from './ticks.js';

/** Schedules read per firing; more due ones fire in the next (at once). */
const DUE_PER_FIRING = 100;

/** What the runner needs. */
export interface RunnerDeps {
  sqlite: Database.Database;
  repo: Repository;
  committer: Committer;
  clock: Clock;
  events: EventBus;
  settings: SettingsRuntime;
  /** What each queue is: a tick obeys the rules a send to its queue does. */
  directory: QueueDirectory;
  /** Messages were stored in `queue`: the supervisor may claim them. */
  sent(queue: string): void;
}

/** What one firing did, announced after its commit. */
interface Firing {
  sent: { id: string; queue: string }[];
  refused: { name: string; queue: string; at: number; code: SpoolErrorCode; reason: string }[];
  errors: string[];
}

/** Creates the runner (stopped). */
export function createScheduleRunner(deps: RunnerDeps) {
  const { sqlite, repo, committer, clock, events, settings } = deps;
  const store = createScheduleStore(sqlite);
  let running = false;
  /** When this spool started: ticks at or before it were missed by every started spool. */
  let bootAt = 0;
  let timer: TimerHandle | undefined;
  let timerAt: number | null = null;
  /** A firing is queued on the committer: the next waits for its commit. */
  let firing = false;

  function clearTimer() {
    if (timer !== undefined) clock.clearTimeout(timer);
    timer = undefined;
    timerAt = null;
  }

  /** (Re)arms the one timer for the nearest tick; fires now when one is already due. */
  function arm() {
    if (!running || firing) return;
    let at: number | null;
    try {
      at = store.nearest();
    } catch (error) {
      events.emit({ type: 'error', code: 'STORAGE_ERROR', message: `Could not read the schedules: ${messageOf(error)}`, at: clock.now() });
      return;
    }
    if (at === null) return clearTimer();
    const wait = at - clock.now();
    if (wait <= 0) return fire();
    if (timer !== undefined && timerAt === at) return;
    clearTimer();
    timerAt = at;
    timer = clock.setTimeout(() => {
      timer = undefined;
      timerAt = null;
      fire();
    }, Math.min(MAX_TIMER_MS, wait));
  }

  function fire() {
    if (!running || firing) return;
    clearTimer();
    firing = true;
    let out: Firing = { sent: [], refused: [], errors: [] };
    committer.enqueue<Firing>({
      kind: 'transition',
      run() {
        // Run again from scratch if the committer retries the group item by item.
        out = { sent: [], refused: [], errors: [] };
        const now = clock.now();
        // More due rows than this reads (and ticks beyond a tick's cap) fire next: arm() finds them due.
        const rows = store.due(now, DUE_PER_FIRING);
        for (const row of rows) {
          try {
            runSavepoint(sqlite, () => tick(row, now, out));
          } catch (error) {
            if (!sqlite.inTransaction) throw error;
            out.errors.push(`Schedule "${row.name}" could not fire: ${messageOf(error)}`);
          }
        }
        crashPoint('schedule.beforeCommit');
        return out;
      },
      committed(result) {
        firing = false;
        if (result.sent.length > 0) crashPoint('schedule.afterCommit');
        announce(result);
        arm();
      },
      failed(error) {
        firing = false;
        if (error.code !== 'STORAGE_LOST' && error.code !== 'CLOSED') {
          events.emit({ type: 'error', code: error.code, message: `Schedules could not fire, retrying at the next poll: ${error.message}`, at: clock.now() });
        }
      },
    });
  }

  /** Inside the transaction: the due ticks of one schedule, its compare-and-set, their messages. */
  function tick(row: ScheduleRow, now: number, out: Firing) {
    let spec: StoredSpec;
    try {
      spec = readSpec(row.spec);
    } catch (error) {
      // No valid upsert wrote this row: it stops ticking (an upsert replaces it), reported once.
      if (store.advance(row, row.cursor, null)) out.errors.push(`Schedule "${row.name}" is unreadable and stops ticking until it is upserted again: ${messageOf(error)}`);
      return;
    }
    let due: { ticks: number[]; next: number | null };
    try {
      due = dueTicks(spec, row, now);
    } catch (error) {
      // Its ticks cannot be computed (a time zone this Node's ICU no longer knows, say): left due,
      // it would fire again at once, forever. It stops ticking until upserted again, reported once.
      if (store.advance(row, row.cursor, null)) out.errors.push(`Schedule "${row.name}" cannot compute its ticks and stops ticking until it is upserted again: ${messageOf(error)}`);
      return;
    }
    const { ticks, next } = due;
    const cursor = ticks.length > 0 ? ticks[ticks.length - 1]! : row.cursor;
    // Someone moved it since it was read (another process fired it, an upsert changed it): theirs stands.
    if (!store.advance(row, cursor, next)) return;
    for (const at of ticks) send(row.name, spec, at, now, out);
  }

  /** The ticks of `row` due by `now` (missed ones by its policy), and the one after them. */
  function dueTicks(spec: StoredSpec, row: ScheduleRow, now: number): { ticks: number[]; next: number | null } {
    const ticker = createTicker(ruleOf(spec), row.anchor);
    const missedUntil = Math.max(bootAt, row.updatedAt);
    const ticks: number[] = [];
    let next: number | null = row.nextAt!;
    if (next <= missedUntil) {
      const end = Math.min(missedUntil, now);
      if (spec.missed !== 'none') ticks.push(...ticker.latest(next, end, spec.missed === 'one' ? 1 : MAX_BACKFILL));
      next = ticker.after(end);
    }
    while (next !== null && next <= now && ticks.length < MAX_BACKFILL) {
      ticks.push(next);
      next = ticker.after(next);
    }
    return { ticks, next };
  }

  function send(name: string, spec: StoredSpec, at: number, now: number, out: Firing) {
    const { queue } = spec;
    const s = settings.get();
    const refuse = (code: SpoolErrorCode, reason: string) => out.refused.push({ name, queue, at, code, reason });
    if (!s.accepting) return refuse('NOT_ACCEPTING', 'settings.accepting is false');
    // The queue may have become FIFO, or had its own size limit set, since the upsert.
    const refusal = targetRefusal(deps.directory, queue, spec.payload);
    if (refusal) return refuse(refusal.code, refusal.message);
    if (queueSettings(s, queue)?.accepting === false) return refuse('NOT_ACCEPTING', `settings.queues.${queue}.accepting is false`);
    const { maxPending } = policyFor(s, queue);
    if (maxPending !== null && repo.countLive(queue) >= maxPending) return refuse('QUEUE_FULL', `it holds ${maxPending} (maxPending) pending or in-flight messages`);
    repo.addQueue(queue, now);
    const seq = repo.insert({
      queue,
      payload: spec.payload,
      context: machine.initial({ visibleAt: now }).context,
      priority: 0,
      ready: 1,
      // Each tick is its own message: the cursor, not a dedupe key, makes it exactly one.
      dedupeKey: null,
      now,
      schedule: name,
      scheduledFor: at,
    });
    if (seq !== undefined) out.sent.push({ id: String(seq), queue });
  }

  function announce(result: Firing) {
    const at = clock.now();
    for (const text of result.errors) events.emit({ type: 'error', code: 'STORAGE_ERROR', message: text, at });
    for (const r of result.refused) {
      events.emit({
        type: 'error',
        code: r.code,
        message: `Schedule "${r.name}": the tick of ${new Date(r.at).toISOString()} was refused by queue "${r.queue}" (${r.reason}); it is not sent again`,
        at,
      });
    }
    const queues = new Set<string>();
    for (const m of result.sent) {
      if (!events.idle) events.emit({ type: 'message.state', id: m.id, queue: m.queue, from: null, to: 'pending', attempt: 0, at });
      queues.add(m.queue);
    }
    for (const queue of queues) deps.sent(queue);
  }

  return {
    /** Starts firing; ticks at or before `at` that no started spool sent are missed ticks. */
    start(at: number) {
      bootAt = at;
      running = true;
      arm();
    },
    /** A schedule changed (here, or found by the poll): re-arm for the nearest tick. */
    refresh: arm,
    /** Stops firing (a queued firing still lands); clears the timer. */
    stop() {
      running = false;
      clearTimer();
    },
  };
}

/** The runner's type. */
export type ScheduleRunner = ReturnType<typeof createScheduleRunner>;
