/** Send to done on a real temp file: the event order, the handler's message, get/stats/watch. */
import { firstValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { Message, MessageStateEvent, SpoolEvent } from '../../src/index.js';
import { nextEvent, reached } from '../helpers/events.js';
import { createGate } from '../helpers/gate.js';
import { readDb } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';

const spools = useTempSpools();

describe('send → done', () => {
  it('announces null→pending, pending→activating, activating→processing, processing→done in order', async () => {
    const spool = spools.open();
    const seen: Message[] = [];
    spool.register('email', async (message) => {
      seen.push(message);
    });
    const events: SpoolEvent[] = [];
    spool.events$.subscribe((e) => events.push(e));
    await spool.start();
    const done = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.to === 'done');
    const before = Date.now();
    const id = await spool.send('email', { to: 'a@b.c' });
    await done;

    const transitions = events
      .filter((e): e is MessageStateEvent => e.type === 'message.state' && e.id === id)
      .map((e) => [e.from, e.to]);
    expect(transitions).toEqual([
      [null, 'pending'],
      ['pending', 'activating'],
      ['activating', 'processing'],
      ['processing', 'done'],
    ]);
    expect(events.filter((e) => e.type === 'message.error')).toEqual([]);
    const stateEvents = events.filter((e): e is MessageStateEvent => e.type === 'message.state');
    for (const e of stateEvents) {
      expect(e.queue).toBe('email');
      expect(typeof e.at).toBe('number');
    }
    expect(stateEvents.slice(1).every((e) => e.attempt === 1)).toBe(true);

    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ id, queue: 'email', payload: { to: 'a@b.c' }, attempt: 1, deliveries: 1 });
    expect(seen[0]!.createdAt).toBeGreaterThanOrEqual(before - 1);
    expect(seen[0]!.createdAt).toBeLessThanOrEqual(Date.now());
    expect(await spool.get(id)).toBeUndefined();
  });

  it('get() shows a message while it is in flight', async () => {
    const spool = spools.open();
    const gate = createGate();
    spool.register('email', () => gate.wait());
    await spool.start();
    const processing = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.to === 'processing');
    const id = await spool.send('email', { n: 1 }, { priority: 5 });
    await processing;
    expect(await spool.get(id)).toMatchObject({ id, queue: 'email', state: 'processing', payload: { n: 1 }, attempt: 1, deliveries: 1, priority: 5 });
    const done = reached(spool.events$, 'done', 1);
    gate.open();
    await done;
    expect(await spool.get(id)).toBeUndefined();
  });

  it('stats() reports every known queue, with all counts including zeros (a drained one too)', async () => {
    const spool = spools.open({ config: { executor: { concurrency: 2 }, queues: { slow: { executor: { concurrency: 1 } } } } });
    const gate = createGate();
    spool.register('slow', () => gate.wait());
    const ids = await spool.sendBatch('slow', [1, 2, 3]);
    await spool.send('orphan', { x: 1 });
    await spool.send('later', { x: 1 }, { delayMs: 60_000 });
    expect(ids).toHaveLength(3);

    const idle = await spool.stats();
    expect(idle).toEqual({
      accepting: true,
      queues: {
        slow: { pending: 3, activating: 0, processing: 0, dead: 0, done: 0 },
        orphan: { pending: 1, activating: 0, processing: 0, dead: 0, done: 0 },
        later: { pending: 1, activating: 0, processing: 0, dead: 0, done: 0 },
      },
      pools: { default: { concurrency: 2, active: 0 }, byQueue: { slow: { concurrency: 1, active: 0 } } },
      control: {},
    });

    const orphanDead = reached(spool.events$, 'dead', 1, 'orphan');
    const processing = reached(spool.events$, 'processing', 1, 'slow');
    await spool.start();
    await Promise.all([orphanDead, processing]);
    const busy = await spool.stats();
    expect(busy.queues).toEqual({
      slow: { pending: 2, activating: 0, processing: 1, dead: 0, done: 0 },
      orphan: { pending: 0, activating: 0, processing: 0, dead: 1, done: 0 },
      later: { pending: 1, activating: 0, processing: 0, dead: 0, done: 0 },
    });
    expect(busy.pools).toEqual({ default: { concurrency: 2, active: 0 }, byQueue: { slow: { concurrency: 1, active: 1 } } });

    const allDone = reached(spool.events$, 'done', 3, 'slow');
    gate.open();
    await allDone;
    const after = await spool.stats();
    // Done rows are deleted (retention.doneMs 0): a drained queue has no rows and is listed with zeros.
    expect(after.queues.slow).toEqual({ pending: 0, activating: 0, processing: 0, dead: 0, done: 0 });
    expect(after.queues.orphan).toEqual({ pending: 0, activating: 0, processing: 0, dead: 1, done: 0 });
  });
});

describe('watch(id)', () => {
  it('emits the current state, then every change, and completes at done', async () => {
    const spool = spools.open();
    const gate = createGate();
    spool.register('email', () => gate.wait());
    const id = await spool.send('email', { to: 'a@b.c' });
    const states = firstValueFrom(spool.watch(id).pipe(toArray()));
    const processing = reached(spool.events$, 'processing', 1);
    await spool.start();
    await processing;
    gate.open();
    expect(await states).toEqual(['pending', 'activating', 'processing', 'done']);
  });

  it('opened from an events$ subscriber at the send, never goes back to a state the row already left', async () => {
    // The send and its claim commit together: the row reads processing while the claim's two
    // announcements are still to come. They were replayed: processing, activating, processing.
    const spool = spools.open();
    spool.register('email', () => {});
    await spool.start();
    const seen: string[] = [];
    spool.events$.subscribe((e) => {
      if (e.type === 'message.state' && e.from === null) spool.watch(e.id).subscribe((s) => seen.push(s));
    });
    const done = reached(spool.events$, 'done', 1);
    await spool.send('email', 1);
    await done;
    expect(seen.at(-1)).toBe('done');
    const order = ['pending', 'activating', 'processing', 'done'];
    expect(seen.map((s) => order.indexOf(s))).toEqual([...new Set(seen.map((s) => order.indexOf(s)))].sort());
  });

  it('completes at once for an unknown id', async () => {
    const spool = spools.open();
    const values = await firstValueFrom(spool.watch('no-such-id').pipe(toArray()));
    expect(values).toEqual([]);
  });

  it('completes at once for a finished id', async () => {
    const spool = spools.open();
    spool.register('email', () => {});
    await spool.start();
    const done = reached(spool.events$, 'done', 1);
    const id = await spool.send('email', 1);
    await done;
    expect(await firstValueFrom(spool.watch(id).pipe(toArray()))).toEqual([]);
  });

  it('emits a dead letter and completes', async () => {
    const spool = spools.open();
    const dead = reached(spool.events$, 'dead', 1);
    const id = await spool.send('nobody', 1);
    await spool.start();
    await dead;
    expect(await firstValueFrom(spool.watch(id).pipe(toArray()))).toEqual(['dead']);
  });
});

describe('send() durability', () => {
  it('resolves only after the row is committed: a second connection sees it before start()', async () => {
    const spool = spools.open();
    const id = await spool.send('email', { to: 'a@b.c' }, { priority: 3 });
    const row = readDb(spools.path, (other) => other.prepare('SELECT id, queue, state, payload, priority, attempt, deliveries FROM messages WHERE id = ?').get(id));
    expect(row).toEqual({ id, queue: 'email', state: 'pending', payload: '{"to":"a@b.c"}', priority: 3, attempt: 0, deliveries: 0 });
  });

  it('sendBatch() commits every row before it resolves, ids in order', async () => {
    const spool = spools.open();
    const ids = await spool.sendBatch('email', [{ n: 0 }, { n: 1 }, { n: 2 }]);
    const rows = readDb(spools.path, (other) => other.prepare('SELECT id, payload FROM messages ORDER BY seq').all());
    expect(rows).toEqual(ids.map((id, n) => ({ id, payload: JSON.stringify({ n }) })));
  });
});
