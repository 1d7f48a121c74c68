/** Executor pools on a real temp file: limits are reached and never exceeded, per executor. */
import { describe, expect, it } from 'vitest';
import { reached } from '../helpers/events.js';
import { createBaton } from '../helpers/gate.js';
import { useTempSpools } from '../helpers/spool.js';

const spools = useTempSpools();

describe('executor pools', () => {
  it('the default executor runs exactly its concurrency at once, never more', async () => {
    const spool = spools.open({ config: { executor: { concurrency: 3 } } });
    const baton = createBaton();
    spool.register('work', () => baton.enter());
    await spool.sendBatch('work', Array.from({ length: 10 }, (_, i) => i));
    const allDone = reached(spool.events$, 'done', 10);
    await spool.start();

    await baton.arrived(3);
    expect(baton.inside).toBe(3);
    const snapshot = spool.supervisor.getSnapshot();
    expect(snapshot.context.pools['*']).toEqual({ concurrency: 3, active: 3 });
    expect((await spool.stats()).pools.default).toEqual({ concurrency: 3, active: 3 });
    expect((await spool.stats()).queues.work).toEqual({ pending: 7, activating: 0, processing: 3, dead: 0, done: 0 });

    // Release one wave at a time: each wave refills the pool to its limit.
    for (const total of [6, 9]) {
      baton.release();
      await baton.arrived(total);
    }
    baton.openForever();
    await allDone;
    expect(baton.total).toBe(10);
    expect(baton.max).toBe(3);
    // The actor's own snapshot is current once the last completion is committed, before any
    // view (stats()) asks for pending releases to be applied.
    expect(spool.supervisor.getSnapshot().context.pools['*']).toEqual({ concurrency: 3, active: 0 });
    expect((await spool.stats()).pools.default).toEqual({ concurrency: 3, active: 0 });
  });

  it('a queue with its own executor runs alongside the default pool, each at its own limit', async () => {
    const spool = spools.open({ config: { executor: { concurrency: 3 }, queues: { video: { executor: { concurrency: 2 } } } } });
    const shared = createBaton();
    const video = createBaton();
    // Two queues share the default pool; their combined use is what the limit bounds.
    spool.register('email', () => shared.enter());
    spool.register('sms', () => shared.enter());
    spool.register('video', () => video.enter());
    await spool.sendBatch('email', Array.from({ length: 5 }, (_, i) => i));
    await spool.sendBatch('sms', Array.from({ length: 5 }, (_, i) => i));
    await spool.sendBatch('video', Array.from({ length: 6 }, (_, i) => i));
    const allDone = reached(spool.events$, 'done', 16);
    await spool.start();

    await Promise.all([shared.arrived(3), video.arrived(2)]);
    expect(shared.inside).toBe(3);
    expect(video.inside).toBe(2);
    const { pools } = spool.supervisor.getSnapshot().context;
    expect(pools).toEqual({ '*': { concurrency: 3, active: 3 }, video: { concurrency: 2, active: 2 } });
    expect((await spool.stats()).pools).toEqual({
      default: { concurrency: 3, active: 3 },
      byQueue: { video: { concurrency: 2, active: 2 } },
    });

    // Draining the video pool does not give the default pool more room, and vice versa.
    video.openForever();
    await reached(spool.events$, 'done', 6, 'video');
    expect(shared.inside).toBe(3);
    expect(spool.supervisor.getSnapshot().context.pools['*']).toEqual({ concurrency: 3, active: 3 });

    shared.openForever();
    await allDone;
    expect(shared.max).toBe(3);
    expect(video.max).toBe(2);
    expect(shared.total).toBe(10);
    expect(video.total).toBe(6);
    expect((await spool.stats()).pools).toEqual({
      default: { concurrency: 3, active: 0 },
      byQueue: { video: { concurrency: 2, active: 0 } },
    });
  });

  it('sends arriving while the pool is full wait for a slot and never exceed the limit', async () => {
    const spool = spools.open({ config: { executor: { concurrency: 2 } } });
    const baton = createBaton();
    spool.register('work', () => baton.enter());
    await spool.start();
    const allDone = reached(spool.events$, 'done', 8);
    for (let i = 0; i < 8; i++) await spool.send('work', i);
    await baton.arrived(2);
    expect(baton.inside).toBe(2);
    baton.openForever();
    await allDone;
    expect(baton.max).toBe(2);
    expect(baton.total).toBe(8);
  });
  // Guards: release/acquire counts were kept in plain {} objects, so for a queue named
  // "constructor" or "toString" `counts[q] ?? 0` read Object.prototype's function, and the pool's
  // active count became a string/NaN: the queue stalled or ran past its limit. Now Object.create(null).
  for (const name of ['constructor', 'toString']) {
    it(`a queue named "${name}" with its own executor runs all its messages at its limit; other queues still complete`, async () => {
      const spool = spools.open({ config: { queues: { [name]: { executor: { concurrency: 1 } } } } });
      const baton = createBaton();
      spool.register(name, () => baton.enter());
      spool.register('other', () => {});
      const errors: string[] = [];
      spool.events$.subscribe((e) => {
        if (e.type === 'error') errors.push(e.message);
      });
      await spool.sendBatch(name, Array.from({ length: 6 }, (_, i) => i));
      const ownDone = reached(spool.events$, 'done', 6, name);
      await spool.start();

      await baton.arrived(1);
      expect(baton.inside).toBe(1);
      expect(spool.supervisor.getSnapshot().context.pools[name]).toEqual({ concurrency: 1, active: 1 });
      baton.openForever();
      await ownDone;
      expect(baton.total).toBe(6);
      expect(baton.max).toBe(1);

      const otherDone = reached(spool.events$, 'done', 1, 'other');
      await spool.send('other', {});
      await otherDone;

      const { pools } = spool.supervisor.getSnapshot().context;
      expect(pools[name]).toEqual({ concurrency: 1, active: 0 });
      expect(pools['*']).toEqual({ concurrency: expect.any(Number), active: 0 });
      const stats = await spool.stats();
      expect(stats.pools.default.active).toBe(0);
      expect(stats.pools.byQueue[name]).toEqual({ concurrency: 1, active: 0 });
      expect(errors).toEqual([]);
    });
  }
});
