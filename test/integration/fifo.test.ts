/**
 * Message groups (issue 12 §4): in send order, one at a time per group, for push handlers at any
 * pool size and for pull consumers; a retry or a delay holds the group back and goes first; FIFO
 * queues require groups, refuse per-message delays and priorities, and deduplicate within a
 * window that outlives the message. The claim stays on its index.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { CANDIDATES_SQL } from '../../src/db/repository.js';
import { NonRetryableError } from '../../src/index.js';
import { rejection } from '../helpers/errors.js';
import { createBaton } from '../helpers/gate.js';
import { reached } from '../helpers/events.js';
import { readDb } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';

const spools = useTempSpools();

describe('message groups', () => {
  it('run in send order, one at a time per group, under a pool of 8 with retries', async () => {
    const spool = spools.open({
      config: { executor: { concurrency: 8 }, queues: { jobs: { maxAttempts: 3, backoff: { type: 'fixed', delayMs: 0, maxDelayMs: 0, jitter: false } } } },
    });
    const running = new Map<string, number>();
    const order = new Map<string, number[]>();
    let overlap = 0;
    const failedOnce = new Set<number>();
    spool.register<{ g: string; n: number }>('jobs', async (m) => {
      const { g, n } = m.payload;
      running.set(g, (running.get(g) ?? 0) + 1);
      if (running.get(g)! > 1) overlap += 1;
      await new Promise((resolve) => setImmediate(resolve));
      running.set(g, running.get(g)! - 1);
      // Every third message fails its first attempt: its retry must go before the next one.
      if (n % 3 === 0 && !failedOnce.has(n)) {
        failedOnce.add(n);
        throw new Error('once');
      }
      order.set(g, [...(order.get(g) ?? []), n]);
    });
    const groups = ['a', 'b', 'c', 'd'];
    const done = reached(spool.events$, 'done', 80, 'jobs', 20_000);
    for (let n = 0; n < 20; n++) for (const g of groups) await spool.send('jobs', { g, n }, { group: g });
    await spool.start();
    await done;
    expect(overlap).toBe(0);
    for (const g of groups) expect(order.get(g)).toEqual(Array.from({ length: 20 }, (_, n) => n));
  });

  it('hand out to pull consumers one at a time per group; different groups in parallel', async () => {
    const spool = spools.open();
    await spool.queues.create('q.fifo', { fifo: true, contentDedupe: true });
    for (let n = 0; n < 3; n++) for (const g of ['x', 'y']) await spool.send('q.fifo', { g, n }, { group: g });
    const first = await spool.receive('q.fifo', { max: 10 });
    expect(first.map((m) => m.body)).toEqual([{ g: 'x', n: 0 }, { g: 'y', n: 0 }]);
    expect(await spool.receive('q.fifo', { max: 10 })).toEqual([]);
    await spool.deleteMessage('q.fifo', first[0]!.receipt);
    const next = await spool.receive('q.fifo', { max: 10 });
    expect(next.map((m) => m.body)).toEqual([{ g: 'x', n: 1 }]);
    // Returned unfinished, the head goes first again.
    await spool.changeVisibility('q.fifo', first[1]!.receipt, 0);
    expect((await spool.receive('q.fifo', { max: 10 })).map((m) => m.body)).toEqual([{ g: 'y', n: 0 }]);
    expect(first[0]!.sequence).toBeLessThan(first[1]!.sequence);
  });

  it('a delayed message holds back the rest of its group', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock });
    await spool.send('jobs', { n: 0 }, { group: 'g', delayMs: 1000 });
    await spool.send('jobs', { n: 1 }, { group: 'g' });
    const consumer = spool.consumer();
    expect(await consumer.wait('jobs', { timeoutMs: 0 })).toBeNull();
    clock.advance(1000);
    expect((await consumer.wait('jobs', { timeoutMs: 0 }))?.payload).toEqual({ n: 0 });
    expect((await consumer.wait('jobs', { timeoutMs: 0 }))?.payload).toEqual({ n: 1 });
  });

  it('a head that goes dead for want of a consumer lets the next of its group go the same way, at once', async () => {
    // A poll an hour apart: the next head must be claimed because its group moved, not by a poll.
    const spool = spools.open({ config: { processor: { pollIntervalMs: 3_600_000 } } });
    const ids: string[] = [];
    for (let n = 0; n < 3; n++) ids.push(await spool.send('orphan', { n }, { group: 'g' }));
    const dead = reached(spool.events$, 'dead', 3, 'orphan');
    await spool.start();
    // Each dead head promotes the next, which the claim finds without a consumer too.
    expect((await dead).map((e) => (e as { id: string }).id)).toEqual(ids);
    expect(readDb(spools.path, (c) => c.prepare(`SELECT count(*) AS n FROM messages WHERE state = 'pending'`).get())).toEqual({ n: 0 });
  });

  it('a requeued dead letter waits for the message of its group in flight, then goes by its send order', async () => {
    const spool = spools.open({ config: { executor: { concurrency: 4 } } });
    const baton = createBaton();
    const order: string[] = [];
    spool.register<{ n: number }>('jobs', async (m) => {
      if (m.payload.n === 0) return; // group h: it only makes the queue claim again
      order.push(`start ${m.payload.n}`);
      if (m.payload.n === 1 && m.deliveries === 1) throw new NonRetryableError('first time');
      if (m.payload.n === 2) await baton.enter();
      order.push(`end ${m.payload.n}`);
    });
    const [first, , third] = await spool.sendBatch('jobs', [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }], { group: 'g' });
    const dead = reached(spool.events$, 'dead', 1, 'jobs');
    await spool.start();
    await dead;
    await baton.arrived(1);
    // Back to life while message 2 of its group is in flight: it must not run beside it, nor
    // once a message waiting behind it is deleted (that must not promote it either).
    expect(await spool.requeue(first!)).toBe(1);
    expect(await spool.remove([third!])).toBe(1);
    // The queue has claimed since (a message of another group came and went): still only 1 and 2.
    const otherDone = reached(spool.events$, 'done', 1, 'jobs');
    await spool.send('jobs', { n: 0 }, { group: 'h' });
    await otherDone;
    expect(order).toEqual(['start 1', 'start 2']);
    const done = reached(spool.events$, 'done', 2, 'jobs');
    baton.openForever();
    await done;
    expect(order).toEqual(['start 1', 'start 2', 'end 2', 'start 1', 'end 1', 'start 4', 'end 4']);
  });

  it('requeues the dead letters of one group writing a head flag a handful of times, not once per live row each', async () => {
    const spool = spools.open();
    const n = 300;
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push(await spool.send('orphan', { i }, { group: 'g' }));
    const dead = reached(spool.events$, 'dead', n, 'orphan', 20_000);
    await spool.start();
    await dead;
    await spool.stop();
    // Counts every write of the head column from here on.
    const writer = new Database(spools.path);
    writer.exec(`CREATE TABLE head_writes (n INTEGER); INSERT INTO head_writes VALUES (0);
      CREATE TRIGGER count_head_writes AFTER UPDATE OF head ON messages BEGIN UPDATE head_writes SET n = n + 1; END;`);
    writer.close();
    expect(await spool.requeue({ queue: 'orphan' })).toBe(n);
    const writes = readDb(spools.path, (c) => c.prepare('SELECT n FROM head_writes').get()) as { n: number };
    // Re-deciding the whole group at each revival wrote about n²/2 (45,000) head flags.
    expect(writes.n).toBeLessThan(n);
    // Exactly one head, the oldest.
    const heads = readDb(spools.path, (c) => c.prepare(`SELECT seq FROM messages WHERE grp = 'g' AND head = 1`).all()) as { seq: number }[];
    const oldest = readDb(spools.path, (c) => c.prepare(`SELECT min(seq) AS seq FROM messages WHERE grp = 'g'`).get()) as { seq: number };
    expect(heads).toEqual([oldest]);
  });

  it('keeps the claim on its partial index (no scan, no temp B-tree)', async () => {
    const spool = spools.open();
    await spool.send('jobs', { n: 1 }, { group: 'g' });
    const plan = readDb(spools.path, (c) => c.prepare(`EXPLAIN QUERY PLAN ${CANDIDATES_SQL}`).all('jobs', 10) as { detail: string }[]);
    expect(plan.map((p) => p.detail).join(' | ')).toMatch(/USING INDEX messages_claim/);
    expect(plan.map((p) => p.detail).join(' | ')).not.toMatch(/SCAN|TEMP B-TREE/);
  });
});

/** A spool with src.fifo (content dedupe), whose messages move to dlq.fifo on their second hand-out. */
async function withDeadLetterQueue() {
  const spool = spools.open();
  await spool.queues.create('dlq.fifo', { fifo: true });
  await spool.queues.create('src.fifo', { fifo: true, contentDedupe: true, deadLetter: { queue: 'dlq.fifo', maxReceiveCount: 1 } });
  return spool;
}

describe('FIFO queues', () => {
  it('require a group and a deduplication id (unless contentDedupe), and refuse delays and priorities', async () => {
    const spool = spools.open();
    await spool.queues.create('p.fifo', { fifo: true });
    const cases: [string, object | undefined][] = [
      ['no group', { key: 'k' }],
      ['no key without contentDedupe', { group: 'g' }],
      ['a per-message delay', { group: 'g', key: 'k', delayMs: 5 }],
      ['a priority', { group: 'g', key: 'k', priority: 3 }],
      ['a key with a space', { group: 'g', key: 'a b' }],
    ];
    for (const [name, options] of cases) expect((await rejection(spool.send('p.fifo', 'x', options))).code, name).toBe('INVALID_ARGUMENT');
    expect(await spool.receive('p.fifo')).toEqual([]);
  });

  it('deduplicates within the window from the send, whatever state the first message reached, then forgets', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock });
    await spool.queues.create('p.fifo', { fifo: true, dedupeWindowMs: 300_000 });
    const first = await spool.send('p.fifo', { order: 1 }, { group: 'g', key: 'order-1' });
    expect(await spool.send('p.fifo', { order: 1 }, { group: 'g', key: 'order-1' })).toBe(first);
    const [m] = await spool.receive('p.fifo');
    await spool.deleteMessage('p.fifo', m!.receipt);
    clock.advance(299_000);
    // Done and deleted, yet still inside its window: the same id, nothing stored.
    expect(await spool.send('p.fifo', { order: 1 }, { group: 'g', key: 'order-1' })).toBe(first);
    expect(await spool.receive('p.fifo')).toEqual([]);
    clock.advance(1_001);
    const again = await spool.send('p.fifo', { order: 1 }, { group: 'g', key: 'order-1' });
    expect(again).not.toBe(first);
    // contentDedupe: the body itself is the deduplication id.
    await spool.queues.create('c.fifo', { fifo: true, contentDedupe: true });
    const a = await spool.send('c.fifo', { same: true }, { group: 'g' });
    expect(await spool.send('c.fifo', { same: true }, { group: 'g' })).toBe(a);
    expect(await spool.send('c.fifo', { same: false }, { group: 'g' })).not.toBe(a);
  });

  it('moves a group head past maxReceiveCount to the dead-letter queue; the next of its group heads it', async () => {
    const spool = await withDeadLetterQueue();
    const poison = await spool.send('src.fifo', 'poison', { group: 'g' });
    const next = await spool.send('src.fifo', 'next', { group: 'g' });
    expect((await spool.receive('src.fifo', { max: 10, visibilityTimeoutMs: 0 })).map((m) => m.id)).toEqual([poison]);
    // Its second hand-out would pass maxReceiveCount: it moves, and the receive that moved it
    // hands out the next of its group (no empty answer while the group has a message).
    const heads = await spool.receive('src.fifo', { max: 10 });
    expect(heads.map((m) => m.id)).toEqual([next]);
    const [dead] = await spool.receive('dlq.fifo');
    expect(dead).toMatchObject({ id: poison, group: 'g', sourceQueue: 'src.fifo' });
    await spool.deleteMessage('src.fifo', heads[0]!.receipt);
    await spool.changeVisibility('dlq.fifo', dead!.receipt, 0);
    // Redriven back into its now empty group, it heads it again.
    expect(await spool.queues.redrive('dlq.fifo')).toMatchObject({ moved: 1 });
    expect((await spool.receive('src.fifo', { max: 10 })).map((m) => m.id)).toEqual([poison]);
  });

  it('a message redriven into a group that has one in flight waits for it, then goes by its send order', async () => {
    const spool = await withDeadLetterQueue();
    const poison = await spool.send('src.fifo', 'poison', { group: 'g' });
    const second = await spool.send('src.fifo', 'second', { group: 'g' });
    const third = await spool.send('src.fifo', 'third', { group: 'g' });
    expect((await spool.receive('src.fifo', { max: 10, visibilityTimeoutMs: 0 })).map((m) => m.id)).toEqual([poison]);
    const after = await spool.receive('src.fifo', { max: 1 });
    const [inFlight] = after.length > 0 ? after : await spool.receive('src.fifo', { max: 1 });
    expect(inFlight?.id).toBe(second);
    // The old, lower-sequenced message comes back while `second` is still in flight.
    expect(await spool.queues.redrive('dlq.fifo')).toMatchObject({ moved: 1 });
    // One in flight per group: nothing of g is handed out until `second` ends.
    expect(await spool.receive('src.fifo', { max: 10 })).toEqual([]);
    await spool.deleteMessage('src.fifo', inFlight!.receipt);
    // Then the group goes on in send order: the redriven message, then the one sent after it.
    const back = await spool.receive('src.fifo', { max: 10 });
    expect(back.map((m) => m.id)).toEqual([poison]);
    expect(await spool.receive('src.fifo', { max: 10 })).toEqual([]);
    await spool.deleteMessage('src.fifo', back[0]!.receipt);
    const [last] = await spool.receive('src.fifo', { max: 10 });
    expect(last?.id).toBe(third);
  });
});

describe('queues.create of a FIFO queue over a push queue of that name', () => {
  it('refuses while the name holds messages without a group (a FIFO queue would hand them out groupless), and makes it once they are gone', async () => {
    const spool = spools.open();
    const id = await spool.send('x.fifo', { n: 1 });
    const error = await rejection(spool.queues.create('x.fifo'));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toMatch(/already holds 1 message\(s\) without a message group/);
    expect(await spool.queues.list()).toEqual([]);
    expect(await spool.get(id)).toMatchObject({ state: 'pending', queue: 'x.fifo' });
    expect(await spool.purge('x.fifo', { state: 'pending' })).toBe(1);
    await spool.queues.create('x.fifo');
    expect(await spool.queues.list()).toEqual(['x.fifo']);
  });
});
