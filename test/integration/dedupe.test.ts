/** Idempotency keys and content dedup: one live message per key (or per payload) and queue. */
import { describe, expect, it } from 'vitest';
import { NonRetryableError, type SpoolEvent } from '../../src/index.js';
import { nextEvent, reached } from '../helpers/events.js';
import { createGate } from '../helpers/gate.js';
import { queueTotal, useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';

const spools = useTempSpools();

function setup(config: Record<string, unknown> = {}) {
  const spool = spools.open({ clock: createTestClock(), config });
  const sent: string[] = [];
  spool.events$.subscribe((e) => e.type === 'message.state' && e.from === null && sent.push(e.id));
  return { spool, sent };
}

const stateOf = (id: string, to: string) => (e: SpoolEvent) => e.type === 'message.state' && e.id === id && e.to === to;
const anyTo = (to: string) => (e: SpoolEvent) => e.type === 'message.state' && e.to === to;

describe('idempotency key', () => {
  it('resolves a second send with the same key to the existing id and stores nothing new', async () => {
    const { spool, sent } = setup();
    const first = await spool.send('email', { to: 'a' }, { key: 'order-1' });
    const second = await spool.send('email', { to: 'changed' }, { key: 'order-1' });
    expect(second).toBe(first);
    expect(sent).toEqual([first]);
    expect(await queueTotal(spool, 'email')).toBe(1);
    // The first payload stands.
    expect((await spool.get(first))!.payload).toEqual({ to: 'a' });
    // Keys are per queue, and other keys are distinct messages.
    const otherQueue = await spool.send('sms', { to: 'a' }, { key: 'order-1' });
    const otherKey = await spool.send('email', { to: 'a' }, { key: 'order-2' });
    expect(new Set([first, otherQueue, otherKey]).size).toBe(3);
  });

  it('holds the key while the message is in flight', async () => {
    const { spool } = setup();
    const gate = createGate();
    spool.register('email', () => gate.wait());
    await spool.start();
    const started = nextEvent(spool.events$, anyTo('processing'));
    const id = await spool.send('email', {}, { key: 'k' });
    await started;
    expect(await spool.send('email', {}, { key: 'k' })).toBe(id);
    const done = nextEvent(spool.events$, stateOf(id, 'done'));
    gate.open();
    await done;
  });

  it('frees the key once the message is done', async () => {
    // Done rows kept as history must not hold the key either.
    const { spool } = setup({ retention: { doneMs: 60_000 } });
    spool.register('email', () => undefined);
    await spool.start();
    const settled = nextEvent(spool.events$, anyTo('done'));
    const first = await spool.send('email', { n: 1 }, { key: 'k' });
    await settled;
    expect((await spool.get(first))!.state).toBe('done');
    const again = await spool.send('email', { n: 2 }, { key: 'k' });
    expect(again).not.toBe(first);
    expect((await spool.get(again))!.payload).toEqual({ n: 2 });
  });

  it('frees the key once the message is dead', async () => {
    const { spool } = setup();
    spool.register('email', () => {
      throw new NonRetryableError('no');
    });
    await spool.start();
    const settled = nextEvent(spool.events$, anyTo('dead'));
    const first = await spool.send('email', { n: 1 }, { key: 'k' });
    await settled;
    await spool.stop();
    const again = await spool.send('email', { n: 2 }, { key: 'k' });
    expect(again).not.toBe(first);
    expect(await spool.get(first)).toMatchObject({ state: 'dead' });
    expect(await spool.get(again)).toMatchObject({ state: 'pending' });
  });

  it('requeue leaves a dead letter dead while a live message holds its key, and moves the rest', async () => {
    const { spool } = setup();
    spool.register('email', () => {
      throw new NonRetryableError('no');
    });
    await spool.start();
    const settled = reached(spool.events$, 'dead', 2);
    const [keyed, plain] = [await spool.send('email', { n: 1 }, { key: 'k' }), await spool.send('email', { n: 2 })];
    await settled;
    await spool.stop();
    const holder = await spool.send('email', { n: 3 }, { key: 'k' });
    expect(await spool.requeue({ queue: 'email' })).toBe(1);
    expect(await spool.get(keyed)).toMatchObject({ state: 'dead' });
    expect(await spool.get(plain)).toMatchObject({ state: 'pending' });
    expect(await spool.get(holder)).toMatchObject({ state: 'pending' });
    expect(await spool.requeue(keyed)).toBe(0);
  });

  it('dedupes within one batch', async () => {
    const { spool } = setup();
    const ids = await spool.sendBatch('email', [{ n: 1 }, { n: 2 }], { key: 'same' });
    expect(ids[1]).toBe(ids[0]);
    expect(await queueTotal(spool, 'email')).toBe(1);
  });
});

describe('content dedup', () => {
  it('treats an identical payload, keys in any order, as the same pending message', async () => {
    const { spool, sent } = setup({ queues: { report: { dedupe: 'content' } } });
    const first = await spool.send('report', { user: 7, range: { from: 1, to: 2 }, tags: ['a', 'b'] });
    const same = await spool.send('report', { tags: ['a', 'b'], range: { to: 2, from: 1 }, user: 7 });
    expect(same).toBe(first);
    expect(sent).toEqual([first]);
    // Array order is content, so a reordered array is another message.
    const otherArray = await spool.send('report', { user: 7, range: { from: 1, to: 2 }, tags: ['b', 'a'] });
    const otherValue = await spool.send('report', { user: 8, range: { from: 1, to: 2 }, tags: ['a', 'b'] });
    expect(new Set([first, otherArray, otherValue]).size).toBe(3);
    expect(await queueTotal(spool, 'report')).toBe(3);
  });

  it('applies per queue: other queues keep every copy', async () => {
    const { spool } = setup({ queues: { report: { dedupe: 'content' } } });
    const a = await spool.send('plain', { x: 1 });
    const b = await spool.send('plain', { x: 1 });
    expect(a).not.toBe(b);
    const c = await spool.send('report', { x: 1 });
    const d = await spool.send('report', { x: 1 });
    expect(c).toBe(d);
  });

  it('holds while in flight and frees the content once done', async () => {
    const { spool } = setup({ queues: { report: { dedupe: 'content' } } });
    const gate = createGate();
    let runs = 0;
    spool.register('report', async () => {
      runs += 1;
      await gate.wait();
    });
    await spool.start();
    const started = nextEvent(spool.events$, anyTo('processing'));
    const id = await spool.send('report', { a: 1, b: 2 });
    await started;
    expect(await spool.send('report', { b: 2, a: 1 })).toBe(id);
    const done = nextEvent(spool.events$, stateOf(id, 'done'));
    gate.open();
    await done;
    const nextDone = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.id !== id && e.to === 'done');
    const next = await spool.send('report', { a: 1, b: 2 });
    expect(next).not.toBe(id);
    await nextDone;
    expect(runs).toBe(2);
  });

  it('follows a live change of the setting for later sends', async () => {
    const { spool } = setup();
    expect(await spool.send('report', { x: 1 })).not.toBe(await spool.send('report', { x: 1 }));
    await spool.settings.update({ queues: { report: { dedupe: 'content' } } });
    const a = await spool.send('report', { y: 1 });
    expect(await spool.send('report', { y: 1 })).toBe(a);
  });
});
