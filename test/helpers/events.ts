/** Waiting on events instead of sleeping. */
import { filter, firstValueFrom, take, timeout, toArray, type Observable } from 'rxjs';
import type { SpoolEvent } from '../../src/index.js';

/** The first event matching `predicate`, or a rejection after `timeoutMs`. Subscribe before acting. */
export function nextEvent<E extends SpoolEvent = SpoolEvent>(
  events$: Observable<SpoolEvent>,
  predicate: (event: SpoolEvent) => boolean,
  options: { timeoutMs?: number } = {},
): Promise<E> {
  const first = firstValueFrom(events$.pipe(filter(predicate), take(1), timeout(options.timeoutMs ?? 5000)));
  return first as Promise<SpoolEvent> as Promise<E>;
}

/** The first `count` events matching `predicate`. */
export function nextEvents(
  events$: Observable<SpoolEvent>,
  predicate: (event: SpoolEvent) => boolean,
  count: number,
  options: { timeoutMs?: number } = {},
): Promise<SpoolEvent[]> {
  return firstValueFrom(events$.pipe(filter(predicate), take(count), toArray(), timeout(options.timeoutMs ?? 10_000)));
}

/** Resolves once `count` messages of `queue` (any queue if omitted) reached `state`. */
export function reached(events$: Observable<SpoolEvent>, state: string, count: number, queue?: string, timeoutMs = 10_000) {
  return nextEvents(events$, (e) => e.type === 'message.state' && e.to === state && (queue === undefined || e.queue === queue), count, { timeoutMs });
}
