/**
 * The pull primitive, beside the claim. A lease moves pending → activating → processing in one
 * commit, as a claim does (each step computed by the machine), writes a new lease token (the
 * receipt), the visibility deadline and the owner (the consumer), and counts a delivery. Every
 * later change to a leased message is fenced on its token: a stale receipt changes nothing.
 *
 * Expired leases come back here too, in the same commit as the next lease that finds them:
 * - on an SQS queue (made by `queues.create`) an expiry charges nothing (DEFER): SQS limits
 *   deliveries only through a redrive policy's maxReceiveCount, checked at hand-out;
 * - on any other queue it is a failed attempt (LEASE_EXPIRED) under maxAttempts and backoff.
 * A message that would be handed out past its queue's maxReceiveCount moves to the dead-letter
 * queue instead (CLAIM, REJECT with MAX_RECEIVES, then the move).
 */
import { randomUUID } from 'node:crypto';
import { compiledMessageMachine as machine, type MessageMachineState } from '../../machines/compiled.js';
import type { MessageEvent } from '../../machines/message.machine.js';
import { backoffDelay } from '../../machines/retry-policy.js';
import type { LeasedRow, MessageRow, Repository } from '../db/repository.js';
import { CANDIDATES_SQL } from '../db/repository.js';
import type { QueueDirectory } from '../queues/directory.js';
import { decodeAttributes, type MessageAttributes } from '../queues/message-attributes.js';
import { policyFor } from '../settings/schema.js';
import type { SettingsRuntime } from '../settings/store.js';
import type { CompiledWhere } from '../pull/where.js';
import type { ControlGate } from './control.js';
import { rowState, transitionRow } from './message-codec.js';
import { applyTransition, deadLetterCorrupt, type Announcement } from './transitions.js';

/** The `owner` of a pull lease: who holds it. */
export function pullOwner(consumerId: string): string {
  return `pull:${consumerId}`;
}

/** What one lease call asks for. */
export interface LeaseRequest {
  /** In preference order: an earlier queue's message wins over a later one's. */
  queues: readonly string[];
  /** Messages to take at most (owner mode: 1; SQS receive: 1–10). */
  max: number;
  owner: string;
  /** The lease (visibility timeout) for a message of `queue`, ms. */
  leaseMs(queue: string): number;
  where?: CompiledWhere;
  /** The owner's load control (rate limits, budgets, pushback), when this process owns the spool. */
  gate?: ControlGate;
}

/** A message handed out under a lease. */
export interface Leased {
  row: MessageRow;
  /** The committed `processing` state. */
  state: MessageMachineState;
  token: string;
  leaseExpiresAt: number;
  payload: unknown;
  /** The SQS message attributes, decoded. */
  attributes: MessageAttributes;
}

/** The deadline and token of a lease (the token starts with the hand-out time, base 36). */
export function handedOutAt(token: string): number | undefined {
  const at = Number.parseInt(token.slice(0, token.indexOf('.')), 36);
  return Number.isFinite(at) ? at : undefined;
}

/** Why a lease ended without its holder: it ran out, or it had no deadline (repository.ts). */
function expiryMessage(row: MessageRow): string {
  const holder = row.owner ?? 'a consumer';
  if (row.leaseExpiresAt === null) return `The lease of ${holder} had no deadline (lease_expires_at was NULL), so it counts as run out`;
  return `The lease of ${holder} ran out before it ended the message`;
}

/** Expired leases reclaimed per lease call, at most (the rest in later calls). */
const EXPIRE_BATCH = 100;

/** leaseRow's answer for a row it moved to the dead-letter queue instead of handing it out. */
const MOVED = Symbol('moved');

/** Creates the leaser over the repository, the settings and the queue directory. */
export function createLeaser(deps: { repo: Repository; settings: SettingsRuntime; directory: QueueDirectory; random: () => number }) {
  const { repo, settings, directory } = deps;

  /** The event an expired lease takes: free on an SQS queue, a failed attempt elsewhere. */
  function expiryEvent(row: MessageRow, state: MessageMachineState, now: number): MessageEvent {
    if (directory.isSqs(row.queue)) return { type: 'DEFER', at: now, retryAt: now };
    const policy = policyFor(settings.get(), row.queue);
    const delay = backoffDelay(policy.backoff, state.context.failures + 1, deps.random);
    return {
      type: 'FAIL',
      at: now,
      error: { code: 'LEASE_EXPIRED', message: expiryMessage(row) },
      maxAttempts: policy.maxAttempts,
      retryAt: now + delay,
    };
  }

  /**
   * Returns due pull leases to pending, of every queue: a waiter that left one due elsewhere would
   * find it due again at once, and spin. Logs each change.
   */
  function expireDue(now: number, log: Announcement[]): number {
    let expired = 0;
    for (const row of repo.expiredLeases(now, EXPIRE_BATCH)) {
      let state: MessageMachineState;
      try {
        state = rowState(row);
        // A lease is committed in processing; any other in-flight state was written by hand, and
        // the machine takes no expiry there.
        if (state.value !== 'processing') throw new Error(`the row is ${state.value} under a pull lease`);
      } catch (error) {
        // Skipped, it would come back first in every later call and hold up the leases behind it.
        if (corrupt(row, error, now, log)) expired += 1;
        continue;
      }
      if (applyTransition(repo, row, state, row.leaseToken, expiryEvent(row, state, now), now, log, directory.dlqOf)) expired += 1;
    }
    return expired;
  }

  /** An unreadable row goes to dead with CORRUPT_ROW (message.error says so); false when it moved on. */
  function corrupt(row: MessageRow, cause: unknown, now: number, log: Announcement[]): boolean {
    const done = deadLetterCorrupt(repo, row, cause, now);
    if (!done) return false;
    log.push({ kind: 'error', id: row.id, queue: row.queue, error: done.error });
    log.push({ kind: 'state', id: row.id, queue: row.queue, from: row.state, to: 'dead', attempt: done.dead.context.attempt });
    return true;
  }

  function candidates(queue: string, limit: number, where: CompiledWhere | undefined): MessageRow[] {
    if (!where) return repo.candidates(queue, limit);
    // A row that cannot be read is a candidate too: the lease dead-letters it (CORRUPT_ROW), as an
    // unfiltered wait does, instead of leaving it at the head of its queue.
    const sql = CANDIDATES_SQL.replace('ORDER BY', `AND (${where.orUnreadable}) ORDER BY`);
    return repo.statement(sql).all(queue, ...where.params, limit) as MessageRow[];
  }

  /**
   * Inside a transaction: leases up to `max` messages for each request, in one pass. The requests
   * share their queues, `where` and gate (the calls of one commit, joined by the pull engine), so
   * the due times are read once and each candidate query serves them all; the earlier request
   * takes first, as when each ran alone in that order.
   */
  function lease(reqs: readonly LeaseRequest[], now: number, log: Announcement[]): Leased[][] {
    const { queues, where, gate } = reqs[0]!;
    const [delayedAt, leaseAt] = repo.dueTimes();
    if (delayedAt !== null && delayedAt <= now) repo.promoteDue(now);
    if (leaseAt !== null && leaseAt <= now) expireDue(now, log);
    const out: Leased[][] = reqs.map(() => []);
    let remaining = reqs.reduce((sum, req) => sum + req.max, 0);
    /** The request the next row goes to: the first one not yet full. */
    let slot = 0;
    for (const queue of queues) {
      // Held back by its rate limit, budget or a pushback: the gate arms the wake-up.
      let allowed = gate ? gate.allowance(queue) : Infinity;
      while (remaining > 0 && allowed > 0) {
        const want = Math.min(remaining, allowed);
        const rows = candidates(queue, want, where);
        let took = 0;
        let moved = 0;
        for (const row of rows) {
          while (out[slot]!.length >= reqs[slot]!.max) slot += 1;
          const taken = leaseRow(row, reqs[slot]!, now, log);
          if (taken === MOVED) moved += 1;
          else if (taken) (out[slot]!.push(taken), (took += 1));
        }
        // Counted before the commit: a rolled-back lease only makes the window stricter.
        if (took > 0 && gate) gate.recordStarts(queue, took);
        allowed -= took;
        remaining -= took;
        // Fewer rows than asked: the queue has no more for now, unless a row moved to the
        // dead-letter queue: the next query then finds the ones behind it (a FIFO group's next
        // head among them), so one receive hands them out. Each move takes a row out of the
        // queue, so this ends. (A row taken by another consumer meanwhile waits for the next call.)
        // Rows neither taken nor moved would come back to the next query: stop there too.
        if ((rows.length < want || took === 0) && moved === 0) break;
      }
      if (remaining === 0) break;
    }
    return out;
  }

  /** Leases one row; MOVED when it went to the dead-letter queue instead, undefined when not taken. */
  function leaseRow(row: MessageRow, req: LeaseRequest, now: number, log: Announcement[]): Leased | typeof MOVED | undefined {
    let pending: MessageMachineState;
    let payload: unknown;
    let attributes: MessageAttributes;
    try {
      pending = rowState(row);
      payload = JSON.parse(row.payload);
      // Read here, not after the commit: an unreadable one would lose the receipts of the batch.
      attributes = decodeAttributes(row.attributes);
    } catch (error) {
      // Unreadable: to dead, as the push claim does. Left pending, it would head its queue for
      // every later call (no push consumer may ever claim an SQS queue's rows).
      return corrupt(row, error, now, log) ? MOVED : undefined;
    }
    const activating = machine.step(pending, { type: 'CLAIM', at: now });
    const redrive = directory.attributes(row.queue).deadLetter;
    if (redrive && pending.context.deliveries >= redrive.maxReceiveCount) {
      // Handing it out would pass maxReceiveCount: to the dead-letter queue instead (SQS redrive).
      if (!repo.write(transitionRow(row, { state: 'pending', token: null }, activating, { token: null, owner: null }, now))) return undefined;
      log.push({ kind: 'state', id: row.id, queue: row.queue, from: 'pending', to: 'activating', attempt: activating.context.attempt });
      const error = { code: 'MAX_RECEIVES', message: `Received ${pending.context.deliveries} times, the queue's maxReceiveCount` };
      return applyTransition(repo, row, activating, null, { type: 'REJECT', at: now, error }, now, log, directory.dlqOf) ? MOVED : undefined;
    }
    const leaseExpiresAt = now + req.leaseMs(row.queue);
    const processing = machine.step(activating, { type: 'START', at: now, leaseExpiresAt });
    const token = `${now.toString(36)}.${randomUUID()}`;
    const ok = repo.write(transitionRow(row, { state: 'pending', token: null }, processing, { token, owner: req.owner }, now, { handedOut: true }));
    if (!ok) return undefined;
    log.push({ kind: 'state', id: row.id, queue: row.queue, from: 'pending', to: 'activating', attempt: processing.context.attempt });
    log.push({ kind: 'state', id: row.id, queue: row.queue, from: 'activating', to: 'processing', attempt: processing.context.attempt });
    return { row: { ...row, firstDeliveredAt: row.firstDeliveredAt ?? now, leaseToken: token }, state: processing, token, leaseExpiresAt, payload, attributes };
  }

  /**
   * Inside a transaction: applies `event` to the leased message `seq` if `token` still holds it.
   * Returns the row as it was, or undefined when the receipt is stale (changes nothing).
   */
  function settleLease(seq: number, token: string, event: (row: MessageRow, state: MessageMachineState) => MessageEvent | 'complete', now: number, log: Announcement[]): MessageRow | undefined {
    const row = repo.bySeq(seq);
    if (!row || row.state !== 'processing' || row.leaseToken !== token) return undefined;
    let state: MessageMachineState;
    try {
      state = rowState(row);
    } catch {
      return undefined;
    }
    const chosen = event(row, state);
    if (chosen === 'complete') {
      const next = machine.step(state, { type: 'COMPLETE', at: now });
      const keep = settings.get().retention.doneMs > 0;
      const ok = keep
        ? repo.write(transitionRow(row, { state: 'processing', token }, next, { token: null, owner: null }, now))
        : repo.remove(row.seq, row.queue, 'processing', token, row.grp, { to: 'done', attempt: next.context.attempt, at: now, reason: 'done' });
      if (!ok) return undefined;
      log.push({ kind: 'state', id: row.id, queue: row.queue, from: 'processing', to: 'done', attempt: next.context.attempt });
      return row;
    }
    return applyTransition(repo, row, state, token, chosen, now, log, directory.dlqOf, chosen.type === 'EXTEND' ? { token, owner: row.owner } : undefined) ? row : undefined;
  }

  /**
   * Inside a transaction: completes the leased message `seq` if `token` still holds it (an end, an
   * SQS delete). When done rows are not kept, a fenced archive and DELETE do it, and a holder that
   * passes `known` (the lease's own row) spares the read of the row. Returns what it completed,
   * or undefined for a stale receipt.
   */
  function completeLease(seq: number, token: string, now: number, log: Announcement[], known?: LeasedRow): { id: string; queue: string } | undefined {
    if (settings.get().retention.doneMs > 0) return settleLease(seq, token, () => 'complete', now, log);
    const row = repo.removeLeased(seq, token, now, known);
    if (row) log.push({ kind: 'state', id: row.id, queue: row.queue, from: 'processing', to: 'done', attempt: row.attempt });
    return row;
  }

  return { lease, expireDue, settleLease, completeLease, nextLeaseExpiry: () => repo.nextLeaseExpiry() };
}

/** The leaser's type. */
export type Leaser = ReturnType<typeof createLeaser>;
