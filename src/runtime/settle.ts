/**
 * Settling: a handler's outcome becomes the machine's next snapshot, written fenced on the claim's
 * lease token in the group transaction, and only after that commit applied to the live actor and
 * announced. A settle from an attempt that no longer holds the message (timed out, abandoned at
 * stop, or superseded) changes nothing and is announced as `message.stale`.
 */
import type { MessageEvent } from '../../machines/message.machine.js';
import { backoffDelay } from '../../machines/retry-policy.js';
import { compiledMessageMachine as machine } from '../../machines/compiled.js';
import { crashPoint } from '../crash-points.js';
import { policyFor } from '../settings/schema.js';
import type { Outcome } from './handler.js';
import type { Leases } from './leases.js';
import { announce as announceLog, applyTransition, type Announcement } from './transitions.js';
import type { Announcer, Inflight, SupervisorDeps } from './types.js';

/** What settling needs besides the shared dependencies. */
export interface SettleParts {
  leases: Leases;
  announce: Announcer;
  /** Frees the entry's pool slot (and asks for a claim). */
  release(entry: Inflight): void;
  /** A retry is ready at `visibleAt` in `queue`. */
  retryAt(queue: string, visibleAt: number, now: number): void;
  /** A handler threw RateLimitError: `queue` pauses for `ms`. */
  pushback?(queue: string, ms: number): void;
}

/** Creates the settle step. */
export function createSettler(deps: SupervisorDeps, parts: SettleParts) {
  const { repo, committer, clock, events, settings } = deps;
  const { leases } = parts;

  function settle(entry: Inflight, outcome: Outcome) {
    if (entry.settled) {
      // Timed out or abandoned at stop: this attempt no longer holds the message.
      events.emit({ type: 'message.stale', id: entry.id, queue: entry.queue, attempt: entry.message.attempt, at: clock.now() });
      return;
    }
    entry.settled = true;
    // Before the release asks for a claim: that claim must already see the queue paused.
    if (outcome.kind === 'defer' && outcome.pauseMs !== undefined) parts.pushback?.(entry.queue, outcome.pauseMs);
    parts.release(entry);
    const now = clock.now();
    const event = eventFor(entry, outcome, now);
    const next = machine.step(entry.state, event);
    const to = next.value;
    const keepDone = settings.get().retention.doneMs > 0;
    committer.enqueue({
      kind: 'transition',
      // No caller awaits a push handler's settle: lost to a power cut, the message is delivered
      // again, as after a crash between the handler's return and this commit.
      durable: false,
      run: () => {
        const log: Announcement[] = [];
        if (to === 'done') crashPoint('complete.beforeCommit');
        if (to === 'done' && !keepDone) {
          const ok = repo.remove(entry.seq, entry.queue, 'processing', entry.token, entry.grp, { to: 'done', attempt: next.context.attempt, at: now, reason: 'done' });
          if (ok) log.push({ kind: 'state', id: entry.id, queue: entry.queue, from: 'processing', to: 'done', attempt: next.context.attempt });
          return { ok, log };
        }
        const ok = applyTransition(repo, entry, entry.state, entry.token, event, now, log, deps.directory.dlqOf) !== undefined;
        return { ok, log };
      },
      committed: ({ ok, log }) => {
        leases.delete(entry);
        if (!ok) {
          entry.actor?.stop();
          events.emit({ type: 'message.stale', id: entry.id, queue: entry.queue, attempt: entry.message.attempt, at: now });
          return;
        }
        entry.actor?.send(event);
        if (to !== 'done') entry.actor?.stop();
        announceLog(events, log, now);
        if (to === 'done') {
          crashPoint('complete.afterCommit');
          // Its group's next message heads the group now: claimable.
          if (entry.grp !== null) parts.retryAt(entry.queue, now, now);
        } else if (to === 'dead') {
          crashPoint('dead.afterCommit');
          // Moved to its dead-letter queue as a new pending message: that queue has work now.
          const moved = log.find((a) => a.kind === 'state' && a.to === 'pending');
          if (moved) parts.retryAt(moved.queue, now, now);
          if (entry.grp !== null) parts.retryAt(entry.queue, now, now);
        } else {
          crashPoint('retry.scheduled');
          parts.retryAt(entry.queue, next.context.visibleAt, now);
        }
      },
      failed: (error) => {
        // The row stays in flight on disk; the next boot's recovery returns it to pending.
        leases.delete(entry);
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
        const delay = backoffDelay(policy.backoff, entry.state.context.failures + 1, deps.random);
        return { type: 'FAIL', at: now, error: outcome.error, maxAttempts: policy.maxAttempts, retryAt: now + delay };
      }
    }
  }

  return { settle };
}

/** The settle step's type. */
export type Settler = ReturnType<typeof createSettler>;
