/**
 * The supervisor runtime: wires its parts and owns their lifecycle.
 * - pools.ts      the supervisor machine's pool accounting (limits, active counts, routes)
 * - claim.ts      picking ready rows into free slots inside the group transaction
 * - executor.ts   launching claimed messages as live actors and running their handlers
 * - settle.ts     committing each outcome, fenced on the lease token, then announcing it
 * - leases.ts     the in-flight registry and the one timer for the nearest handler deadline
 * - timers.ts     the timer for the nearest delayed row, and the safety poll
 * - recovery.ts   boot recovery of in-flight rows
 * - control.ts    rate limits, time budgets and pushback: how many each queue may start now
 * - ../schedules/runner.ts  firing durable schedules (their ticks' messages)
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
import { monotonicNow } from '../clock.js';
import { SpoolError } from '../errors.js';
import { createScheduleRunner } from '../schedules/runner.js';
import { createClaimer } from './claim.js';
import { createControl } from './control.js';
import { createExecutor } from './executor.js';
import { createLeases } from './leases.js';
import { createPools } from './pools.js';
import { createQueueTracker } from './queues.js';
import { recover, recoverAbandoned } from './recovery.js';
import { createSettler } from './settle.js';
import { createRuntimeTimers } from './timers.js';
import { createAnnouncer, type ClaimResult, type SupervisorDeps } from './types.js';

export type { Inspect, SupervisorDeps } from './types.js';

/** The least time stop() gives queued settles to land, even when handlers used up the timeout. */
export const DRAIN_GRACE_MS = 500;

/** Creates the supervisor runtime (stopped). */
export function createSupervisor(deps: SupervisorDeps) {
  const { repo, committer, clock, events, settings, consumers } = deps;
  const announce = createAnnouncer(events);
  const pools = createPools(settings.get(), deps.inspect);
  const queues = createQueueTracker();
  let running = false;
  /**
   * Rows whose handler a stop abandoned and which still runs in this process: seq → its lease
   * token and handler deadline (monotonic; null: no timeoutMs). Past the deadline the row is
   * recovered even if the handler never returns, as `timeoutMs` would have ended it.
   */
  const abandoned = new Map<number, { token: string; deadline: number | null }>();
  /** Recovers an abandoned row (its handler returned, or its deadline passed) if still ours. */
  function releaseAbandoned(seq: number, token: string) {
    if (abandoned.get(seq)?.token !== token) return;
    abandoned.delete(seq);
    if (!running) {
      // Returned while stopped (or stopping): marked abandoned again, so that the next start
      // recovers it without counting a crash (its mark was taken back at the last start).
      committer.enqueue({ kind: 'transition', run: () => repo.markAbandoned(seq, token) });
      return;
    }
    recoverAbandoned(deps, claimer, announce, seq, token, (queue) => {
      if (queue !== undefined) queues.heat(queue);
      committer.wake();
    });
  }
  /** Abandoned rows whose handler deadline passed: the poll recovers them. */
  function releaseOverdue() {
    const now = monotonicNow(clock);
    for (const [seq, a] of abandoned) if (a.deadline !== null && a.deadline <= now) releaseAbandoned(seq, a.token);
  }
  let settingsSub: { unsubscribe(): void } | undefined;

  const timers = createRuntimeTimers(clock, {
    pollIntervalMs: () => settings.get().processor.pollIntervalMs,
    due: () => committer.wake(),
    leaseDue: () => expireLeases(),
    poll() {
      // Also catches a deleted database on an idle spool, which commits nothing to notice it by.
      if (!committer.verify()) return;
      releaseOverdue();
      try {
        // Schedules other processes (or the CLI) changed.
        scheduler.refresh();
        settings.refresh();
        refreshQueues();
        // Delayed rows other processes wrote: the one query per poll that finds them.
        claimer.refreshDelayed();
        // Pull leases of consumers anywhere (another process, one that died): the owner returns them.
        const leaseAt = repo.nextLeaseExpiry();
        if (leaseAt !== null) timers.leaseAt(leaseAt);
      } catch (error) {
        events.emit({ type: 'error', code: 'STORAGE_ERROR', message: `Poll failed: ${(error as Error).message}`, at: clock.now() });
      }
      committer.wake();
    },
  });
  /** True from a failed pass of the lease-expiry timer until one succeeds. */
  let expiryFailing = false;
  const leases = createLeases(clock, (entry) => {
    const error = new SpoolError('TIMEOUT', `The handler of ${entry.queue} ran past its timeoutMs`);
    settler.settle(entry, { kind: 'fail', error: { code: 'TIMEOUT', message: error.message } });
    leases.abort(entry, error);
  });
  const settler = createSettler(deps, {
    leases,
    announce,
    release(entry) {
      control.ended(entry.queue, entry.seq);
      pools.release(entry.pool);
      if (running) committer.wake();
    },
    retryAt(queue, visibleAt, now) {
      queues.heat(queue);
      if (visibleAt <= now) deps.ready(queue);
      if (visibleAt > now) claimer.knowDelayed(visibleAt);
      // A retry due now (zero backoff, jitter drawing 0, RetryAfterError(0)): its queue became
      // hot only after this tick's claim ran, so ask for another claim rather than the poll.
      else committer.wake();
    },
    pushback: (queue, ms) => control.pushback(queue, ms),
  });
  const control = createControl(clock, settings, () => {
    if (running) committer.wake();
    // Pull hand-outs pass the gate after a stop() too: a waiter it held back must hear the window open.
    deps.released();
  });
  const claimer = createClaimer(deps, pools, queues, () => running && !committer.lost, (at) => timers.delayedAt(at), control.gate);
  const executor = createExecutor(deps, { pools, leases, settler, announce });
  const scheduler = createScheduleRunner({
    ...deps,
    sent(queue) {
      // As a local send of ready rows: the claim picks them up now.
      queues.heat(queue);
      if (running) committer.wake();
    },
  });

  /** After a claim's commit, before any handler runs: count its starts and their busy time. */
  function claimed(result: ClaimResult | null) {
    if (!result) return;
    for (const { entry } of result.claimed) {
      control.gate.recordStarts(entry.queue, 1);
      control.began(entry.queue, entry.seq);
    }
  }

  /** Returns pull leases that ran out, then arms the timer for the next one. */
  function expireLeases() {
    if (!running) return;
    deps.expireLeases().then(
      () => {
        expiryFailing = false;
        if (!running) return;
        claimer.refreshDelayed();
        const next = repo.nextLeaseExpiry();
        if (next !== null) timers.leaseAt(next);
      },
      // The poll arms the timer again. Said once per failure episode: leases that cannot be
      // returned hold their messages until it ends.
      (error: unknown) => {
        if (expiryFailing || !running) return;
        expiryFailing = true;
        const code = error instanceof SpoolError ? error.code : 'STORAGE_ERROR';
        events.emit({ type: 'error', code, message: `Could not return pull leases that ran out: ${(error as Error).message}`, at: clock.now() });
      },
    );
  }

  function refreshQueues() {
    for (const name of repo.queueNames()) queues.know(name);
    for (const name of consumers.keys()) queues.know(name);
    queues.heatAll();
  }

  return {
    actor: pools.actor,
    /** Recovery, then claiming. */
    start() {
      if (running) return;
      // A row whose abandoned handler still runs here stays in flight, up to its deadline.
      const now = monotonicNow(clock);
      const stillRunning = new Map<number, string>();
      for (const [seq, a] of abandoned) if (a.deadline === null || a.deadline > now) stillRunning.set(seq, a.token);
      recover(deps, claimer, announce, stillRunning);
      refreshQueues();
      running = true;
      timers.startPoll();
      // Ticks at or before this start fell due while no started spool ran: missed ticks.
      scheduler.start(clock.now());
      claimer.refreshDelayed();
      const leaseAt = repo.nextLeaseExpiry();
      if (leaseAt !== null) timers.leaseAt(leaseAt);
      pools.configure(settings.get());
      pools.start();
      settingsSub = settings.settings$.subscribe((next) => {
        pools.configure(next);
        for (const name of Object.keys(next.queues)) queues.know(name);
        queues.heatAll();
        timers.pollIntervalChanged();
        committer.wake();
      });
      committer.setHook({
        plan: claimer.plan,
        run: claimer.claim as (plan: unknown) => unknown,
        committed: (r) => {
          claimer.committed();
          claimed(r as ClaimResult | null);
          executor.claimed(r as ClaimResult | null);
        },
        failed: (error) => {
          // The claim rolled back: forget what it learnt about empty queues, and report it.
          queues.heatAll();
          events.emit({ type: 'error', code: error.code, message: `Claim failed, retrying: ${error.message}`, at: clock.now() });
        },
      });
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
      scheduler.stop();
      control.clearTimer();
      pools.stop();
      settingsSub?.unsubscribe();
      settingsSub = undefined;
      timers.clear();
      const waiting = leases.held();
      if (waiting.length) {
        let timer: NodeJS.Timeout | undefined;
        const all = Promise.all(waiting.map((e) => e.finished));
        await (Number.isFinite(timeoutMs)
          ? Promise.race([all, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))])
          : all);
        clearTimeout(timer);
      }
      for (const entry of leases.held()) {
        // Abandoned: the row stays in flight on disk and goes back to pending at the next start,
        // marked so that recovery does not count this graceful stop as a crash. While its
        // handler still runs here, a start() in this process leaves the row in flight (no second
        // run beside it, nor its group's next message); it is recovered when the handler returns.
        entry.settled = true;
        const { seq, token } = entry;
        abandoned.set(seq, { token, deadline: entry.deadline });
        void entry.finished.then(() => releaseAbandoned(seq, token));
        leases.abort(entry, new SpoolError('STOPPED', 'The spool stopped before this handler finished'));
        entry.actor?.stop();
        leases.delete(entry);
        control.ended(entry.queue, entry.seq);
        pools.release(entry.pool);
      }
      // Marked on disk: these, and rows held since an earlier stop (they lost their mark at that
      // start, so that a crash while held counts one), are abandoned, not crashed.
      for (const [seq, held] of abandoned) {
        committer.enqueue({ kind: 'transition', run: () => repo.markAbandoned(seq, held.token) });
      }
      await committer.drain(Math.max(DRAIN_GRACE_MS, deadline - performance.now()));
      leases.clearTimer();
      pools.applyReleases();
      committer.setHook(undefined);
    },
    /** A local send of ready rows is about to be queued: claim in the same group transaction. */
    noteSending(queue: string) {
      queues.know(queue);
      if (!running) return;
      queues.heat(queue);
      committer.wake();
    },
    /** Marks a queue as possibly holding ready rows (a local send) and asks for a claim. */
    noteSent(queue: string, delayedUntil: number | null) {
      queues.know(queue);
      if (!running) return;
      if (delayedUntil !== null) return claimer.knowDelayed(delayedUntil);
      queues.heat(queue);
      committer.wake();
    },
    /** A pull lease of this handle runs out at `at`: return it then if nobody else has. */
    leaseAt(at: number) {
      timers.leaseAt(at);
    },
    /** Pool limits and active counts, as the public stats() shows them. */
    pools: () => pools.view(),
    /** Load control of the queues that have any (stats().control); `queues` adds names to resolve. */
    control: (names: Iterable<string>) => control.view(names),
    /** The load-control gate, for consumers other than the claim (pull hand-outs). */
    gate: control.gate,
    /** A schedule changed through this handle: re-arm the schedule timer now. */
    schedulesChanged: () => scheduler.refresh(),
    get running() {
      return running;
    },
    /** Ends the supervisor actor and every timer, whatever state it was left in. */
    dispose() {
      running = false;
      scheduler.stop();
      control.clearTimer();
      settingsSub?.unsubscribe();
      settingsSub = undefined;
      timers.clear();
      leases.clearTimer();
      committer.setHook(undefined);
      pools.dispose();
    },
  };
}

/** The supervisor runtime's type. */
export type SupervisorRuntime = ReturnType<typeof createSupervisor>;
