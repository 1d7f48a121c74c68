/**
 * Handler duration (start → settle) and queue wait (send → first start), measured from the
 * committed `message.state` events. Bounded: a message whose send or start this process did not
 * see is not measured.
 */
import type { Observable, Subscription } from 'rxjs';
import type { SpoolEvent } from '../index.js';

/** How many open sends and starts are remembered; beyond it the oldest are forgotten. */
const MAX_OPEN = 100_000;

/** Calls `onHandler` and `onWait` with each measured duration, ms; unsubscribe to stop. */
export function trackDurations(
  events$: Observable<SpoolEvent>,
  onHandler: (queue: string, ms: number) => void,
  onWait: (queue: string, ms: number) => void,
): Subscription {
  const sent = new Map<string, number>();
  const started = new Map<string, number>();
  const remember = (map: Map<string, number>, id: string, at: number) => {
    if (map.size >= MAX_OPEN) map.delete(map.keys().next().value!);
    map.set(id, at);
  };
  return events$.subscribe((event) => {
    if (event.type !== 'message.state') return;
    const { id, queue, at } = event;
    if (event.from === null) {
      remember(sent, id, at);
      return;
    }
    if (event.from === 'processing') {
      const since = started.get(id);
      if (since !== undefined) {
        started.delete(id);
        onHandler(queue, Math.max(0, at - since));
      }
    }
    if (event.to === 'processing') {
      remember(started, id, at);
      const since = sent.get(id);
      if (since !== undefined) {
        sent.delete(id);
        onWait(queue, Math.max(0, at - since));
      }
    } else if (event.to === 'done' || event.to === 'dead') {
      sent.delete(id);
    }
  });
}
