/**
 * Load control per queue, in memory: the live dials that decide how much a queue may run, on top of
 * its executor pool's concurrency.
 * - `rateLimit` { max, perMs }: at most `max` starts (push handler starts, pull hand-outs) in any
 *   rolling `perMs` window. Exact: a start is allowed only while the window holds fewer than `max`.
 * - `budget` { busyMs, perMs }: the queue claims nothing while its handlers' summed busy time in the
 *   rolling `perMs` window is at or above `busyMs`. Running handlers are never aborted for it, so a
 *   window can exceed `busyMs` by what the handlers already running when it ran out still spend.
 * - pushback: a handler's `RateLimitError(ms)` pauses its whole queue for `ms`, in memory only (a
 *   restart ends it).
 *
 * The gate is two questions, asked by the claim and (issue 12) by pull hand-outs alike: "how many
 * more may this queue hand out now?" (`allowance`) and "k started now" (`recordStarts`). A queue
 * held back arms one wake-up for the moment it may run again, so it never waits for the poll, and a
 * queue held back never holds back another queue of the same pool (the claim asks per queue).
 * Windows run on the monotonic clock: an NTP step of the wall clock cannot open or close them.
 */
import { MAX_TIMER_MS, monotonicNow, type Clock, type TimerHandle } from '../clock.js';
import { policyFor, type QueueBudget, type QueueRateLimit, type Settings } from '../settings/schema.js';
import { BusyWindow, StartWindow } from './windows.js';

/** Why a queue is held back now. */
export type LimitedBy = 'rate' | 'budget' | 'pushback' | null;

/** A queue's load control as `stats().control[queue]` shows it. */
export interface QueueControlStats {
  /** What holds the queue back now: its rate limit, its budget, a handler's RateLimitError, or nothing. */
  limitedBy: LimitedBy;
  /** Busy time over the last window (the budget's perMs, else the rate limit's), as a fraction of one worker. */
  busyFraction: number;
  /** Handler starts in the last window (the rate limit's perMs, else the budget's). */
  startsInWindow: number;
  /** While paused by a RateLimitError: until when (epoch ms). */
  pausedUntil?: number;
}

/** The question a consumer asks before it hands out messages of a queue, and the answer it reports. */
export interface ControlGate {
  /**
   * How many more messages of `queue` may start now: Infinity without a limit, 0 while it is held
   * back (a wake-up is then armed for the moment it may start again).
   */
  allowance(queue: string): number;
  /** `count` messages of `queue` were handed out now (counted against its rate limit). */
  recordStarts(queue: string, count: number): void;
}

interface QueueLimits {
  rate: QueueRateLimit | null;
  budget: QueueBudget | null;
}

interface QueueState {
  starts: StartWindow;
  busy: BusyWindow;
  /** Monotonic ms until which a RateLimitError pauses the queue. */
  pausedUntil: number;
  /** Cached budget verdict: held back until this monotonic time (null: until a handler ends). */
  budgetUntil: number | null | undefined;
  budgetFor: QueueBudget | undefined;
}

const NO_LIMITS: QueueLimits = { rate: null, budget: null };

/**
 * Creates the control; `wake()` asks for a claim, when a held-back queue may start again. It keeps
 * one timer, for the nearest such moment across all queues.
 */
export function createControl(clock: Clock, settings: { get(): Settings }, wakeUp: () => void) {
  const states = new Map<string, QueueState>();
  let cachedFor: Settings | undefined;
  let cache = new Map<string, QueueLimits>();
  /** True when some queue may have a limit under the current settings (the hot path skips all else). */
  let configured = false;
  /** The latest end of any pushback pause (monotonic ms). */
  let pausedUntilMax = -Infinity;

  function limits(queue: string): QueueLimits {
    const s = settings.get();
    if (s !== cachedFor) {
      cachedFor = s;
      cache = new Map();
      configured = s.queueDefaults.rateLimit !== null || s.queueDefaults.budget !== null || Object.values(s.queues).some((q) => q.rateLimit || q.budget);
    }
    if (!configured) return NO_LIMITS;
    let found = cache.get(queue);
    if (!found) {
      const policy = policyFor(s, queue);
      found = { rate: policy.rateLimit, budget: policy.budget };
      cache.set(queue, found);
    }
    return found;
  }

  function state(queue: string): QueueState {
    let st = states.get(queue);
    if (!st) states.set(queue, (st = { starts: new StartWindow(), busy: new BusyWindow(), pausedUntil: -Infinity, budgetUntil: undefined, budgetFor: undefined }));
    return st;
  }

  let timer: TimerHandle | undefined;
  /** When the armed timer fires (monotonic ms). */
  let timerAt = Infinity;

  /** Arms the wake-up for monotonic time `at`, unless an earlier one is armed. */
  function wake(at: number, now: number) {
    if (timer !== undefined && timerAt <= at) return;
    if (timer !== undefined) clock.clearTimeout(timer);
    timerAt = at;
    timer = clock.setTimeout(() => {
      timer = undefined;
      timerAt = Infinity;
      wakeUp();
    }, Math.min(MAX_TIMER_MS, Math.max(0, at - now)));
  }

  /** Whether the budget holds `queue` back at `now`; arms the wake-up when it does. */
  function budgetHolds(st: QueueState, budget: QueueBudget, now: number): boolean {
    if (st.budgetFor !== budget) {
      st.budgetFor = budget;
      st.budgetUntil = undefined;
    }
    if (st.budgetUntil === undefined || (st.budgetUntil !== null && st.budgetUntil <= now)) {
      st.budgetUntil = st.busy.busy(now, budget.perMs) < budget.busyMs ? undefined : st.busy.nextBelow(now, budget.busyMs, budget.perMs);
      if (st.budgetUntil === undefined) return false;
    }
    if (st.budgetUntil !== null) wake(st.budgetUntil, now);
    return true;
  }

  const gate: ControlGate = {
    allowance(queue) {
      const { rate, budget } = limits(queue);
      // The hot path: no limit here and no pause anywhere.
      if (rate === null && budget === null && pausedUntilMax === -Infinity) return Infinity;
      const now = monotonicNow(clock);
      if (pausedUntilMax <= now) pausedUntilMax = -Infinity;
      const st = states.get(queue);
      if (st !== undefined && st.pausedUntil > now) {
        wake(st.pausedUntil, now);
        return 0;
      }
      if (rate === null && budget === null) return Infinity;
      const s = st ?? state(queue);
      if (budget !== null && budgetHolds(s, budget, now)) return 0;
      if (rate === null) return Infinity;
      const allowed = s.starts.allowance(now, rate.max, rate.perMs);
      if (allowed === 0) wake(s.starts.nextAllowedAt(now, rate.max, rate.perMs), now);
      return allowed;
    },
    recordStarts(queue, count) {
      const { rate, budget } = limits(queue);
      if (rate === null && budget === null) return;
      const now = monotonicNow(clock);
      const { starts } = state(queue);
      starts.record(now, count);
      // Under a budget alone no claim prunes this window, so it is pruned here: it holds one
      // window's starts, as the busy window does, never every start since.
      if (rate === null) starts.prune(now, budget!.perMs, 0);
    },
  };

  return {
    gate,
    /** A push handler of `queue` took its slot (key: its seq, unique among messages in flight). */
    began(queue: string, key: unknown) {
      const { rate, budget } = limits(queue);
      if (rate === null && budget === null) return;
      const st = state(queue);
      st.busy.begin(key, monotonicNow(clock));
      st.budgetUntil = undefined;
    },
    /** The handler of `key` gave its slot back (settled, timed out, abandoned). */
    ended(queue: string, key: unknown) {
      const st = states.get(queue);
      if (!st) return;
      const { rate, budget } = limits(queue);
      // A queue that lost its limits keeps no history: nothing will ask for it.
      st.busy.end(key, monotonicNow(clock), budget?.perMs ?? rate?.perMs ?? 0);
      // It ended earlier than the verdict assumed: the budget may free up sooner.
      st.budgetUntil = undefined;
    },
    /** A handler threw RateLimitError(ms): the whole queue pauses for `ms`. */
    pushback(queue: string, ms: number) {
      const now = monotonicNow(clock);
      const st = state(queue);
      st.pausedUntil = Math.max(st.pausedUntil, now + ms);
      pausedUntilMax = Math.max(pausedUntilMax, st.pausedUntil);
    },
    /** Clears the wake-up timer (stop, dispose); a later claim arms it again if needed. */
    clearTimer() {
      if (timer !== undefined) clock.clearTimeout(timer);
      timer = undefined;
      timerAt = Infinity;
    },
    /** The control of every queue that has a limit, a budget or a pause now (others are left out). */
    view(queues: Iterable<string>): Record<string, QueueControlStats> {
      const out: Record<string, QueueControlStats> = Object.create(null);
      const now = monotonicNow(clock);
      const names = new Set([...queues, ...states.keys()]);
      for (const queue of names) {
        const { rate, budget } = limits(queue);
        const st = states.get(queue);
        const paused = st !== undefined && st.pausedUntil > now;
        if (rate === null && budget === null && !paused) continue;
        const s = st ?? state(queue);
        const window = budget?.perMs ?? rate?.perMs;
        const limitedBy: LimitedBy = paused
          ? 'pushback'
          : budget !== null && s.busy.busy(now, budget.perMs) >= budget.busyMs
            ? 'budget'
            : rate !== null && s.starts.allowance(now, rate.max, rate.perMs) === 0
              ? 'rate'
              : null;
        out[queue] = {
          limitedBy,
          busyFraction: window === undefined ? 0 : s.busy.busy(now, window) / window,
          startsInWindow: s.starts.count(now, rate?.perMs ?? budget?.perMs ?? 0),
          ...(paused ? { pausedUntil: clock.now() + (s.pausedUntil - now) } : {}),
        };
      }
      return out;
    },
  };
}

/** The control's type. */
export type Control = ReturnType<typeof createControl>;
