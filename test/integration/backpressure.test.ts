/** maxPending: pending plus in-flight messages of a queue are capped; a send beyond it is QUEUE_FULL. */
import { describe, expect, it } from 'vitest';
import { isSpoolError, NonRetryableError } from '../../src/index.js';
import { nextEvent, reached } from '../helpers/events.js';
import { createBaton } from '../helpers/gate.js';
import { queueTotal, useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';

const spools = useTempSpools();

function setup(config: Record<string, unknown>) {
  return { spool: spools.open({ clock: createTestClock(), config }) };
}

describe('backpressure (maxPending)', () => {
  it('counts pending and in-flight messages, rejects the next send with QUEUE_FULL and stores nothing', async () => {
    const { spool } = setup({ executor: { concurrency: 1 }, queues: { jobs: { maxPending: 3 } } });
    const baton = createBaton();
    spool.register('jobs', () => baton.enter());
    spool.register('other', () => undefined);
    await spool.start();
    for (let n = 1; n <= 3; n++) await spool.send('jobs', { n });
    await baton.arrived(1);
    expect((await spool.stats()).queues.jobs).toMatchObject({ pending: 2, processing: 1 });

    const announced: string[] = [];
    spool.events$.subscribe((e) => e.type === 'message.state' && e.from === null && announced.push(e.id));
    const error = await spool.send('jobs', { n: 4 }).catch((e: unknown) => e);
    expect(isSpoolError(error, 'QUEUE_FULL')).toBe(true);
    expect((error as Error).message).toContain('maxPending is 3');
    expect(error).toMatchObject({ details: { queue: 'jobs', maxPending: 3 } });
    expect(await queueTotal(spool, 'jobs')).toBe(3);
    expect(announced).toEqual([]);

    // Other queues are not limited by this one's cap.
    await spool.send('other', { n: 1 });

    // One message finishing makes room for one more.
    const done = reached(spool.events$, 'done', 1, 'jobs');
    baton.release();
    await done;
    await baton.arrived(2);
    await spool.send('jobs', { n: 4 });
    await expect(spool.send('jobs', { n: 5 })).rejects.toMatchObject({ code: 'QUEUE_FULL' });
    baton.openForever();
    await reached(spool.events$, 'done', 3, 'jobs');
  });

  it('answers a resend of a live message with its id even when the queue is full', async () => {
    const { spool } = setup({ queues: { jobs: { maxPending: 2, dedupe: 'content' } } });
    const keyed = await spool.send('jobs', { n: 1 }, { key: 'order-1' });
    const content = await spool.send('jobs', { a: 1, b: 2 });
    expect(await spool.send('jobs', { n: 1 }, { key: 'order-1' })).toBe(keyed);
    expect(await spool.send('jobs', { b: 2, a: 1 })).toBe(content);
    await expect(spool.send('jobs', { n: 2 }, { key: 'order-2' })).rejects.toMatchObject({ code: 'QUEUE_FULL' });
    expect(await queueTotal(spool, 'jobs')).toBe(2);
  });

  it('does not count dead letters', async () => {
    const { spool } = setup({ queues: { jobs: { maxPending: 1 } } });
    spool.register('jobs', () => {
      throw new NonRetryableError('no');
    });
    await spool.start();
    const dead = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.to === 'dead');
    await spool.send('jobs', { n: 1 });
    await dead;
    await spool.stop();
    await spool.send('jobs', { n: 2 });
    expect((await spool.stats()).queues.jobs).toMatchObject({ dead: 1, pending: 1 });
    await expect(spool.send('jobs', { n: 3 })).rejects.toMatchObject({ code: 'QUEUE_FULL' });
  });

  it('a FIFO resend within the dedupe window answers the first id even when the queue is full', async () => {
    const { spool } = setup({});
    await spool.queues.create('pay.fifo', { fifo: true });
    await spool.settings.update({ queues: { 'pay.fifo': { maxPending: 1 } } });
    const id = await spool.send('pay.fifo', { amount: 1 }, { group: 'g', key: 'tx-1' });
    // An SDK's retry of a SendMessage that was stored: the first id, not QUEUE_FULL (OverLimit).
    expect(await spool.send('pay.fifo', { amount: 1 }, { group: 'g', key: 'tx-1' })).toBe(id);
    expect(await spool.sendBatch('pay.fifo', [{ amount: 1 }], { group: 'g', key: 'tx-1' })).toEqual([id]);
    await expect(spool.send('pay.fifo', { amount: 2 }, { group: 'g', key: 'tx-2' })).rejects.toMatchObject({ code: 'QUEUE_FULL' });
    expect(await queueTotal(spool, 'pay.fifo')).toBe(1);
  });

  it('follows a live change of maxPending', async () => {
    const { spool } = setup({ queueDefaults: { maxPending: 1 } });
    await spool.send('jobs', { n: 1 });
    await expect(spool.send('jobs', { n: 2 })).rejects.toMatchObject({ code: 'QUEUE_FULL' });
    await spool.settings.update({ queues: { jobs: { maxPending: 2 } } });
    await spool.send('jobs', { n: 2 });
    await spool.settings.update({ queues: { jobs: { maxPending: 100 } } });
    for (let n = 3; n <= 10; n++) await spool.send('jobs', { n });
    expect(await queueTotal(spool, 'jobs')).toBe(10);
  });
});
