/** A queue without a consumer: NO_CONSUMER, then dead (default) or deleted (noConsumer 'delete'). */
import { describe, expect, it } from 'vitest';
import type { MessageErrorEvent, MessageStateEvent, Spool, SpoolEvent } from '../../src/index.js';
import { nextEvent, reached } from '../helpers/events.js';
import { countRows, readDb } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';

const spools = useTempSpools();

function record(spool: Spool) {
  const events: SpoolEvent[] = [];
  spool.events$.subscribe((e) => events.push(e));
  return events;
}

describe('no consumer', () => {
  it('sending to a queue without a consumer is not an error', async () => {
    const spool = spools.open();
    spool.register('email', () => {});
    await spool.start();
    const id = await spool.send('nobody-home', { x: 1 });
    expect(typeof id).toBe('string');
  });

  it('by default emits NO_CONSUMER and keeps the message as a dead letter', async () => {
    const spool = spools.open();
    spool.register('email', () => {});
    const events = record(spool);
    await spool.start();
    const dead = reached(spool.events$, 'dead', 1);
    const id = await spool.send('nobody-home', { x: 1 });
    await dead;

    const error = events.find((e): e is MessageErrorEvent => e.type === 'message.error');
    expect(error).toMatchObject({ type: 'message.error', id, queue: 'nobody-home', code: 'NO_CONSUMER' });
    expect(error!.message).toContain('nobody-home');
    const states = events.filter((e): e is MessageStateEvent => e.type === 'message.state' && e.id === id).map((e) => e.to);
    expect(states).toEqual(['pending', 'activating', 'dead']);
    // The error is announced before the transition it explains.
    expect(events.indexOf(error!)).toBeLessThan(events.findIndex((e) => e.type === 'message.state' && e.to === 'dead'));

    const info = await spool.get(id);
    expect(info).toMatchObject({ id, state: 'dead', payload: { x: 1 }, lastError: { code: 'NO_CONSUMER' } });
    expect(await spool.dead('nobody-home')).toHaveLength(1);
    expect(readDb(spools.path, (other) => other.prepare("SELECT state, json_extract(snapshot, '$.value') AS value FROM messages WHERE id = ?").get(id))).toEqual({
      state: 'dead',
      value: 'dead',
    });
  });

  it("with noConsumer 'delete' emits NO_CONSUMER and deletes the message", async () => {
    const spool = spools.open({ config: { noConsumer: 'delete' } });
    const events = record(spool);
    const id = await spool.send('nobody-home', { x: 1 });
    const gone = reached(spool.events$, 'done', 1);
    await spool.start();
    await gone;

    expect(events.find((e) => e.type === 'message.error')).toMatchObject({ id, queue: 'nobody-home', code: 'NO_CONSUMER' });
    expect(await spool.get(id)).toBeUndefined();
    expect(await spool.dead()).toEqual([]);
    expect(countRows(spools.path)).toBe(0);
  });

  it('a consumer registered before start() is used; only consumerless queues go dead', async () => {
    const spool = spools.open();
    spool.register('email', () => {});
    const done = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.queue === 'email' && e.to === 'done');
    const dead = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.queue === 'sms' && e.to === 'dead');
    await spool.send('email', 1);
    await spool.send('sms', 1);
    await spool.start();
    await Promise.all([done, dead]);
    // email's rows are done and deleted: it stays listed (a known queue), with zeros.
    expect((await spool.stats()).queues).toEqual({ email: { pending: 0, activating: 0, processing: 0, dead: 0, done: 0 }, sms: { pending: 0, activating: 0, processing: 0, dead: 1, done: 0 } });
  });

  it("with noConsumer 'keep' leaves the message pending for pull consumers, and a later handler still runs it", async () => {
    const spool = spools.open({ config: { noConsumer: 'keep' } });
    spool.register('email', () => {});
    const events = record(spool);
    await spool.start();
    const kept = await spool.send('pulled', { x: 1 });
    // A later send to a handled queue completes: the claims that ran meanwhile left 'pulled' alone.
    const done = reached(spool.events$, 'done', 1, 'email');
    await spool.send('email', { x: 2 });
    await done;
    expect(await spool.get(kept)).toMatchObject({ state: 'pending', attempt: 0 });
    expect(events.filter((e) => e.type === 'message.error')).toEqual([]);
    const consumer = spool.consumer();
    expect((await consumer.wait('pulled', { timeoutMs: 1000 }))?.id).toBe(kept);
    await consumer.end();
    await consumer.close();
  });
});
