/**
 * Regression tests for the hostile tester's findings (issue 9) that fit no other file: stop and
 * close timeouts, sparse batches with a subscriber attached, hostile rejection values, removals
 * announced and watchers completed, CLOSED during close(), STORAGE_BUSY from sweep(), and handler
 * timeouts measured on the monotonic clock.
 */
import { describe, expect, it } from 'vitest';
import { isSpoolError, type SpoolEvent } from '../../src/index.js';
import { rejection } from '../helpers/errors.js';
import { nextEvent, reached } from '../helpers/events.js';
import { createGate } from '../helpers/gate.js';
import { countRows } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';

const spools = useTempSpools();

describe('stop() and close() timeouts', () => {
  it.each([
    ['3e9 (capped, not overflowed)', 3e9],
    ['Infinity (as long as handlers run)', Infinity],
  ])('waits for a running handler with timeoutMs %s instead of abandoning it', async (_, timeoutMs) => {
    const spool = spools.open();
    const gate = createGate();
    spool.register('jobs', () => gate.wait());
    await spool.start();
    const processing = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.to === 'processing');
    const id = await spool.send('jobs', { n: 1 });
    await processing;
    let stopped = false;
    const stopping = spool.stop({ timeoutMs }).then(() => (stopped = true));
    // Give a wrongly tiny timer every chance to fire before the handler is released.
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(stopped).toBe(false);
    gate.open();
    await stopping;
    expect(await spool.get(id)).toBeUndefined();
  });
});

describe('sendBatch with holes', () => {
  it('rejects a sparse array with INVALID_PAYLOAD and details.index while events$ has a subscriber, storing nothing', async () => {
    const spool = spools.open();
    const seen: SpoolEvent[] = [];
    spool.events$.subscribe((e) => seen.push(e));
    const error = await rejection(spool.sendBatch('jobs', [{ n: 1 }, , { n: 3 }])); // eslint-disable-line no-sparse-arrays
    expect(error.code).toBe('INVALID_PAYLOAD');
    expect(error.details).toMatchObject({ index: 1 });
    expect(error.message).toMatch(/^Item 1: /);
    const first = await rejection(spool.sendBatch('jobs', [, { n: 2 }])); // eslint-disable-line no-sparse-arrays
    expect(first.details).toMatchObject({ index: 0 });
    expect(seen).toEqual([]);
    expect(countRows(spools.path)).toBe(0);
  });
});

describe('hostile values thrown by handlers', () => {
  function hostile() {
    const error = new Error('hostile');
    Object.defineProperty(error, 'code', {
      get() {
        throw new Error('code getter');
      },
    });
    return error;
  }

  it.each([
    ['rejects with an error whose code getter throws', async () => Promise.reject(hostile())],
    ['throws an error whose code getter throws', () => {
      throw hostile();
    }],
    ['rejects with a Proxy whose traps throw', async () =>
      Promise.reject(
        new Proxy(
          {},
          {
            get() {
              throw new Error('get trap');
            },
            getPrototypeOf() {
              throw new Error('getPrototypeOf trap');
            },
          },
        ),
      )],
  ])('a handler that %s fails its attempt, frees its slot and leaves no row in flight', async (_, handler) => {
    const spool = spools.open({ config: { executor: { concurrency: 1 }, queueDefaults: { maxAttempts: 1 } } });
    spool.register('bad', handler as () => unknown);
    spool.register('good', () => {});
    await spool.start();
    const dead = reached(spool.events$, 'dead', 1, 'bad');
    const id = await spool.send('bad', { n: 1 });
    await dead;
    const info = await spool.get(id);
    expect(info?.state).toBe('dead');
    expect(info?.lastError?.code).toBe('HANDLER_ERROR');
    // The one slot is free again: the next message runs.
    const done = reached(spool.events$, 'done', 1, 'good');
    await spool.send('good', { n: 2 });
    await done;
  });
});

describe('removals are announced', () => {
  it('purge emits message.removed per row and completes the watchers of purged messages', async () => {
    const spool = spools.open();
    const ids = await spool.sendBatch('jobs', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const watched: string[] = [];
    let completed = false;
    spool.watch(ids[1]!).subscribe({ next: (s) => watched.push(s), complete: () => (completed = true) });
    const seen: SpoolEvent[] = [];
    spool.events$.subscribe((e) => seen.push(e));
    expect(await spool.purge('jobs', { state: 'pending' })).toBe(3);
    expect(seen).toEqual(ids.map((id) => ({ type: 'message.removed', id, queue: 'jobs', from: 'pending', reason: 'purged', at: expect.any(Number) })));
    expect(watched).toEqual(['pending']);
    expect(completed).toBe(true);
  });

  it('a sweep emits message.removed for each expired row', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock, config: { retention: { doneMs: 1000 } } });
    spool.register('jobs', () => {});
    await spool.start();
    const done = reached(spool.events$, 'done', 2, 'jobs');
    const ids = await spool.sendBatch('jobs', [{ n: 1 }, { n: 2 }]);
    await done;
    clock.advance(1001);
    const seen: SpoolEvent[] = [];
    spool.events$.subscribe((e) => seen.push(e));
    expect((await spool.sweep()).deleted).toBe(2);
    expect(seen.filter((e) => e.type === 'message.removed')).toEqual(
      ids.map((id) => ({ type: 'message.removed', id, queue: 'jobs', from: 'done', reason: 'swept', at: expect.any(Number) })),
    );
  });

  it('a bulk requeue announces each moved message', async () => {
    const spool = spools.open({ config: { queueDefaults: { maxAttempts: 1 } } });
    spool.register('jobs', () => {
      throw new Error('no');
    });
    await spool.start();
    const dead = reached(spool.events$, 'dead', 3, 'jobs');
    const ids = await spool.sendBatch('jobs', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    await dead;
    await spool.stop();
    const seen: SpoolEvent[] = [];
    spool.events$.subscribe((e) => seen.push(e));
    expect(await spool.requeue({ queue: 'jobs' })).toBe(3);
    expect(seen.map((e) => e.type === 'message.state' && `${e.id} ${e.from}→${e.to}`)).toEqual(ids.map((id) => `${id} dead→pending`));
  });
});

describe('calls during and after close()', () => {
  it('get(), stats() and settings.update() from a complete callback reject with CLOSED', async () => {
    const spool = spools.open();
    await spool.send('jobs', { n: 1 });
    const outcomes: Promise<string>[] = [];
    const code = (p: Promise<unknown>) => p.then(() => 'resolved', (e: unknown) => (isSpoolError(e) ? e.code : `raw ${String(e)}`));
    spool.events$.subscribe({
      complete: () => {
        outcomes.push(code(spool.get('x')), code(spool.stats()), code(spool.settings.update({ accepting: false })), code(spool.sweep()));
      },
    });
    await spool.close();
    expect(await Promise.all(outcomes)).toEqual(['CLOSED', 'CLOSED', 'CLOSED', 'CLOSED']);
  });

  it('a sweep racing close() rejects with CLOSED, not a raw error', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock, config: { retention: { deadMs: 1 } }, random: () => 0 });
    spool.register('jobs', () => {
      throw new Error('no');
    });
    await spool.sendBatch('jobs', Array.from({ length: 5000 }, (_, n) => ({ n })), {});
    await spool.settings.update({ queueDefaults: { maxAttempts: 1 } });
    const dead = reached(spool.events$, 'dead', 5000, 'jobs', 30_000);
    await spool.start();
    await dead;
    clock.advance(10);
    const sweeping = spool.sweep();
    const closing = spool.close();
    expect((await rejection(sweeping)).code).toBe('CLOSED');
    await closing;
  });
});

describe('handler timeouts on the monotonic clock', () => {
  it('fires a 300 ms timeout after 300 ms of elapsed time even when the wall clock steps back an hour', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock, config: { queues: { slow: { timeoutMs: 300, maxAttempts: 1 } } } });
    const gate = createGate();
    spool.register('slow', () => gate.wait());
    await spool.start();
    const processing = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.to === 'processing');
    const id = await spool.send('slow', { n: 1 });
    await processing;
    const timedOut = nextEvent(spool.events$, (e) => e.type === 'message.error' && e.id === id);
    clock.stepWall(-3_600_000);
    clock.advance(300);
    expect(await timedOut).toMatchObject({ code: 'TIMEOUT' });
    gate.open();
  });
});
