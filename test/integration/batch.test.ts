/** sendBatch: ids in order, the options on every item, and all of the batch stored or none of it. */
import { describe, expect, it } from 'vitest';
import { isSpoolError } from '../../src/index.js';
import { reached } from '../helpers/events.js';
import { readDb } from '../helpers/read-db.js';
import { queueTotal, useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';

const spools = useTempSpools();

function setup(config: Record<string, unknown> = {}) {
  const clock = createTestClock();
  return { spool: spools.open({ clock, config }), clock };
}

describe('sendBatch', () => {
  it('resolves to the ids in payload order, and they run in that order', async () => {
    const { spool } = setup({ executor: { concurrency: 1 } });
    const payloads = Array.from({ length: 20 }, (_, n) => ({ n }));
    const ids = await spool.sendBatch('jobs', payloads);
    expect(ids).toHaveLength(20);
    expect(new Set(ids).size).toBe(20);
    for (let n = 0; n < 20; n++) expect(await spool.get(ids[n]!)).toMatchObject({ id: ids[n], state: 'pending', payload: { n } });

    const ran: string[] = [];
    spool.register('jobs', (message) => {
      ran.push(message.id);
    });
    const done = reached(spool.events$, 'done', 20);
    await spool.start();
    await done;
    expect(ran).toEqual(ids);
  });

  it('stores each message as a send of its own would, in chunks or not', async () => {
    const { spool } = setup();
    // 37 rows: two chunks of Repository.insertMany and a tail of single-row inserts.
    const payloads = Array.from({ length: 37 }, (_, n) => ({ n, text: `item ${n}` }));
    const batch = await spool.sendBatch('batch', payloads, { priority: 2, delayMs: 250 });
    const single: string[] = [];
    for (const payload of payloads) single.push(await spool.send('single', payload, { priority: 2, delayMs: 250 }));
    // Every column but the seq, the id and the queue, read back from the file.
    const rows = (ids: string[]) =>
      readDb(spools.path, (conn) => {
        const read = conn.prepare('SELECT * FROM messages WHERE id = ?');
        return ids.map((id) => {
          const { seq: _seq, id: _id, queue: _queue, ...rest } = read.get(id) as Record<string, unknown>;
          return rest;
        });
      });
    expect(batch.map(Number)).toEqual(batch.map((_, i) => Number(batch[0]) + i));
    const stored = rows(batch);
    expect(stored).toEqual(rows(single));
    expect(stored.map((row) => JSON.parse(row.payload as string))).toEqual(payloads);
    expect(stored[0]).toMatchObject({ state: 'pending', priority: 2, ready: 0, head: 1 });
    expect(stored[0]!.history).not.toBeNull();
  });

  it('applies the options to every item', async () => {
    const { spool, clock } = setup();
    const ids = await spool.sendBatch('jobs', [{ a: 1 }, { a: 2 }, { a: 3 }], { priority: 4, delayMs: 500 });
    for (const id of ids) expect(await spool.get(id)).toMatchObject({ priority: 4, visibleAt: clock.now() + 500 });
  });

  it('announces each new message after the commit, in order', async () => {
    const { spool } = setup();
    const announced: string[] = [];
    spool.events$.subscribe((e) => e.type === 'message.state' && e.from === null && announced.push(e.id));
    const ids = await spool.sendBatch('jobs', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(announced).toEqual(ids);
  });

  it('resolves an empty batch to [] and refuses a non-array', async () => {
    const { spool } = setup();
    expect(await spool.sendBatch('jobs', [])).toEqual([]);
    await expect(spool.sendBatch('jobs', { n: 1 } as unknown as unknown[])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await queueTotal(spool, 'jobs')).toBe(0);
  });

  it('stores nothing when one item is invalid, and names the item', async () => {
    const { spool } = setup();
    await spool.send('jobs', { before: true });
    const error = await spool.sendBatch('jobs', [{ n: 0 }, { n: 1, bad: undefined }, { n: 2 }]).catch((e: unknown) => e);
    expect(isSpoolError(error, 'INVALID_PAYLOAD')).toBe(true);
    expect(error).toMatchObject({ details: { index: 1 } });
    expect((error as Error).message).toMatch(/^Item 1: /);
    expect(await queueTotal(spool, 'jobs')).toBe(1);
  });

  it('stores nothing when the batch would overflow maxPending part-way (QUEUE_FULL)', async () => {
    const { spool } = setup({ queues: { jobs: { maxPending: 5 } } });
    await spool.sendBatch('jobs', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const announced: string[] = [];
    spool.events$.subscribe((e) => e.type === 'message.state' && e.from === null && announced.push(e.id));
    // Two of the four would fit; the third fails, so the first two must roll back too.
    const error = await spool.sendBatch('jobs', [{ n: 4 }, { n: 5 }, { n: 6 }, { n: 7 }]).catch((e: unknown) => e);
    expect(isSpoolError(error, 'QUEUE_FULL')).toBe(true);
    expect(error).toMatchObject({ details: { queue: 'jobs', maxPending: 5 } });
    // The message counts the batch's own rows, which the rollback does not store.
    expect((error as Error).message).toBe('Queue "jobs" would hold 6 pending or in-flight messages with the 2 new of this batch (which stores none of them); maxPending is 5');
    expect(await queueTotal(spool, 'jobs')).toBe(3);
    expect(announced).toEqual([]);
    // A batch that fits exactly is stored whole.
    expect(await spool.sendBatch('jobs', [{ n: 4 }, { n: 5 }])).toHaveLength(2);
    expect(await queueTotal(spool, 'jobs')).toBe(5);
  });

  it('a failed batch does not affect sends committed beside it', async () => {
    const { spool } = setup({ queues: { jobs: { maxPending: 2 } } });
    // Issued together, so they share one group commit; only the batch's own savepoint rolls back.
    const [single, batch, other] = await Promise.allSettled([
      spool.send('jobs', { n: 1 }),
      spool.sendBatch('jobs', [{ n: 2 }, { n: 3 }]),
      spool.send('other', { n: 4 }),
    ]);
    expect(single.status).toBe('fulfilled');
    expect(batch.status).toBe('rejected');
    expect(other.status).toBe('fulfilled');
    expect(await queueTotal(spool, 'jobs')).toBe(1);
    expect(await queueTotal(spool, 'other')).toBe(1);
  });
});
