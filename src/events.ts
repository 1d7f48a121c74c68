/** The events Spool announces on `events$`, each only after the change it reports is committed. */
import { Subject, type Observable } from 'rxjs';
import type { MessageState } from '../machines/message.machine.js';
import type { Settings } from './settings/schema.js';
import { messageOf } from './errors.js';
import { isolated, type SubscriberErrorReporter } from './isolate.js';

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

/**
 * A failure not tied to one message: a storage error, STORAGE_LOST (the database file was deleted
 * or replaced), an invalid override row, a sweep error, SUBSCRIBER_ERROR (a subscriber threw).
 */
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

/** A message's row was deleted without reaching done through its handler (purge, sweep, queue delete). */
export interface MessageRemovedEvent {
  type: 'message.removed';
  id: string;
  queue: string;
  /** The state the row was in when it was deleted. */
  from: MessageState;
  reason: 'purged' | 'swept' | 'expired' | 'deleted';
  at: number;
}

/** Every event on `events$`. */
export type SpoolEvent =
  | MessageStateEvent
  | MessageErrorEvent
  | MessageStaleEvent
  | MessageRemovedEvent
  | SettingsChangedEvent
  | StorageBusyEvent
  | SpoolErrorEvent
  | RecoveredEvent
  | SweepEvent;

/** A Subject that never errors, whose direct subscribers cannot break the runtime or the process. */
export interface EventBus {
  readonly events$: Observable<SpoolEvent>;
  emit(event: SpoolEvent): void;
  complete(): void;
  /** True when nobody listens, so hot paths can skip building events. */
  readonly idle: boolean;
  /** Wraps another of Spool's observables so its direct subscribers are isolated the same way. */
  isolate<T>(source: Observable<T>, name: string): Observable<T>;
}

/** Creates the event bus behind `spool.events$`; `now` stamps the SUBSCRIBER_ERROR events. */
export function createEventBus(now: () => number = Date.now): EventBus {
  const subject = new Subject<SpoolEvent>();
  let reporting = false;
  const report: SubscriberErrorReporter = (error, where) => {
    // A subscriber that throws on the report as well would report forever: nested reports drop.
    if (reporting) return;
    reporting = true;
    try {
      subject.next({ type: 'error', code: 'SUBSCRIBER_ERROR', message: `${where}: ${messageOf(error)}`, at: now() });
    } catch {
      // Only isolated subscribers are attached, so nothing should reach here; never rethrow.
    } finally {
      reporting = false;
    }
  };
  const events$ = isolated(subject.asObservable(), 'events$', report);
  return {
    events$,
    emit(event) {
      try {
        subject.next(event);
      } catch (error) {
        report(error, 'A subscriber of events$ threw');
      }
    },
    complete: () => subject.complete(),
    get idle() {
      return !subject.observed;
    },
    isolate: (source, name) => isolated(source, name, report),
  };
}

