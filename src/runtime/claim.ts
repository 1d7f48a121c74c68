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
import type { QueueTracker, UnclaimedRows } from './queues.js';
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
  /** `PRAGMA data_version` when a claim last read or reused `unclaimed` (see chooseAmong). */
  let seenVersion: number | undefined;
  /** This claim compared it already. */
  let versionChecked = false;
  /** A claim ran and its commit was not reported (`committed`): it may have rolled back. */
  let unconfirmed = false;

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
    // The last claim's commit was not reported (the group rolled back: a busy file, a failed
    // write): the queues it cooled and the rows it took from `unclaimed` may be pending still.
    if (unconfirmed) {
      unconfirmed = false;
      queues.heatAll();
    }
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
        queues.unclaimed.delete(queue);
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
    unconfirmed = true;
    versionChecked = false;
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

  /** Claim order: priority (highest first), then visible-at, then send order (seq). */
  const order = (a: MessageRow, b: MessageRow) => b.priority - a.priority || a.visibleAt - b.visibleAt || a.seq - b.seq;

  /**
   * The best `want` rows across `members`, in priority, visible-at, send order, at most each
   * queue's cap: a queue held back by its limit leaves its share to the others of the pool.
   */
  function choose(members: string[], want: number): MessageRow[] {
    if (members.length === 1) {
      const queue = members[0]!;
      // Read afresh: rows it left at an earlier claim would no longer be known to be all it has.
      queues.unclaimed.delete(queue);
      const limit = capOf(queue, want);
      const rows = repo.candidates(queue, limit);
      if (rows.length < limit) queues.hot.delete(queue);
      return rows;
    }
    return chooseAmong(members, want, true) ?? chooseAmong(members, want, false)!;
  }

  /**
   * `choose` over several queues. With `reuse`, a queue's candidates come from the rows an earlier
   * claim read and left (queues.unclaimed) when they suffice, instead of a query per queue: the
   * best rows of a pool are then found in one pass over what is known, and only queues whose
   * known rows ran short are read. A reused row is taken only if it is still a candidate exactly
   * as read; when one is not (a writer of this process that heats nothing took or changed it),
   * the members' rows are forgotten and null returned, and the caller reads them all afresh.
   */
  function chooseAmong(members: string[], want: number, reuse: boolean): MessageRow[] | null {
    if (!versionChecked) {
      versionChecked = true;
      // Another connection committed since: the rows earlier claims left may have moved on, and
      // others may have come, so every queue is read afresh. (Read only here, where `unclaimed`
      // is read or filled: a claim from one queue costs no more than before.)
      const version = repo.dataVersion();
      if (version !== seenVersion) {
        queues.unclaimed.clear();
        seenVersion = version;
      }
    }
    const offers: { queue: string; left: UnclaimedRows | undefined }[] = [];
    const reused = new Set<string>();
    // The best `want` rows so far, in claim order (want is at most the pool's free slots).
    const best: MessageRow[] = [];
    for (const queue of members) {
      const limit = capOf(queue, want);
      let left = reuse ? queues.unclaimed.get(queue) : undefined;
      let rows: MessageRow[];
      if (left !== undefined && limit >= 1 && (left.complete || left.rows.length >= limit)) {
        reused.add(queue);
        rows = left.rows;
      } else {
        rows = repo.candidates(queue, limit);
        left = limit >= 1 ? { rows, complete: rows.length < limit } : undefined;
        if (left) queues.unclaimed.set(queue, left);
        else queues.unclaimed.delete(queue);
      }
      const n = left ? Math.min(limit, rows.length) : rows.length;
      offers.push({ queue, left });
      for (let i = 0; i < n; i++) {
        const row = rows[i]!;
        // Each queue's rows come in claim order: once one misses the best, so do the rest.
        if (best.length >= want && order(row, best[best.length - 1]!) > 0) break;
        let at = best.length;
        while (at > 0 && order(row, best[at - 1]!) < 0) at--;
        best.splice(at, 0, row);
        if (best.length > want) best.pop();
      }
    }
    if (reused.size > 0) {
      for (const row of best) {
        if (!reused.has(row.queue) || same(repo.candidate(row.seq), row)) continue;
        for (const queue of members) queues.unclaimed.delete(queue);
        return null;
      }
    }
    const taken = new Map<string, number>();
    for (const row of best) taken.set(row.queue, (taken.get(row.queue) ?? 0) + 1);
    for (const { queue, left } of offers) {
      const k = taken.get(queue) ?? 0;
      // A cap below one (never kept in `unclaimed`): it stays hot, as the query's short answer proves nothing.
      if (left === undefined) continue;
      if (k > 0) left.rows = left.rows.slice(k);
      // Cooled only when known to have no candidates left.
      if (left.complete && left.rows.length === 0) {
        queues.hot.delete(queue);
        queues.unclaimed.delete(queue);
      }
    }
    return best;
  }

  /** Whether `now` (a row read again) is `then` (the row as first read), column for column. */
  function same(now: MessageRow | undefined, then: MessageRow): boolean {
    if (now === undefined) return false;
    for (const key of Object.keys(now) as (keyof MessageRow)[]) if (now[key] !== then[key]) return false;
    return true;
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

  /** The last claim's group transaction committed. */
  function committed() {
    unconfirmed = false;
  }

  return { plan, claim, committed, corrupt, knowDelayed, refreshDelayed };
}

/** The claim's type. */
export type Claimer = ReturnType<typeof createClaimer>;
