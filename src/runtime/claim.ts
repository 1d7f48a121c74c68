/**
 * The claim: inside the group transaction, picks the best ready rows per pool (priority, then
 * visible-at, then send order), up to each pool's free slots and `processor.batchSize` overall,
 * and moves each pending → activating → processing in that one commit, every step computed by the
 * machine. Rows that cannot run settle at once: no consumer (→ dead, or done with
 * `noConsumer: 'delete'`) and unreadable rows (→ dead with CORRUPT_ROW).
 */
import { randomBytes } from 'node:crypto';
import type { StoredError } from '../../machines/message.machine.js';
import { compiledMessageMachine as machine, type MessageMachineState } from '../../machines/compiled.js';
import { monotonicNow } from '../clock.js';
import type { MessageRow } from '../db/repository.js';
import { policyFor } from '../settings/schema.js';
import type { ControlGate } from './control.js';
import { rowState, scheduledFields, transitionRow } from './message-codec.js';
import { deadLetterCorrupt } from './transitions.js';
import type { Pools } from './pools.js';
import type { QueueTracker } from './queues.js';
import type { ClaimResult, Inflight, SupervisorDeps } from './types.js';

/** What a claim will query: per pool, the queues to take from and how many at most. */
export interface ClaimPlan {
  now: number;
  /** Delayed rows are due: promote them first. */
  promote: boolean;
  byPool: Map<string, string[]>;
  free: Record<string, number>;
}

/**
 * Creates the claim over the runtime's parts; `active()` says whether claiming is allowed now,
 * `delayedAt(at)` is told the nearest delayed row's time (to arm its timer), and `gate` (load
 * control: rate limits, budgets, pushback) caps how many each queue may start.
 */
export function createClaimer(
  deps: SupervisorDeps,
  pools: Pools,
  queues: QueueTracker,
  active: () => boolean,
  delayedAt: (at: number) => void,
  gate?: ControlGate,
) {
  const { repo, clock, settings, consumers } = deps;
  /**
   * The earliest visible-at among delayed rows that this process knows of (null: none). Kept in
   * memory so that a claim queries delayed rows only when one is due, not on every commit: local
   * delays and retries report theirs, and the poll reads the table for other processes' rows.
   */
  let nextDelayed: number | null = null;
  // A push claim's lease token never leaves this process: 96 random bits per claimer, then a
  // count, fence as well as a random UUID per claim, which cost ~2 µs a claim (and 36 bytes a row).
  const tokenPrefix = `${randomBytes(12).toString('base64url')}.`;
  let tokens = 0;

  function knowDelayed(at: number) {
    if (nextDelayed !== null && nextDelayed <= at) return;
    nextDelayed = at;
    delayedAt(at);
  }

  /** Re-reads the nearest delayed row (at start, on each poll, after a promotion). */
  function refreshDelayed() {
    nextDelayed = repo.nextDelayedAt();
    if (nextDelayed !== null) delayedAt(nextDelayed);
  }

  /**
   * Outside the transaction: what a claim would do now, or null when it would do nothing (no
   * due delayed row, no ready queue with a free slot), so that most commits skip the claim and
   * its savepoint entirely.
   */
  function plan(): ClaimPlan | null {
    const next = active() ? planNow() : null;
    // No claim, so no claim's commit will send the pending releases (executor.claimed): send
    // them now. (A claim that fails, or waits on a busy database, leaves them pending for the
    // next plan, which counts them as free again: the snapshot is behind until then.)
    if (next === null) pools.applyReleases();
    return next;
  }

  function planNow(): ClaimPlan | null {
    const now = clock.now();
    const promote = nextDelayed !== null && nextDelayed <= now;
    // Read only when a hot queue is unpaused: a send to a paused queue (or one another process
    // consumes) asks for a plan on every commit, and most such plans stop before the pools.
    let free: Record<string, number> | undefined;
    const slots = () => (free ??= pools.freeSlots());
    const byPool = readyByPool(slots);
    return promote || byPool.size > 0 ? { now, promote, byPool, free: slots() } : null;
  }

  /** The hot, unpaused queues whose pool has a free slot (`slots()`), grouped by pool. */
  function readyByPool(slots: () => Record<string, number>): Map<string, string[]> {
    const ctx = pools.context();
    const byPool = new Map<string, string[]>();
    for (const queue of queues.hot) {
      if (ctx.paused[queue]) continue;
      // A queue that queues.create made is consumed by pull unless it has a handler, and so is
      // every queue without a handler under noConsumer 'keep': the push runtime never claims it
      // (and never dead-letters its messages as NO_CONSUMER).
      if (!consumers.has(queue) && (deps.directory.isSqs(queue) || settings.get().noConsumer === 'keep')) {
        queues.hot.delete(queue);
        continue;
      }
      const pool = pools.poolOf(queue);
      if ((slots()[pool] ?? 0) <= 0) continue;
      // Held back by its load control: it stays hot, and the gate armed a wake-up for it.
      if (gate && gate.allowance(queue) <= 0) continue;
      let list = byPool.get(pool);
      if (!list) byPool.set(pool, (list = []));
      list.push(queue);
    }
    return byPool;
  }

  /** Inside the group transaction (in its own savepoint): promotes due rows and claims. */
  function claim(p: ClaimPlan): ClaimResult {
    const { now, free } = p;
    let byPool = p.byPool;
    if (p.promote) {
      const promoted = repo.promoteDue(now);
      nextDelayed = repo.nextDelayedAt();
      if (nextDelayed !== null) delayedAt(nextDelayed);
      if (promoted.size > 0) {
        for (const queue of promoted) queues.heat(queue);
        // Newly ready queues join the plan (their pools' free slots are already known).
        byPool = readyByPool(() => free);
      }
    }
    const result: ClaimResult = { claimed: [], dispositions: [], capped: false };
    let budget = settings.get().processor.batchSize;
    for (const [pool, members] of byPool) {
      if (budget <= 0) {
        result.capped = true;
        break;
      }
      const want = Math.min(free[pool] ?? 0, budget);
      const chosen = choose(members, want);
      budget -= chosen.length;
      if (budget <= 0) result.capped = true;
      for (const row of chosen) claimRow(row, pool, now, result);
    }
    return result;
  }

  /** How many rows of `queue` a claim may take of `want`: its load control may allow fewer. */
  function capOf(queue: string, want: number): number {
    return gate ? Math.min(want, gate.allowance(queue)) : want;
  }

  /**
   * The best `want` rows across `members`, in priority, visible-at, send order, at most each
   * queue's cap: a queue held back by its limit leaves its share to the others of the pool.
   */
  function choose(members: string[], want: number): MessageRow[] {
    if (members.length === 1) {
      const limit = capOf(members[0]!, want);
      const rows = repo.candidates(members[0]!, limit);
      if (rows.length < limit) queues.hot.delete(members[0]!);
      return rows;
    }
    const all: MessageRow[] = [];
    const fetched = new Map<string, number>();
    const limits = new Map<string, number>();
    for (const queue of members) {
      const limit = capOf(queue, want);
      const rows = repo.candidates(queue, limit);
      fetched.set(queue, rows.length);
      limits.set(queue, limit);
      all.push(...rows);
    }
    all.sort((a, b) => b.priority - a.priority || a.visibleAt - b.visibleAt || a.seq - b.seq);
    const chosen = all.slice(0, want);
    const taken = new Map<string, number>();
    for (const row of chosen) taken.set(row.queue, (taken.get(row.queue) ?? 0) + 1);
    for (const [queue, n] of fetched) if (n < limits.get(queue)! && (taken.get(queue) ?? 0) === n) queues.hot.delete(queue);
    return chosen;
  }

  function claimRow(row: MessageRow, pool: string, now: number, result: ClaimResult) {
    let pending: MessageMachineState;
    let payload: unknown;
    try {
      pending = rowState(row);
      payload = JSON.parse(row.payload);
    } catch (error) {
      return corrupt(row, error, now, result);
    }
    const policy = policyFor(settings.get(), row.queue);
    const activating = machine.step(pending, { type: 'CLAIM', at: now });
    if (!consumers.has(row.queue)) {
      const error: StoredError = { code: 'NO_CONSUMER', message: `No consumer is registered for queue "${row.queue}"` };
      const drop = settings.get().noConsumer === 'delete';
      const next = machine.step(activating, drop ? { type: 'DROP', at: now } : { type: 'REJECT', at: now, error });
      const ok = drop
        ? repo.remove(row.seq, row.queue, 'pending', null, row.grp, { to: next.value, attempt: next.context.attempt, at: now, reason: 'deleted' })
        : repo.write(transitionRow(row, { state: 'pending', token: null }, next, { token: null, owner: null }, now, { code: error.code, via: 'activating' }));
      if (ok) settledAtClaim(row, result, { row, to: next.value, attempt: next.context.attempt, error });
      return;
    }
    // The row keeps the wall-clock deadline (other processes read it); this process times the
    // handler on the monotonic clock, so an NTP step back cannot stretch a 300 ms timeout by hours.
    const leaseExpiresAt = policy.timeoutMs === null ? null : now + policy.timeoutMs;
    const deadline = policy.timeoutMs === null ? null : monotonicNow(clock) + policy.timeoutMs;
    const processing = machine.step(activating, { type: 'START', at: now, leaseExpiresAt });
    const token = tokenPrefix + (++tokens).toString(36);
    const ok = repo.write(transitionRow(row, { state: 'pending', token: null }, processing, { token, owner: null }, now, { via: 'activating', handedOut: true }));
    if (!ok) return;
    const ctx = processing.context;
    const entry: Inflight = {
      seq: row.seq,
      id: row.id,
      queue: row.queue,
      grp: row.grp,
      pool,
      token,
      state: processing,
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
    if (row.schedule !== null) Object.assign(entry.message, scheduledFields(row));
    result.claimed.push({ row, entry });
  }

  /** A row whose state or payload cannot be read goes to dead with CORRUPT_ROW. */
  function corrupt(row: MessageRow, cause: unknown, now: number, result: ClaimResult | null): boolean {
    const done = deadLetterCorrupt(repo, row, cause, now);
    if (done && result) settledAtClaim(row, result, { row, to: 'dead', attempt: done.dead.context.attempt, error: done.error });
    return done !== undefined;
  }

  /**
   * A row the claim finished without a handler. Its group's next message heads the group now:
   * its queue is hot again (the candidate query that found this head may have cooled it), so the
   * claim that follows this commit finds it, rather than the next poll.
   */
  function settledAtClaim(row: MessageRow, result: ClaimResult, disposition: ClaimResult['dispositions'][number]) {
    result.dispositions.push(disposition);
    if (row.grp !== null) queues.heat(row.queue);
  }

  return { plan, claim, corrupt, knowDelayed, refreshDelayed };
}

/** The claim's type. */
export type Claimer = ReturnType<typeof createClaimer>;
