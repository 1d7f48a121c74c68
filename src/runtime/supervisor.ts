/**
 * The supervisor runtime: boot recovery, claiming into executor pools, running handlers as live
 * message actors, settling them, and the two timers (nearest visible-at, nearest deadline).
 *
 * Ordering rules, each for a reason:
 * - A transition is computed purely (stepper), committed, and only then applied to the live actor
 *   and announced: memory is never ahead of the disk.
 * - A claim writes the row straight to `processing` (pending → activating → processing, each step
 *   computed by the machine) in the group transaction; the handler starts after that commit.
 * - Every settle is fenced on the claim's lease token in the same statement, so a timed-out or
 *   superseded attempt can never settle a newer one.
 * - Pending rows are not actors: an actor lives only while its message is in flight.
 */
import { randomUUID } from 'node:crypto';
import { createActor, type ActorRefFrom, type InspectionEvent, type Observer } from 'xstate';
import { messageMachine, type MessageEvent, type MessageState, type StoredError } from '../../machines/message.machine.js';
import { stateOf, type MessageSnapshot, type MessageStepper, type PersistedMessage } from '../../machines/stepper.js';
import { DEFAULT_POOL, freeSlots, poolOf, supervisorMachine, type PoolLimits } from '../../machines/supervisor.machine.js';
import { backoffDelay } from '../../machines/retry-policy.js';
import { MAX_TIMER_MS, monotonicNow, type Clock, type TimerHandle } from '../clock.js';
import { crashPoint } from '../crash-points.js';
import { ABANDONED, type MessageRow, type Repository } from '../db/repository.js';
import { runTransaction } from '../db/transaction.js';
import type Database from 'better-sqlite3';
import { messageOf, SpoolError, toStoredError } from '../errors.js';
import type { EventBus } from '../events.js';
import { policyFor, type Settings } from '../settings/schema.js';
import type { SettingsRuntime } from '../settings/store.js';
import type { Committer } from './committer.js';
import { outcomeOf, type Handler, type Message, type Outcome } from './handler.js';
import { deadLetter, decodeSnapshot, transitionRow } from './message-codec.js';

/** An XState inspection observer (or a plain callback), passed to every actor. */
export type Inspect = Observer<InspectionEvent> | ((event: InspectionEvent) => void);

type MessageActor = ActorRefFrom<typeof messageMachine>;

interface Inflight {
  seq: number;
  id: string;
  queue: string;
  pool: string;
  token: string;
  snapshot: MessageSnapshot;
  actor: MessageActor | undefined;
  /** Created on first use of `signal`: most handlers never read it. */
  controller: AbortController | undefined;
  /** The handler's timeout on the monotonic clock (a stepped wall clock cannot stretch it). */
  deadline: number | null;
  settled: boolean;
  message: Message;
  /** Resolves when the handler returns (or throws), whatever the outcome. */
  finished: Promise<void>;
}

interface Claimed {
  row: MessageRow;
  /** The committed `processing` snapshot, persisted form: the live actor is restored from it. */
  persisted: PersistedMessage;
  entry: Inflight;
}

interface Disposition {
  row: MessageRow;
  to: MessageState;
  attempt: number;
  error: StoredError;
}

interface ClaimResult {
  claimed: Claimed[];
  dispositions: Disposition[];
  nextDelayedAt: number | null;
  capped: boolean;
}

/** Dependencies of the supervisor runtime. */
export interface SupervisorDeps {
  sqlite: Database.Database;
  repo: Repository;
  committer: Committer;
  stepper: MessageStepper;
  clock: Clock;
  events: EventBus;
  settings: SettingsRuntime;
  consumers: ReadonlyMap<string, Handler>;
  inspect: Inspect | undefined;
  random: () => number;
}

function limitsOf(settings: Settings): PoolLimits {
  const queues: Record<string, number> = {};
  const paused: string[] = [];
  for (const [name, q] of Object.entries(settings.queues)) {
    if (q.executor) queues[name] = q.executor.concurrency;
    if (q.paused) paused.push(name);
  }
  return { concurrency: settings.executor.concurrency, queues, paused };
}

/** The least time stop() gives queued settles to land, even when handlers used up the timeout. */
export const DRAIN_GRACE_MS = 500;

function isThenable(value: unknown): value is PromiseLike<unknown> {
  try {
    return value !== null && typeof value === 'object' && typeof (value as PromiseLike<unknown>).then === 'function';
  } catch {
    return false;
  }
}


/** Creates the supervisor runtime (stopped). */
export function createSupervisor(deps: SupervisorDeps) {
  const { repo, committer, stepper, clock, events, settings, consumers, inspect } = deps;
  const actor = createActor(supervisorMachine, { input: limitsOf(settings.get()), inspect, id: 'supervisor' });
  actor.start();

  const inflight = new Map<number, Inflight>();
  const knownQueues = new Set<string>();
  /** Queues that may have ready rows; a claim that drains a queue removes it. */
  const hot = new Set<string>();
  // Keyed by queue name: no prototype, so a queue called "constructor" reads undefined here.
  let releases: Record<string, number> = Object.create(null);
  let releaseCount = 0;
  let running = false;
  let pollTimer: TimerHandle | undefined;
  let pollEveryMs = 0;
  let delayedTimer: TimerHandle | undefined;
  let delayedAt: number | null = null;
  let deadlineTimer: TimerHandle | undefined;
  let deadlineAt: number | null = null;
  let settingsSub: { unsubscribe(): void } | undefined;

  const emitState = (id: string, queue: string, from: MessageState | null, to: MessageState, attempt: number, at: number) => {
    if (!events.idle) events.emit({ type: 'message.state', id, queue, from, to, attempt, at });
  };
  const emitError = (id: string, queue: string, error: StoredError, at: number) =>
    events.emit({ type: 'message.error', id, queue, code: error.code, message: error.message, at });

  function applyReleases() {
    if (releaseCount === 0) return;
    const counts = releases;
    releases = Object.create(null);
    releaseCount = 0;
    actor.send({ type: 'RELEASE', counts });
  }

  function release(pool: string) {
    releases[pool] = (releases[pool] ?? 0) + 1;
    releaseCount += 1;
    if (running) committer.wake();
  }

  // ---- claiming -------------------------------------------------------------------------------

  function claim(): ClaimResult | null {
    applyReleases();
    if (!running || committer.lost) return null;
    const now = clock.now();
    for (const queue of repo.promoteDue(now)) {
      knownQueues.add(queue);
      hot.add(queue);
    }
    const ctx = actor.getSnapshot().context;
    const free = freeSlots(ctx);
    const { batchSize } = settings.get().processor;
    const byPool = new Map<string, string[]>();
    for (const queue of hot) {
      if (ctx.paused[queue]) continue;
      const pool = poolOf(ctx, queue);
      if ((free[pool] ?? 0) <= 0) continue;
      let list = byPool.get(pool);
      if (!list) byPool.set(pool, (list = []));
      list.push(queue);
    }
    const result: ClaimResult = { claimed: [], dispositions: [], nextDelayedAt: null, capped: false };
    let budget = batchSize;
    for (const [pool, queues] of byPool) {
      if (budget <= 0) {
        result.capped = true;
        break;
      }
      const want = Math.min(free[pool] ?? 0, budget);
      const chosen = choose(queues, want);
      budget -= chosen.length;
      if (budget <= 0) result.capped = true;
      for (const row of chosen) claimRow(row, pool, now, result);
    }
    result.nextDelayedAt = repo.nextDelayedAt();
    return result;
  }

  /** The best `want` rows across `queues`, in priority, visible-at, send order. */
  function choose(queues: string[], want: number): MessageRow[] {
    if (queues.length === 1) {
      const rows = repo.candidates(queues[0]!, want);
      if (rows.length < want) hot.delete(queues[0]!);
      return rows;
    }
    const all: MessageRow[] = [];
    const fetched = new Map<string, number>();
    for (const queue of queues) {
      const rows = repo.candidates(queue, want);
      fetched.set(queue, rows.length);
      all.push(...rows);
    }
    all.sort((a, b) => b.priority - a.priority || a.visibleAt - b.visibleAt || a.seq - b.seq);
    const chosen = all.slice(0, want);
    const taken = new Map<string, number>();
    for (const row of chosen) taken.set(row.queue, (taken.get(row.queue) ?? 0) + 1);
    for (const [queue, n] of fetched) if (n < want && (taken.get(queue) ?? 0) === n) hot.delete(queue);
    return chosen;
  }

  function claimRow(row: MessageRow, pool: string, now: number, result: ClaimResult) {
    let pending: MessageSnapshot;
    let payload: unknown;
    try {
      pending = decodeSnapshot(stepper, row);
      payload = JSON.parse(row.payload);
    } catch (error) {
      return corrupt(row, error, now, result);
    }
    const policy = policyFor(settings.get(), row.queue);
    const activating = stepper.step(pending, { type: 'CLAIM', at: now });
    if (!consumers.has(row.queue)) {
      const error: StoredError = { code: 'NO_CONSUMER', message: `No consumer is registered for queue "${row.queue}"` };
      const drop = settings.get().noConsumer === 'delete';
      const next = stepper.step(activating, drop ? { type: 'DROP', at: now } : { type: 'REJECT', at: now, error });
      const ok = drop
        ? repo.remove(row.seq, 'pending', null)
        : repo.write(transitionRow(stepper, row.seq, { state: 'pending', token: null }, next, { token: null, owner: null }, now));
      if (ok) result.dispositions.push({ row, to: stateOf(next), attempt: next.context.attempt, error });
      return;
    }
    // The row keeps the wall-clock deadline (other processes read it); this process times the
    // handler on the monotonic clock, so an NTP step back cannot stretch a 300 ms timeout by hours.
    const leaseExpiresAt = policy.timeoutMs === null ? null : now + policy.timeoutMs;
    const deadline = policy.timeoutMs === null ? null : monotonicNow(clock) + policy.timeoutMs;
    const processing = stepper.step(activating, { type: 'START', at: now, leaseExpiresAt });
    const token = randomUUID();
    const persisted = stepper.persist(processing);
    const ok = repo.write(transitionRow(stepper, row.seq, { state: 'pending', token: null }, processing, { token, owner: null }, now, persisted));
    if (!ok) return;
    const ctx = processing.context;
    const entry: Inflight = {
      seq: row.seq,
      id: row.id,
      queue: row.queue,
      pool,
      token,
      snapshot: processing,
      actor: undefined,
      controller: undefined,
      deadline,
      settled: false,
      finished: Promise.resolve(),
      message: {
        id: row.id,
        queue: row.queue,
        payload,
        attempt: ctx.attempt,
        deliveries: ctx.deliveries,
        priority: row.priority,
        createdAt: row.createdAt,
      },
    };
    result.claimed.push({ row, persisted, entry });
  }

  /** A row whose snapshot or payload cannot be read goes to dead with CORRUPT_ROW. */
  function corrupt(row: MessageRow, cause: unknown, now: number, result: ClaimResult | null): boolean {
    const error: StoredError = { code: 'CORRUPT_ROW', message: `Unreadable row: ${(cause as Error).message}` };
    // The stored snapshot is unusable, so the machine replays a fresh one to dead.
    const dead = deadLetter(stepper, row.visibleAt, now, error);
    const ok = repo.write(transitionRow(stepper, row.seq, { state: row.state, token: row.leaseToken }, dead, { token: null, owner: null }, now));
    if (ok && result) result.dispositions.push({ row, to: 'dead', attempt: dead.context.attempt, error });
    return ok;
  }

  function claimed(result: ClaimResult | null) {
    if (!result) return;
    const at = clock.now();
    for (const d of result.dispositions) {
      // A message without a consumer really went through activating (the machine's path); a
      // corrupt row's stored snapshot was unreadable, so it is announced as one step.
      if (d.error.code === 'NO_CONSUMER') emitState(d.row.id, d.row.queue, 'pending', 'activating', d.attempt, at);
      emitError(d.row.id, d.row.queue, d.error, at);
      emitState(d.row.id, d.row.queue, d.error.code === 'NO_CONSUMER' ? 'activating' : 'pending', d.to, d.attempt, at);
    }
    if (result.claimed.length) {
      // Claimed and committed, nothing handled yet: recovery must hand these out again.
      crashPoint('claim.afterCommit');
      const counts: Record<string, number> = Object.create(null);
      for (const c of result.claimed) counts[c.entry.pool] = (counts[c.entry.pool] ?? 0) + 1;
      actor.send({ type: 'ACQUIRE', counts });
      for (const c of result.claimed) {
        try {
          launch(c, at);
        } catch (error) {
          // Our own launch path failed (e.g. a throwing inspection observer) before the handler
          // could run: fail this attempt like a handler error, so the row cannot sit in flight
          // with no handler, and every other claimed message still launches.
          events.emit({ type: 'error', code: 'LAUNCH_FAILED', message: `Could not start ${c.entry.id}: ${messageOf(error)}`, at });
          if (!c.entry.settled) settle(c.entry, { kind: 'fail', error: toStoredError(error, 'LAUNCH_FAILED') });
        }
      }
    }
    if (result.nextDelayedAt !== null) armDelayed(result.nextDelayedAt);
    // Rows settled at claim (no consumer, corrupt) took no slot, yet may have crowded out ready
    // rows of other queues in this claim; claim again rather than wait for the poll.
    if (result.capped || result.dispositions.length > 0) committer.wake();
  }

  function launch(c: Claimed, at: number) {
    const { entry } = c;
    inflight.set(entry.seq, entry);
    // Activate the message's actor from its committed snapshot (a virtual actor: the row is the
    // truth). Replaying CLAIM and START on it would recompute what the claim already committed.
    const live = createActor(messageMachine, { snapshot: c.persisted as never, input: { visibleAt: 0 }, inspect, id: entry.id });
    live.start();
    entry.actor = live;
    emitState(entry.id, entry.queue, 'pending', 'activating', entry.message.attempt, at);
    emitState(entry.id, entry.queue, 'activating', 'processing', entry.message.attempt, at);
    if (entry.deadline !== null) armDeadline(entry.deadline);
    crashPoint('handler.started');
    const handler = consumers.get(entry.queue)!;
    let result: unknown;
    try {
      result = handler(entry.message, {
        get signal() {
          return (entry.controller ??= new AbortController()).signal;
        },
      });
    } catch (thrown) {
      settle(entry, outcomeOf(thrown));
      return;
    }
    if (isThenable(result)) {
      // A rejection takes exactly the path of a synchronous throw; and nothing in the chain may
      // reject unhandled, or a hostile rejection value would kill the process.
      entry.finished = Promise.resolve(result)
        .then(
          () => settle(entry, { kind: 'complete' }),
          (thrown) => settle(entry, outcomeOf(thrown)),
        )
        .catch((error: unknown) => {
          events.emit({ type: 'error', code: 'STORAGE_ERROR', message: `Could not settle ${entry.id}: ${messageOf(error)}`, at: clock.now() });
        });
    } else {
      settle(entry, { kind: 'complete' });
    }
  }

  // ---- settling -------------------------------------------------------------------------------

  function settle(entry: Inflight, outcome: Outcome) {
    if (entry.settled) {
      // Timed out or abandoned at stop: this attempt no longer holds the message.
      events.emit({ type: 'message.stale', id: entry.id, queue: entry.queue, attempt: entry.message.attempt, at: clock.now() });
      return;
    }
    entry.settled = true;
    release(entry.pool);
    const now = clock.now();
    const event = eventFor(entry, outcome, now);
    const next = stepper.step(entry.snapshot, event);
    const to = stateOf(next);
    const keepDone = settings.get().retention.doneMs > 0;
    committer.enqueue({
      kind: 'transition',
      run: () => {
        if (to === 'done') crashPoint('complete.beforeCommit');
        return to === 'done' && !keepDone
          ? repo.remove(entry.seq, 'processing', entry.token)
          : repo.write(transitionRow(stepper, entry.seq, { state: 'processing', token: entry.token }, next, { token: null, owner: null }, now));
      },
      committed: (ok) => {
        inflight.delete(entry.seq);
        if (!ok) {
          entry.actor?.stop();
          events.emit({ type: 'message.stale', id: entry.id, queue: entry.queue, attempt: entry.message.attempt, at: now });
          return;
        }
        entry.actor?.send(event);
        if (to !== 'done') entry.actor?.stop();
        if (outcome.kind === 'fail' || outcome.kind === 'reject') emitError(entry.id, entry.queue, outcome.error, now);
        emitState(entry.id, entry.queue, 'processing', to, entry.message.attempt, now);
        if (to === 'done') crashPoint('complete.afterCommit');
        else if (to === 'dead') crashPoint('dead.afterCommit');
        else {
          crashPoint('retry.scheduled');
          hot.add(entry.queue);
          if (next.context.visibleAt > now) armDelayed(next.context.visibleAt);
          // A retry due now (zero backoff, jitter drawing 0, RetryAfterError(0)): its queue became
          // hot only after this tick's claim ran, so ask for another claim rather than the poll.
          else committer.wake();
        }
      },
      failed: (error) => {
        // The row stays in flight on disk; the next boot's recovery returns it to pending.
        inflight.delete(entry.seq);
        entry.actor?.stop();
        // A lost file was reported once by the committer; one event per settle would flood.
        if (error.code !== 'STORAGE_LOST') events.emit({ type: 'error', code: error.code, message: `Could not settle ${entry.id}: ${error.message}`, at: now });
      },
    });
  }

  function eventFor(entry: Inflight, outcome: Outcome, now: number): MessageEvent {
    switch (outcome.kind) {
      case 'complete':
        return { type: 'COMPLETE', at: now };
      case 'reject':
        return { type: 'REJECT', at: now, error: outcome.error };
      case 'defer':
        return { type: 'DEFER', at: now, retryAt: now + outcome.delayMs };
      case 'fail': {
        const policy = policyFor(settings.get(), entry.queue);
        const delay = backoffDelay(policy.backoff, entry.snapshot.context.failures + 1, deps.random);
        return { type: 'FAIL', at: now, error: outcome.error, maxAttempts: policy.maxAttempts, retryAt: now + delay };
      }
    }
  }

  /** Aborts a handler's signal; one that never read it gets an already-aborted one if it does later. */
  function abort(entry: Inflight, reason: SpoolError) {
    (entry.controller ??= new AbortController()).abort(reason);
  }

  // ---- timers ---------------------------------------------------------------------------------

  function armDelayed(at: number) {
    if (!running || (delayedAt !== null && delayedAt <= at)) return;
    if (delayedTimer !== undefined) clock.clearTimeout(delayedTimer);
    delayedAt = at;
    delayedTimer = clock.setTimeout(() => {
      delayedTimer = undefined;
      delayedAt = null;
      committer.wake();
    }, Math.min(MAX_TIMER_MS, Math.max(0, at - clock.now())));
  }

  /** `at` is on the monotonic clock. */
  function armDeadline(at: number) {
    if (deadlineAt !== null && deadlineAt <= at) return;
    if (deadlineTimer !== undefined) clock.clearTimeout(deadlineTimer);
    deadlineAt = at;
    deadlineTimer = clock.setTimeout(expireDeadlines, Math.min(MAX_TIMER_MS, Math.max(0, at - monotonicNow(clock))));
  }

  function expireDeadlines() {
    deadlineTimer = undefined;
    deadlineAt = null;
    const now = monotonicNow(clock);
    let nearest: number | null = null;
    for (const entry of inflight.values()) {
      if (entry.settled || entry.deadline === null) continue;
      if (entry.deadline <= now) {
        const error = new SpoolError('TIMEOUT', `The handler of ${entry.queue} ran past its timeoutMs`);
        settle(entry, { kind: 'fail', error: { code: 'TIMEOUT', message: error.message } });
        abort(entry, error);
      } else if (nearest === null || entry.deadline < nearest) nearest = entry.deadline;
    }
    if (nearest !== null) armDeadline(nearest);
  }

  function schedulePoll() {
    pollEveryMs = settings.get().processor.pollIntervalMs;
    pollTimer = clock.setTimeout(() => {
      pollTimer = undefined;
      if (!running) return;
      // Also catches a deleted database on an idle spool, which commits nothing to notice it by.
      if (!committer.verify()) return;
      try {
        settings.refresh();
        refreshQueues();
      } catch (error) {
        events.emit({ type: 'error', code: 'STORAGE_ERROR', message: `Poll failed: ${(error as Error).message}`, at: clock.now() });
      }
      committer.wake();
      schedulePoll();
    }, pollEveryMs);
  }

  function refreshQueues() {
    for (const name of repo.queueNames()) knownQueues.add(name);
    for (const name of consumers.keys()) knownQueues.add(name);
    for (const name of knownQueues) hot.add(name);
  }

  // ---- boot recovery --------------------------------------------------------------------------

  /** Every activating/processing row back to pending (or dead on a crash loop), in one transaction. */
  function recover(): { pending: number; dead: number } {
    const now = clock.now();
    const announce: { row: MessageRow; to: MessageState; attempt: number; error: StoredError | null }[] = [];
    runTransaction(deps.sqlite, () => {
      for (;;) {
        const rows = repo.inflight(500);
        if (rows.length === 0) break;
        for (const row of rows) {
          let snapshot: MessageSnapshot;
          try {
            snapshot = decodeSnapshot(stepper, row);
          } catch (error) {
            corrupt(row, error, now, null);
            announce.push({ row, to: 'dead', attempt: row.attempt, error: { code: 'CORRUPT_ROW', message: (error as Error).message } });
            continue;
          }
          const { maxCrashes } = policyFor(settings.get(), row.queue);
          const crashed = row.owner !== ABANDONED;
          const next = stepper.step(snapshot, { type: 'RECOVER', at: now, maxCrashes, crashed });
          repo.write(transitionRow(stepper, row.seq, { state: row.state, token: row.leaseToken }, next, { token: null, owner: null }, now));
          announce.push({ row, to: stateOf(next), attempt: next.context.attempt, error: next.context.lastError?.code === 'CRASH_LOOP' && stateOf(next) === 'dead' ? next.context.lastError : null });
          crashPoint('recovery.midway');
        }
      }
    });
    let dead = 0;
    for (const a of announce) {
      if (a.to === 'dead') dead += 1;
      if (a.error) emitError(a.row.id, a.row.queue, a.error, now);
      emitState(a.row.id, a.row.queue, a.row.state, a.to, a.attempt, now);
    }
    const result = { pending: announce.length - dead, dead };
    // Emitted on every boot, zeros included, so an app can tell "nothing to recover" apart.
    events.emit({ type: 'spool.recovered', ...result, at: now });
    return result;
  }

  // ---- lifecycle ------------------------------------------------------------------------------

  return {
    actor,
    /** Recovery, then claiming. */
    start() {
      if (running) return;
      recover();
      refreshQueues();
      running = true;
      actor.send({ type: 'CONFIGURE', limits: limitsOf(settings.get()) });
      actor.send({ type: 'START' });
      settingsSub = settings.settings$.subscribe((next) => {
        actor.send({ type: 'CONFIGURE', limits: limitsOf(next) });
        for (const name of Object.keys(next.queues)) knownQueues.add(name);
        for (const name of knownQueues) hot.add(name);
        // A new poll interval applies now, not after the old (possibly hour-long) one runs out.
        if (pollTimer !== undefined && next.processor.pollIntervalMs !== pollEveryMs) {
          clock.clearTimeout(pollTimer);
          schedulePoll();
        }
        committer.wake();
      });
      committer.setHook({
        run: claim,
        committed: claimed as (r: unknown) => void,
        failed: (error) => {
          // The claim rolled back: forget what it learnt about empty queues, and report it.
          for (const name of knownQueues) hot.add(name);
          events.emit({ type: 'error', code: error.code, message: `Claim failed, retrying: ${error.message}`, at: clock.now() });
        },
      });
      schedulePoll();
      committer.wake();
    },
    /**
     * Stops claiming; waits up to `timeoutMs` (Infinity: as long as they run) for handlers, then
     * aborts and abandons the rest. Writes that cannot land (a full disk) are waited for only
     * until the same deadline (at least DRAIN_GRACE_MS): they stay in flight on disk, where boot
     * recovery finds them.
     */
    async stop(timeoutMs: number) {
      if (!running) return;
      const deadline = performance.now() + timeoutMs;
      running = false;
      actor.send({ type: 'STOP' });
      settingsSub?.unsubscribe();
      settingsSub = undefined;
      for (const timer of [pollTimer, delayedTimer]) if (timer !== undefined) clock.clearTimeout(timer);
      pollTimer = delayedTimer = undefined;
      delayedAt = null;
      const waiting = [...inflight.values()].filter((e) => !e.settled);
      if (waiting.length) {
        let timer: NodeJS.Timeout | undefined;
        const all = Promise.all(waiting.map((e) => e.finished));
        await (Number.isFinite(timeoutMs)
          ? Promise.race([all, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))])
          : all);
        clearTimeout(timer);
      }
      for (const entry of inflight.values()) {
        if (entry.settled) continue;
        // Abandoned: the row stays in flight on disk and goes back to pending at the next start,
        // marked so that recovery does not count this graceful stop as a crash.
        entry.settled = true;
        const { seq, token } = entry;
        committer.enqueue({ kind: 'transition', run: () => repo.markAbandoned(seq, token) });
        abort(entry, new SpoolError('STOPPED', 'The spool stopped before this handler finished'));
        entry.actor?.stop();
        inflight.delete(entry.seq);
        release(entry.pool);
      }
      await committer.drain(Math.max(DRAIN_GRACE_MS, deadline - performance.now()));
      if (deadlineTimer !== undefined) clock.clearTimeout(deadlineTimer);
      deadlineTimer = undefined;
      deadlineAt = null;
      applyReleases();
      committer.setHook(undefined);
    },
    /** A local send of ready rows is about to be queued: claim in the same group transaction. */
    noteSending(queue: string) {
      knownQueues.add(queue);
      if (!running) return;
      hot.add(queue);
      committer.wake();
    },
    /** Marks a queue as possibly holding ready rows (a local send) and asks for a claim. */
    noteSent(queue: string, delayedUntil: number | null) {
      knownQueues.add(queue);
      if (!running) return;
      if (delayedUntil !== null) return armDelayed(delayedUntil);
      hot.add(queue);
      committer.wake();
    },
    /** Pool limits and active counts, as the public stats() shows them. */
    pools() {
      applyReleases();
      const { pools } = actor.getSnapshot().context;
      const byQueue: Record<string, { concurrency: number; active: number }> = {};
      for (const [key, pool] of Object.entries(pools)) if (key !== DEFAULT_POOL) byQueue[key] = { ...pool };
      return { default: { ...pools[DEFAULT_POOL]! }, byQueue };
    },
    get running() {
      return running;
    },
    /** Ends the supervisor actor and every timer, whatever state it was left in. */
    dispose() {
      running = false;
      settingsSub?.unsubscribe();
      settingsSub = undefined;
      for (const timer of [pollTimer, delayedTimer, deadlineTimer]) if (timer !== undefined) clock.clearTimeout(timer);
      pollTimer = delayedTimer = deadlineTimer = undefined;
      delayedAt = deadlineAt = null;
      committer.setHook(undefined);
      actor.stop();
    },
  };
}

/** The supervisor runtime's type. */
export type SupervisorRuntime = ReturnType<typeof createSupervisor>;
