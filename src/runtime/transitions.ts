/**
 * Transitions shared by the claim, the settle, pull leases and the SQS calls: each is computed by
 * the machine, written fenced on the row's state and lease token inside the caller's transaction,
 * and recorded in a log that the caller announces only after the commit.
 */
import { compiledMessageMachine as machine, type MessageMachineState } from '../../machines/compiled.js';
import type { MessageEvent, MessageState, StoredError } from '../../machines/message.machine.js';
import type { MessageRow, Repository } from '../db/repository.js';
import type { EventBus } from '../events.js';
import { deadLetter, transitionRow } from './message-codec.js';

/** One committed change to announce. */
export type Announcement =
  | { kind: 'state'; id: string; queue: string; from: MessageState; to: MessageState; attempt: number }
  | { kind: 'error'; id: string; queue: string; error: StoredError }
  | { kind: 'stale'; id: string; queue: string; attempt: number };

/** Announces a log after its commit (message.state only when someone listens). */
export function announce(events: EventBus, log: readonly Announcement[], at: number): void {
  for (const a of log) {
    if (a.kind === 'state') {
      if (!events.idle) events.emit({ type: 'message.state', id: a.id, queue: a.queue, from: a.from, to: a.to, attempt: a.attempt, at });
    } else if (a.kind === 'error') {
      events.emit({ type: 'message.error', id: a.id, queue: a.queue, code: a.error.code, message: a.error.message, at });
    } else {
      events.emit({ type: 'message.stale', id: a.id, queue: a.queue, attempt: a.attempt, at });
    }
  }
}

/** Where a queue's dead letters go (SQS redrive), if anywhere. */
export type DeadLetterTarget = (queue: string) => string | null;

/**
 * Applies `event` to a row in flight (fenced on its state and token), logging the change; a
 * message that reaches dead on a queue with a dead-letter queue moves there as a new pending
 * message, keeping its id, body and attributes (the machine's REQUEUE, then a queue change).
 * Returns the next state, or undefined when the row had moved on (stale).
 */
export function applyTransition(
  repo: Repository,
  row: Pick<MessageRow, 'seq' | 'id' | 'queue' | 'grp'>,
  from: MessageMachineState,
  token: string | null,
  event: MessageEvent,
  now: number,
  log: Announcement[],
  dlqOf: DeadLetterTarget,
  lease: { token: string | null; owner: string | null; handedOut?: boolean } = { token: null, owner: null },
): MessageMachineState | undefined {
  const next = machine.step(from, event);
  const code = event.type === 'FAIL' || event.type === 'REJECT' ? event.error.code : undefined;
  const ok = repo.write(transitionRow(row, { state: from.value, token }, next, lease, now, { handedOut: lease.handedOut ?? false, code }));
  if (!ok) return undefined;
  if (event.type === 'FAIL' || event.type === 'REJECT') log.push({ kind: 'error', id: row.id, queue: row.queue, error: event.error });
  log.push({ kind: 'state', id: row.id, queue: row.queue, from: from.value, to: next.value, attempt: next.context.attempt });
  if (next.value !== 'dead') return next;
  const dlq = dlqOf(row.queue);
  if (dlq === null || dlq === row.queue) return next;
  const revived = machine.step(next, { type: 'REQUEUE', at: now });
  if (!repo.write(transitionRow(row, { state: 'dead', token: null }, revived, { token: null, owner: null }, now))) return next;
  repo.move({ seq: row.seq, queue: row.queue, state: 'pending', grp: row.grp }, dlq, row.queue, now);
  log.push({ kind: 'state', id: row.id, queue: dlq, from: 'dead', to: 'pending', attempt: revived.context.attempt });
  return revived;
}

/**
 * Sends a row whose state or payload cannot be read to dead with CORRUPT_ROW, fenced on the row as
 * read (its stored state is unusable, so the machine replays a fresh one to dead). Returns the
 * error and the dead state, or undefined when the row had moved on.
 */
export function deadLetterCorrupt(repo: Repository, row: MessageRow, cause: unknown, now: number): { error: StoredError; dead: MessageMachineState } | undefined {
  const error: StoredError = { code: 'CORRUPT_ROW', message: `Unreadable row: ${(cause as Error).message}` };
  const dead = deadLetter(row.visibleAt, now, error);
  // The write promotes the group's next message (transitionRow names the group): a dead head
  // left as head would hold its whole group back.
  const ok = repo.write(transitionRow(row, { state: row.state, token: row.leaseToken }, dead, { token: null, owner: null }, now));
  return ok ? { error, dead } : undefined;
}
