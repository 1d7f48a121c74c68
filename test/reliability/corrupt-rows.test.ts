/**
 * Corrupt rows: a payload or a context column hand-edited into something Spool cannot read,
 * through a second connection, goes to dead with CORRUPT_ROW (a message.error event says so) while every
 * other message flows on. Covered at claim (pending rows), at boot recovery (in-flight rows), and
 * where pull consumers and SQS receives meet them (pending rows, and leases that ran out).
 */
import { describe, expect, it } from 'vitest';
import { createManualClock, type MessageErrorEvent, type SpoolEvent } from '../../src/index.js';
import { nextEvent, nextEvents, reached } from '../helpers/events.js';
import { createBaton } from '../helpers/gate.js';
import { useTempSpools } from '../helpers/spool.js';

const spools = useTempSpools();

/** A second connection, as an operator with the sqlite3 shell would have. */
function edit() {
  const conn = spools.connect();
  return {
    set(id: string, column: Column, value: unknown) {
      expect(conn.prepare(`UPDATE messages SET ${column} = ? WHERE id = ?`).run(value, id).changes).toBe(1);
    },
    row: (id: string) =>
      conn.prepare('SELECT state, snapshot, last_error AS lastError FROM messages WHERE id = ?').get(id) as
        | { state: string; snapshot: string; lastError: string | null }
        | undefined,
    integrity: () => conn.pragma('integrity_check', { simple: true }),
  };
}

type Column = 'payload' | 'failures' | 'attempt' | 'crashes' | 'visible_at' | 'lease_expires_at' | 'last_error';

/** Each corruption an operator or a bad disk could leave behind. */
const CORRUPTIONS: { name: string; column: Column; value: unknown }[] = [
  { name: 'payload that is not JSON', column: 'payload', value: '{"to": "a@b.c", ' },
  { name: 'empty payload', column: 'payload', value: '' },
  // The counts would step to NaN: once, a row like this stalled the whole queue.
  { name: 'a count that is text', column: 'failures', value: 'x' },
  { name: 'a negative count', column: 'attempt', value: -1 },
  { name: 'a fractional count', column: 'crashes', value: 1.5 },
  { name: 'a visible-at that is text', column: 'visible_at', value: 'soon' },
  { name: 'a lease deadline that is text', column: 'lease_expires_at', value: 'later' },
  { name: 'a last error that is not JSON', column: 'last_error', value: 'oops' },
  { name: 'a last error without a code', column: 'last_error', value: '{"message":"no code"}' },
];

describe('corrupt rows', () => {
  it('sends each unreadable pending row to dead with CORRUPT_ROW and runs every other message', async () => {
    // Store the backlog before the owner starts, so the corrupt rows are still pending when claimed.
    const producer = spools.open();
    const good = await Promise.all(Array.from({ length: 10 }, (_, n) => producer.send('jobs', { n })));
    const bad = await Promise.all(CORRUPTIONS.map((c) => producer.send('jobs', { corrupt: c.name })));
    const editor1 = edit();
    CORRUPTIONS.forEach((c, i) => editor1.set(bad[i]!, c.column, c.value));

    const handled: unknown[] = [];
    producer.register('jobs', (message) => {
      handled.push(message.id);
    });
    const errors = nextEvents(producer.events$, (e) => e.type === 'message.error', bad.length);
    const deadEvents = reached(producer.events$, 'dead', bad.length, 'jobs');
    const doneEvents = reached(producer.events$, 'done', good.length, 'jobs');
    await producer.start();
    const [errorList, deadList] = await Promise.all([errors, deadEvents, doneEvents]);

    expect((errorList as MessageErrorEvent[]).map((e) => [e.id, e.code]).sort()).toEqual(bad.map((id) => [id, 'CORRUPT_ROW']).sort());
    expect(deadList.map((e) => (e as { id: string }).id).sort()).toEqual([...bad].sort());
    // No corrupt message reached a handler; every good one did, once.
    expect([...handled].sort()).toEqual([...good].sort());
    for (const [i, id] of bad.entries()) {
      const info = await producer.get(id);
      expect(info, CORRUPTIONS[i]!.name).toMatchObject({ state: 'dead', lastError: { code: 'CORRUPT_ROW' } });
      // The dead row carries a readable snapshot again (the machine is the record).
      const row = editor1.row(id)!;
      expect(JSON.parse(row.snapshot).value).toBe('dead');
    }
    expect(editor1.integrity()).toBe('ok');
    // A message sent after the corrupt rows were met flows as usual.
    const after = nextEvent(producer.events$, (e) => e.type === 'message.state' && e.to === 'done');
    const id = await producer.send('jobs', { n: 'after' });
    expect(await after).toMatchObject({ id });
  });

  it('sends an in-flight row whose state is corrupt to dead at boot recovery and recovers the rest', async () => {
    const first = spools.open();
    const baton = createBaton();
    first.register('jobs', () => baton.enter());
    await first.start();
    const inflight = await Promise.all([1, 2, 3].map((n) => first.send('jobs', { n })));
    await baton.arrived(3);
    // Stop without waiting for the handlers: their rows stay in flight on disk, as after a crash.
    await first.stop({ timeoutMs: 1 });
    await first.close();

    const editor1 = edit();
    for (const id of inflight) expect(editor1.row(id)!.state).toBe('processing');
    const [victim, ...healthy] = inflight as [string, ...string[]];
    editor1.set(victim, 'failures', 'not a count');

    const second = spools.open();
    const handled: string[] = [];
    second.register('jobs', (message) => {
      handled.push(message.id);
    });
    const seen: SpoolEvent[] = [];
    const sub = second.events$.subscribe((e) => seen.push(e));
    const done = reached(second.events$, 'done', healthy.length, 'jobs');
    await second.start();
    await done;
    sub.unsubscribe();

    expect(seen.find((e) => e.type === 'spool.recovered')).toMatchObject({ pending: 2, dead: 1 });
    expect(seen.find((e) => e.type === 'message.error')).toMatchObject({ id: victim, code: 'CORRUPT_ROW' });
    expect(seen.find((e) => e.type === 'message.state' && e.id === victim)).toMatchObject({ from: 'processing', to: 'dead' });
    expect(await second.get(victim)).toMatchObject({ state: 'dead', lastError: { code: 'CORRUPT_ROW' } });
    expect(handled.sort()).toEqual([...healthy].sort());
    for (const id of healthy) expect(await second.get(id)).toBeUndefined();
    expect(editor1.integrity()).toBe('ok');
  });

  it('sends unreadable pending rows that pull consumers and receives meet to dead, and hands out the rest', async () => {
    const spool = spools.open();
    await spool.queues.create('sqs');
    const ids = await spool.sendBatch('sqs', [{ n: 0 }, { n: 1 }, { n: 2 }, { n: 3 }]);
    const owned = await spool.sendBatch('jobs', [{ n: 0 }, { n: 1 }]);
    const editor1 = edit();
    // At the head of each queue: before this fix, every later call found the same row first and
    // leased nothing, in a loop that never returned.
    editor1.set(ids[0]!, 'payload', '{"to": ');
    editor1.set(ids[1]!, 'failures', 'x');
    editor1.set(owned[0]!, 'payload', '');
    const errors = nextEvents(spool.events$, (e) => e.type === 'message.error', 3);

    const received = await spool.receive('sqs', { max: 10 });
    expect(received.map((m) => m.body)).toEqual([{ n: 2 }, { n: 3 }]);
    const consumer = spool.consumer();
    expect((await consumer.wait('jobs', { timeoutMs: 0 }))?.payload).toEqual({ n: 1 });
    await consumer.close();

    expect(((await errors) as MessageErrorEvent[]).map((e) => [e.id, e.code]).sort()).toEqual([ids[0], ids[1], owned[0]].map((id) => [id, 'CORRUPT_ROW']).sort());
    for (const id of [ids[0]!, ids[1]!, owned[0]!]) {
      expect(await spool.get(id)).toMatchObject({ state: 'dead', lastError: { code: 'CORRUPT_ROW' } });
      expect(JSON.parse(editor1.row(id)!.snapshot).value).toBe('dead');
    }
    expect(editor1.integrity()).toBe('ok');
  });

  it('sends a leased row whose lease ran out and whose state is unreadable to dead, and expires the leases behind it', async () => {
    const spool = spools.open();
    await spool.queues.create('sqs');
    const [victim, healthy] = await spool.sendBatch('sqs', [{ n: 0 }, { n: 1 }]);
    expect(await spool.receive('sqs', { max: 2, visibilityTimeoutMs: 1 })).toHaveLength(2);
    edit().set(victim!, 'attempt', -1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const error = nextEvent(spool.events$, (e) => e.type === 'message.error');
    // The next receive returns the expired leases first: the healthy one comes back, the corrupt one goes to dead.
    expect((await spool.receive('sqs', { max: 10 })).map((m) => m.id)).toEqual([healthy]);
    expect(await error).toMatchObject({ id: victim, code: 'CORRUPT_ROW' });
    expect(await spool.get(victim!)).toMatchObject({ state: 'dead', lastError: { code: 'CORRUPT_ROW' } });
  });

  it("sends an unreadable head of a message group to dead and hands out the group's next message, by pull and by push", async () => {
    const spool = spools.open();
    await spool.queues.create('f.fifo', { fifo: true });
    const pulled = [await spool.send('f.fifo', { n: 0 }, { group: 'g', key: 'k0' }), await spool.send('f.fifo', { n: 1 }, { group: 'g', key: 'k1' })];
    const pushed = [await spool.send('jobs', { n: 0 }, { group: 'g' }), await spool.send('jobs', { n: 1 }, { group: 'g' })];
    const editor1 = edit();
    editor1.set(pulled[0]!, 'payload', '{"x":');
    editor1.set(pushed[0]!, 'failures', 'x');
    expect((await spool.receive('f.fifo', { max: 10 })).map((m) => m.id)).toEqual([pulled[1]]);
    const handled = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.to === 'done');
    spool.register('jobs', () => {});
    await spool.start();
    expect(await handled).toMatchObject({ id: pushed[1] });
    for (const id of [pulled[0]!, pushed[0]!]) expect(await spool.get(id)).toMatchObject({ state: 'dead', lastError: { code: 'CORRUPT_ROW' } });
  });

  it('sends a row whose SQS attributes are unreadable to dead at receive, and hands out the rest of the batch with their receipts', async () => {
    const spool = spools.open();
    await spool.queues.create('sqs');
    const ids = await spool.sendBatch('sqs', [{ n: 0 }, { n: 1 }, { n: 2 }], { attributes: { k: { type: 'String', value: 'v' } } });
    edit().set(ids[1]!, 'attributes' as Column, '{"k":null}');
    const received = await spool.receive('sqs', { max: 10 });
    expect(received.map((m) => m.id)).toEqual([ids[0], ids[2]]);
    expect(received[0]!.attributes).toEqual({ k: { type: 'String', value: 'v' } });
    for (const m of received) await spool.deleteMessage('sqs', m.receipt);
    expect(await spool.get(ids[1]!)).toMatchObject({ state: 'dead', lastError: { code: 'CORRUPT_ROW' } });
  });

  it('sends an expired lease left in activating by hand to dead, and still expires the leases of other queues', async () => {
    const clock = createManualClock();
    const spool = spools.open({ clock });
    await spool.queues.create('x');
    await spool.queues.create('y');
    const [victim] = await spool.sendBatch('x', [{ n: 0 }]);
    const [other] = await spool.sendBatch('y', [{ n: 1 }]);
    await spool.receive('x', { visibilityTimeoutMs: 1000 });
    await spool.receive('y', { visibilityTimeoutMs: 1000 });
    edit().set(victim!, 'state' as Column, 'activating');
    clock.advance(2000);
    // Before, the machine refused the expiry in activating, and every receive failed with it.
    expect((await spool.receive('y')).map((m) => m.id)).toEqual([other]);
    expect(await spool.get(victim!)).toMatchObject({ state: 'dead', lastError: { code: 'CORRUPT_ROW' } });
  });

  it('sends a pending row that carries a lease token to dead, where it no longer heads its queue', async () => {
    const spool = spools.open();
    const [victim, ...rest] = await spool.sendBatch('jobs', [{ n: 0 }, { n: 1 }, { n: 2 }]);
    edit().set(victim!, 'lease_token' as Column, 'left-by-hand');
    const consumer = spool.consumer();
    expect((await consumer.wait('jobs', { timeoutMs: 0 }))?.id).toBe(rest[0]);
    await consumer.close();
    expect(await spool.get(victim!)).toMatchObject({ state: 'dead', lastError: { code: 'CORRUPT_ROW' } });
    const handled = reached(spool.events$, 'done', rest.length, 'jobs');
    spool.register('jobs', () => {});
    await spool.start();
    expect((await handled).map((e) => (e as { id: string }).id).sort()).toEqual([...rest].sort());
  });

  it("reads a queue's unreadable tags as none: receives, listings and sweeps go on", async () => {
    const spool = spools.open();
    await spool.queues.create('sqs', {}, { tags: { team: 'a' } });
    await spool.send('sqs', { n: 0 });
    await spool.close();
    const conn = spools.connect();
    conn.prepare("UPDATE queues SET tags = '{bad' WHERE name = 'sqs'").run();
    // A handle that reads the registry after the edit (the one before keeps what it read).
    const reader = spools.open();
    expect((await reader.queues.get('sqs')).tags).toEqual({});
    expect(await reader.receive('sqs')).toHaveLength(1);
    await expect(reader.sweep()).resolves.toBeDefined();
  });
});
