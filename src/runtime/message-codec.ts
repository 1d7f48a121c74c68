/** Between rows and the machine: the columns a snapshot implies, and the public message view. */
import { MESSAGE_SNAPSHOT_VERSION, type MessageState, type StoredError } from '../../machines/message.machine.js';
import { stateOf, type MessageSnapshot, type MessageStepper, type PersistedMessage } from '../../machines/stepper.js';
import type { MessageRow, RowTransition } from '../db/repository.js';

/** The columns of a transition to `next`, fenced on the row's current state and token. */
export function transitionRow(
  stepper: MessageStepper,
  seq: number,
  expect: { state: MessageState; token: string | null },
  next: MessageSnapshot,
  lease: { token: string | null; owner: string | null },
  now: number,
  persisted: PersistedMessage = stepper.persist(next),
): RowTransition {
  const ctx = next.context;
  const state = stateOf(next);
  return {
    seq,
    expectState: expect.state,
    expectToken: expect.token,
    state,
    snapshot: JSON.stringify({ v: MESSAGE_SNAPSHOT_VERSION, ...persisted }),
    attempt: ctx.attempt,
    deliveries: ctx.deliveries,
    visibleAt: ctx.visibleAt,
    ready: ctx.visibleAt <= now ? 1 : 0,
    leaseToken: lease.token,
    leaseExpiresAt: ctx.leaseExpiresAt,
    owner: lease.owner,
    finishedAt: state === 'dead' || state === 'done' ? now : null,
    lastError: ctx.lastError ? JSON.stringify(ctx.lastError) : null,
    now,
  };
}

/** The snapshot column of a new pending message. */
export function encodeSnapshot(stepper: MessageStepper, snapshot: MessageSnapshot): string {
  return JSON.stringify({ v: MESSAGE_SNAPSHOT_VERSION, ...stepper.persist(snapshot) });
}

/** Parses a snapshot column; throws on anything that is not a snapshot this version can read. */
export function decodeSnapshot(stepper: MessageStepper, row: Pick<MessageRow, 'snapshot' | 'state'>): MessageSnapshot {
  const parsed = JSON.parse(row.snapshot) as { v?: unknown; value?: unknown; context?: unknown };
  if (parsed === null || typeof parsed !== 'object') throw new Error('the snapshot is not a JSON object');
  if (parsed.v !== MESSAGE_SNAPSHOT_VERSION) throw new Error(`unknown snapshot version ${String(parsed.v)}`);
  if (parsed.value !== row.state) throw new Error(`the snapshot says ${String(parsed.value)} but the row says ${row.state}`);
  if (parsed.context === null || typeof parsed.context !== 'object') throw new Error('the snapshot has no context');
  // A context with a missing or mistyped field would step to NaN counts, whose write fails inside
  // the claim transaction and stalls the whole queue; such a row is corrupt like any other.
  const ctx = parsed.context as Record<string, unknown>;
  for (const key of ['failures', 'attempt', 'deliveries', 'crashes']) {
    if (!Number.isInteger(ctx[key]) || (ctx[key] as number) < 0) throw new Error(`the snapshot's context.${key} is ${JSON.stringify(ctx[key])}, not a count`);
  }
  if (!Number.isFinite(ctx.visibleAt)) throw new Error(`the snapshot's context.visibleAt is ${JSON.stringify(ctx.visibleAt)}, not a time`);
  if (ctx.leaseExpiresAt !== null && !Number.isFinite(ctx.leaseExpiresAt)) throw new Error("the snapshot's context.leaseExpiresAt is not a time or null");
  if (ctx.lastError !== null && (typeof ctx.lastError !== 'object' || typeof (ctx.lastError as { code?: unknown }).code !== 'string')) {
    throw new Error("the snapshot's context.lastError is not a stored error or null");
  }
  const { v: _v, ...persisted } = parsed;
  return stepper.restore(persisted);
}

/** A fresh dead-letter snapshot, for a row whose own snapshot is unreadable. */
export function deadLetter(stepper: MessageStepper, visibleAt: number, now: number, error: StoredError): MessageSnapshot {
  const fresh = stepper.initial({ visibleAt });
  return stepper.step(stepper.step(fresh, { type: 'CLAIM', at: now }), { type: 'REJECT', at: now, error });
}

/** What `spool.get(id)` returns. */
export interface MessageInfo {
  id: string;
  queue: string;
  state: MessageState;
  payload: unknown;
  attempt: number;
  deliveries: number;
  priority: number;
  /** Epoch ms. */
  createdAt: number;
  updatedAt: number;
  visibleAt: number;
  finishedAt: number | null;
  lastError: { code: string; message: string; stack?: string } | null;
}

/** The public view of a row. A row whose payload cannot be parsed shows it as its raw text. */
export function toMessageInfo(row: MessageRow): MessageInfo {
  return {
    id: row.id,
    queue: row.queue,
    state: row.state,
    payload: parseOr(row.payload, row.payload),
    attempt: row.attempt,
    deliveries: row.deliveries,
    priority: row.priority,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    visibleAt: row.visibleAt,
    finishedAt: row.finishedAt,
    lastError: row.lastError ? (parseOr(row.lastError, { code: 'UNKNOWN', message: row.lastError }) as MessageInfo['lastError']) : null,
  };
}

function parseOr(text: string, fallback: unknown): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return fallback;
  }
}
