/** The events Spool announces on `events$`, each only after the change it reports is committed. */
import { Subject, type Observable } from 'rxjs';
import type { MessageState } from '../machines/message.machine.js';
import type { Settings } from './settings/schema.js';

/** A committed state change of one message. `from` is null when the message was just sent. */
export interface MessageStateEvent {
  type: 'message.state';
  id: string;
  queue: string;
  from: MessageState | null;
  to: MessageState;
  attempt: number;
  /** Epoch ms of the commit's clock reading. */
  at: number;
}

/** A failure tied to one message (handler error, NO_CONSUMER, TIMEOUT, CORRUPT_ROW, CRASH_LOOP). */
export interface MessageErrorEvent {
  type: 'message.error';
  id: string;
  queue: string;
  code: string;
  message: string;
  at: number;
}

/** A settle from an attempt that no longer holds the message (timed out or superseded): ignored. */
export interface MessageStaleEvent {
  type: 'message.stale';
  id: string;
  queue: string;
  attempt: number;
  at: number;
}

/** The effective settings changed (through this spool, another process, or the CLI). */
export interface SettingsChangedEvent {
  type: 'settings.changed';
  settings: Settings;
  /** The settings version row after the change. */
  version: number;
  /** 'local' for `settings.update/reset` here, 'external' for a change found by the poll. */
  source: 'local' | 'external';
  at: number;
}

/** The database was busy (another connection held the write lock); Spool retries. */
export interface StorageBusyEvent {
  type: 'storage.busy';
  /** How many times this batch has been retried so far. */
  retries: number;
  at: number;
}

/** A failure not tied to one message (a storage error, an invalid override row, a sweep error). */
export interface SpoolErrorEvent {
  type: 'error';
  code: string;
  message: string;
  at: number;
}

/** Boot reconciliation finished: in-flight rows went back to pending (or dead on a crash loop). */
export interface RecoveredEvent {
  type: 'spool.recovered';
  pending: number;
  dead: number;
  at: number;
}

/** A maintenance sweep finished. */
export interface SweepEvent {
  type: 'maintenance.swept';
  deleted: number;
  freedPages: number;
  /** The longest single batch of the sweep, ms: how long claims could have waited. */
  longestBatchMs: number;
  at: number;
}

/** Every event on `events$`. */
export type SpoolEvent =
  | MessageStateEvent
  | MessageErrorEvent
  | MessageStaleEvent
  | SettingsChangedEvent
  | StorageBusyEvent
  | SpoolErrorEvent
  | RecoveredEvent
  | SweepEvent;

/** A Subject that never errors: one throwing subscriber cannot break the runtime. */
export interface EventBus {
  readonly events$: Observable<SpoolEvent>;
  emit(event: SpoolEvent): void;
  complete(): void;
  /** True when nobody listens, so hot paths can skip building events. */
  readonly idle: boolean;
}

/** Creates the event bus behind `spool.events$`. */
export function createEventBus(): EventBus {
  const subject = new Subject<SpoolEvent>();
  return {
    events$: subject.asObservable(),
    emit(event) {
      try {
        subject.next(event);
      } catch (error) {
        // A subscriber threw synchronously; report it without letting it escape into the runtime.
        queueMicrotask(() => {
          throw error;
        });
      }
    },
    complete: () => subject.complete(),
    get idle() {
      return !subject.observed;
    },
  };
}
