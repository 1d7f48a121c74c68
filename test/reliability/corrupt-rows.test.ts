/**
 * Corrupt rows: a payload or snapshot hand-edited into something Spool cannot read, through a
 * second connection, goes to dead with CORRUPT_ROW (a message.error event says so) while every
 * other message flows on. Covered at claim (pending rows) and at boot recovery (in-flight rows).
 */
import { describe, expect, it } from 'vitest';
import type { MessageErrorEvent, SpoolEvent } from '../../src/index.js';
import { nextEvent, nextEvents, reached } from '../helpers/events.js';
import { createBaton } from '../helpers/gate.js';
import { useTempSpools } from '../helpers/spool.js';

const spools = useTempSpools();

/** A second connection, as an operator with the sqlite3 shell would have. */
function edit() {
  const conn = spools.connect();
  return {
    set(id: string, column: 'payload' | 'snapshot', value: string) {
      expect(conn.prepare(`UPDATE messages SET ${column} = ? WHERE id = ?`).run(value, id).changes).toBe(1);
    },
    row: (id: string) =>
      conn.prepare('SELECT state, snapshot, last_error AS lastError FROM messages WHERE id = ?').get(id) as
        | { state: string; snapshot: string; lastError: string | null }
        | undefined,
    integrity: () => conn.pragma('integrity_check', { simple: true }),
  };
}

/** Each corruption an operator or a bad disk could leave behind. */
const CORRUPTIONS: { name: string; column: 'payload' | 'snapshot'; value: string }[] = [
  { name: 'payload that is not JSON', column: 'payload', value: '{"to": "a@b.c", ' },
  { name: 'empty payload', column: 'payload', value: '' },
  { name: 'snapshot that is not JSON', column: 'snapshot', value: 'not a snapshot' },
  { name: 'snapshot that is JSON null', column: 'snapshot', value: 'null' },
  { name: 'snapshot of an unknown version', column: 'snapshot', value: JSON.stringify({ v: 99, value: 'pending', context: {} }) },
  { name: 'snapshot whose state disagrees with the row', column: 'snapshot', value: JSON.stringify({ v: 1, value: 'dead', status: 'active', context: {} }) },
  { name: 'snapshot without a context', column: 'snapshot', value: JSON.stringify({ v: 1, value: 'pending', status: 'active' }) },
  // Well-formed at the top level, but the counts would step to NaN: once, this stalled the queue.
  { name: 'snapshot with an empty context', column: 'snapshot', value: JSON.stringify({ v: 1, value: 'pending', status: 'active', context: {} }) },
  {
    name: 'snapshot with a mistyped count',
    column: 'snapshot',
    value: JSON.stringify({
      v: 1,
      value: 'pending',
      status: 'active',
      context: { failures: 'x', attempt: 0, deliveries: 0, crashes: 0, visibleAt: 0, leaseExpiresAt: null, lastError: null },
    }),
  },
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

  it('sends an in-flight row whose snapshot is corrupt to dead at boot recovery and recovers the rest', async () => {
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
    editor1.set(victim, 'snapshot', '{"v":1,"value":"processing","context":');

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
});
