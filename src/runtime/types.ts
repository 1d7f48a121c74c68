/** Shapes shared by the supervisor's parts (claim, executor, settle, leases, recovery). */
import type Database from 'better-sqlite3';
import type { InspectionEvent, Observer } from 'xstate';
import type { MessageState, StoredError } from '../../machines/message.machine.js';
import type { MessageMachineState } from '../../machines/compiled.js';
import type { Clock } from '../clock.js';
import type { MessageRow, Repository } from '../db/repository.js';
import type { EventBus } from '../events.js';
import type { SettingsRuntime } from '../settings/store.js';
import type { QueueDirectory } from '../queues/directory.js';
import type { Committer } from './committer.js';
import type { Handler, Message } from './handler.js';
import type { ActorRefFrom } from 'xstate';
import type { messageMachine } from '../../machines/message.machine.js';

/** An XState inspection observer (or a plain callback), passed to every actor. */
export type Inspect = Observer<InspectionEvent> | ((event: InspectionEvent) => void);

/** Dependencies of the supervisor runtime. */
export interface SupervisorDeps {
  sqlite: Database.Database;
  repo: Repository;
  committer: Committer;
  clock: Clock;
  events: EventBus;
  settings: SettingsRuntime;
  consumers: ReadonlyMap<string, Handler>;
  inspect: Inspect | undefined;
  random: () => number;
  /** Queue kinds and attributes (registry and settings). */
  directory: QueueDirectory;
  /** A message of `queue` became claimable here (wakes this handle's pull waiters). */
  ready(queue: string): void;
  /** Returns pull leases that ran out to pending, in a commit of its own. */
  expireLeases(): Promise<unknown>;
  /** The load control let a held-back queue run again (wakes this handle's pull waiters). */
  released(): void;
}

/** A message in flight in this process: claimed, committed, handed to its handler. */
export interface Inflight {
  seq: number;
  id: string;
  queue: string;
  /** The message group, or null. */
  grp: string | null;
  pool: string;
  token: string;
  /** The committed `processing` state (the row's context). */
  state: MessageMachineState;
  actor: ActorRefFrom<typeof messageMachine> | undefined;
  /** Created on first use of `signal`: most handlers never read it. */
  controller: AbortController | undefined;
  /** The handler's timeout on the monotonic clock (a stepped wall clock cannot stretch it). */
  deadline: number | null;
  settled: boolean;
  message: Message;
  /** Resolves when the handler returns (or throws), whatever the outcome. */
  finished: Promise<void>;
}

/** A row the claim moved to processing, with what launching it needs. */
export interface Claimed {
  row: MessageRow;
  entry: Inflight;
}

/** A row the claim settled at once (no consumer, corrupt), to announce after the commit. */
export interface Disposition {
  row: MessageRow;
  to: MessageState;
  attempt: number;
  error: StoredError;
}

/** What one claim did inside its transaction. */
export interface ClaimResult {
  claimed: Claimed[];
  dispositions: Disposition[];
  capped: boolean;
}

/** Announces committed changes on the event bus. */
export interface Announcer {
  state(id: string, queue: string, from: MessageState | null, to: MessageState, attempt: number, at: number): void;
  error(id: string, queue: string, error: StoredError, at: number): void;
}

/** Creates the announcer; message.state events are built only when someone listens. */
export function createAnnouncer(events: EventBus): Announcer {
  return {
    state(id, queue, from, to, attempt, at) {
      if (!events.idle) events.emit({ type: 'message.state', id, queue, from, to, attempt, at });
    },
    error(id, queue, error, at) {
      events.emit({ type: 'message.error', id, queue, code: error.code, message: error.message, at });
    },
  };
}
