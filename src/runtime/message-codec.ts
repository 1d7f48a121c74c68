/** Between rows and the machine: a row's machine state, the columns a transition writes, the public view. */
import { compiledMessageMachine as machine, type MessageMachineState } from '../../machines/compiled.js';
import type { MessageContext, MessageState, StoredError } from '../../machines/message.machine.js';
import type { MessageRow, RowTransition } from '../db/repository.js';
import { decodeAttributes, type MessageAttributes } from '../queues/message-attributes.js';

const STATES = new Set<string>(machine.states.map((s) => s.value));

/** What a transition may carry besides its columns (see RowTransition). */
export type TransitionExtras = Pick<RowTransition, 'handedOut' | 'code' | 'via'>;

const NO_EXTRAS: TransitionExtras = {};

/**
 * The columns of a transition to `next`, fenced on the row's current state and token. One literal
 * of one shape, extras included: spreading a transition into a new literal to add them cost about
 * 4 µs a call in V8 (a loop of 2 million), and 5–7 µs per lease in a pull-c8 profile. The row's
 * group always goes with it: a grouped message that leaves the live states must promote its
 * group's next one, and one that comes back must not head the group beside it (an optional
 * group, left out at two call sites, held whole groups back for good).
 */
export function transitionRow(
  row: { seq: number; queue: string; grp: string | null },
  expect: { state: MessageState; token: string | null },
  next: MessageMachineState,
  lease: { token: string | null; owner: string | null },
  now: number,
  extras: TransitionExtras = NO_EXTRAS,
): RowTransition {
  return {
    seq: row.seq,
    queue: row.queue,
    expectState: expect.state,
    expectToken: expect.token,
    state: next.value,
    context: next.context,
    leaseToken: lease.token,
    owner: lease.owner,
    now,
    group: row.grp,
    handedOut: extras.handedOut,
    code: extras.code,
    via: extras.via,
  };
}

/**
 * A row's machine state; throws on anything the machine could not have written (a state it does
 * not have, a count that is not a count, an unreadable lastError): such a row is corrupt.
 */
export function rowState(row: MessageRow): MessageMachineState {
  if (!STATES.has(row.state)) throw new Error(`the row's state ${JSON.stringify(row.state)} is not a state of the message machine`);
  // Every claim and lease is fenced on a pending row's null token: one with a token could never be
  // handed out, and would head its queue for good.
  if (row.state === 'pending' && row.leaseToken !== null) throw new Error("the row is pending with a lease token, which no claim's fence can match");
  for (const key of ['failures', 'attempt', 'deliveries', 'crashes'] as const) {
    // A mistyped count would step to NaN, whose write fails inside the claim transaction and
    // stalls the whole queue; such a row is corrupt like any other.
    if (!Number.isInteger(row[key]) || row[key] < 0) throw new Error(`the row's ${key} is ${JSON.stringify(row[key])}, not a count`);
  }
  if (!Number.isFinite(row.visibleAt)) throw new Error(`the row's visible_at is ${JSON.stringify(row.visibleAt)}, not a time`);
  if (row.leaseExpiresAt !== null && !Number.isFinite(row.leaseExpiresAt)) throw new Error("the row's lease_expires_at is not a time or null");
  let lastError: StoredError | null = null;
  if (row.lastError !== null) {
    const parsed = JSON.parse(row.lastError) as { code?: unknown } | null;
    if (parsed === null || typeof parsed !== 'object' || typeof parsed.code !== 'string') throw new Error("the row's last_error is not a stored error");
    lastError = parsed as StoredError;
  }
  const context: MessageContext = {
    failures: row.failures,
    attempt: row.attempt,
    deliveries: row.deliveries,
    crashes: row.crashes,
    visibleAt: row.visibleAt,
    leaseExpiresAt: row.leaseExpiresAt,
    lastError,
  };
  return { value: row.state, context };
}

/** A fresh dead letter's state, for a row whose own state is unreadable: the machine replays it. */
export function deadLetter(visibleAt: number, now: number, error: StoredError): MessageMachineState {
  const claimed = machine.step(machine.initial({ visibleAt }), { type: 'CLAIM', at: now });
  return machine.step(claimed, { type: 'REJECT', at: now, error });
}

/** What `spool.get(id)` returns. */
export interface MessageInfo {
  id: string;
  queue: string;
  state: MessageState;
  payload: unknown;
  /** The schedule that sent it (only on a scheduled message). */
  schedule?: string;
  /** The tick it was sent for, epoch ms (only on a scheduled message). */
  scheduledFor?: number;
  attempt: number;
  deliveries: number;
  priority: number;
  /** Epoch ms. */
  createdAt: number;
  updatedAt: number;
  visibleAt: number;
  finishedAt: number | null;
  lastError: StoredError | null;
  /** Its place in send order, strictly increasing per spool (FIFO groups keep to it). */
  sequence: number;
  /** When its current lease (a handler's timeout, a pull lease) runs out, epoch ms; null: none. */
  leaseExpiresAt: number | null;
  /** When it was first handed out, epoch ms; null: never yet. */
  firstDeliveredAt: number | null;
  /** Its message group (only on a grouped message). */
  group?: string;
  /** Its SQS message attributes (only when it has some). */
  attributes?: MessageAttributes;
  /** The queue it came from (only on a message moved to a dead-letter queue). */
  sourceQueue?: string;
  /** Its FIFO deduplication id, SQS MessageDeduplicationId (only on a FIFO queue's message). */
  dedupeId?: string;
}

/** `schedule` and `scheduledFor` of a scheduled message's row; nothing for any other. */
export function scheduledFields(row: MessageRow): { schedule?: string; scheduledFor?: number } {
  if (row.schedule == null) return {};
  return row.scheduledFor == null ? { schedule: row.schedule } : { schedule: row.schedule, scheduledFor: row.scheduledFor };
}

/** The public view of a row. A row whose payload cannot be parsed shows it as its raw text. */
export function toMessageInfo(row: MessageRow): MessageInfo {
  return {
    id: row.id,
    queue: row.queue,
    state: row.state,
    payload: parseOr(row.payload, row.payload),
    ...scheduledFields(row),
    attempt: row.attempt,
    deliveries: row.deliveries,
    priority: row.priority,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    visibleAt: row.visibleAt,
    finishedAt: row.finishedAt,
    lastError: row.lastError ? (parseOr(row.lastError, { code: 'UNKNOWN', message: row.lastError }) as MessageInfo['lastError']) : null,
    sequence: row.seq,
    leaseExpiresAt: row.leaseExpiresAt,
    firstDeliveredAt: row.firstDeliveredAt,
    ...optionalFields(row),
  };
}

type OptionalField = 'group' | 'attributes' | 'sourceQueue' | 'dedupeId';

/** group, attributes, sourceQueue and dedupeId, each only when the row has it. */
function optionalFields(row: MessageRow): Pick<MessageInfo, OptionalField> {
  const out: Pick<MessageInfo, OptionalField> = {};
  if (row.grp !== null) out.group = row.grp;
  if (row.attributes !== null) {
    try {
      out.attributes = decodeAttributes(row.attributes);
    } catch {
      // An unreadable attributes column is left out: get() never throws for a row it found.
    }
  }
  if (row.sourceQueue !== null) out.sourceQueue = row.sourceQueue;
  if (row.dedupeId !== null) out.dedupeId = row.dedupeId;
  return out;
}

function parseOr(text: string, fallback: unknown): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return fallback;
  }
}
