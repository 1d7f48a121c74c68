import { BehaviorSubject, filter, firstValueFrom, map, take } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createEventBus, type SpoolEvent } from '../../src/events.js';

const tick = (n: number): SpoolEvent => ({ type: 'storage.busy', retries: n, at: n });

describe('isolated subscribers (events$)', () => {
  it('reports a throwing direct subscriber as SUBSCRIBER_ERROR and keeps delivering to it and the others', () => {
    const bus = createEventBus(() => 7);
    const good: SpoolEvent[] = [];
    let calls = 0;
    bus.events$.subscribe((e) => good.push(e));
    bus.events$.subscribe(() => {
      calls += 1;
      throw new Error('boom');
    });
    bus.emit(tick(1));
    bus.emit(tick(2));
    // Each event reaches the thrower once; its throw on the report itself is dropped, not looped.
    expect(calls).toBe(4);
    expect(good.map((e) => e.type)).toEqual(['storage.busy', 'error', 'storage.busy', 'error']);
    expect(good[1]).toEqual({ type: 'error', code: 'SUBSCRIBER_ERROR', message: 'A subscriber of events$ threw in next(): boom', at: 7 });
  });

  it('isolates a subscriber that throws on the synchronous first value', () => {
    const bus = createEventBus();
    const reports: SpoolEvent[] = [];
    bus.events$.subscribe((e) => reports.push(e));
    const settings$ = bus.isolate(new BehaviorSubject(1).asObservable(), 'settings$');
    const sub = settings$.subscribe(() => {
      throw new Error('first value');
    });
    expect(sub.closed).toBe(false);
    expect(reports).toMatchObject([{ code: 'SUBSCRIBER_ERROR', message: 'A subscriber of settings$ threw in next(): first value' }]);
  });

  it('detaches from the bus when a piped subscriber unsubscribes, so a finished pipe costs nothing', async () => {
    const bus = createEventBus();
    expect(bus.idle).toBe(true);
    const first = firstValueFrom(bus.events$.pipe(filter((e) => e.type === 'storage.busy'), map((e) => e.at), take(1)));
    expect(bus.idle).toBe(false);
    bus.emit(tick(3));
    expect(await first).toBe(3);
    expect(bus.idle).toBe(true);
    const sub = bus.events$.subscribe(() => {});
    sub.unsubscribe();
    expect(bus.idle).toBe(true);
  });

  it('leaves an error thrown further down a user pipe to RxJS (documented), without breaking the bus', () => {
    const bus = createEventBus();
    const errors: unknown[] = [];
    bus.events$
      .pipe(
        map(() => {
          throw new Error('operator');
        }),
      )
      .subscribe({ error: (e) => errors.push(e) });
    bus.emit(tick(1));
    expect(errors).toHaveLength(1);
    bus.emit(tick(2));
    expect(bus.idle).toBe(true);
  });
});
