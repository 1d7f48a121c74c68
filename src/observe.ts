/**
 * Observation: `watch(id)`, one message's current state and then each committed change, as an
 * Observable that completes at done, at dead, or when the row is removed. Like `events$`, its
 * direct subscribers are isolated (a throw is reported, never fatal).
 */
import { Observable } from 'rxjs';
import type { MessageState } from '../machines/message.machine.js';
import type { MessageRow } from './db/repository.js';
import type { EventBus } from './events.js';

/** Creates `watch`; `read` gives the row now (undefined when gone or unreadable). */
export function createWatch(bus: EventBus, read: (id: string) => MessageRow | undefined) {
  return function watch(id: string): Observable<MessageState> {
    const watching = new Observable<MessageState>((subscriber) => {
      // The row can be read ahead of announcements still to come (a watch opened from an events$
      // subscriber while the same commit also claimed the message): only a change that starts
      // where the watcher stands is news, or it would see the message go back to older states.
      let at: MessageState | null = null;
      const sub = bus.events$.subscribe((event) => {
        if (event.type === 'message.removed' && event.id === id) return subscriber.complete();
        if (event.type !== 'message.state' || event.id !== id) return;
        if (at !== null && event.from !== at) return;
        at = event.to;
        subscriber.next(event.to);
        if (event.to === 'done' || event.to === 'dead') subscriber.complete();
      });
      const row = read(id);
      if (!row || row.state === 'done' || row.state === 'dead') {
        if (row) subscriber.next(row.state);
        subscriber.complete();
      } else {
        at = row.state;
        subscriber.next(row.state);
      }
      return () => sub.unsubscribe();
    });
    return bus.isolate(watching, 'watch()');
  };
}
