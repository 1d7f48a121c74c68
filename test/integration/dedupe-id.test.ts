/**
 * A FIFO message keeps its deduplication id (SQS MessageDeduplicationId) on its row, so `receive`
 * returns it as `dedupeId` long after the 5-minute window forgot it: the send's key as given, or
 * under contentDedupe the hex SHA-256 of the body as sent. Standard queues return none. The id
 * survives a restart, the move to a dead-letter queue and the redrive back.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readDb } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';

const spools = useTempSpools();
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe('dedupeId of a received message', () => {
  it('is the send key on a FIFO queue, as given (no internal prefix), after the window has passed', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock });
    await spool.queues.create('pay.fifo', { fifo: true, dedupeWindowMs: 300_000 });
    const id = await spool.send('pay.fifo', { amount: 10 }, { group: 'c42', key: 'tx-1' });
    clock.advance(300_001);
    const [m] = await spool.receive('pay.fifo');
    expect(m).toMatchObject({ id, group: 'c42', dedupeId: 'tx-1' });
    // get() shows it too, as the admin API and the dashboard do.
    expect(await spool.get(id)).toMatchObject({ id, group: 'c42', dedupeId: 'tx-1' });
    expect(readDb(spools.path, (c) => c.prepare('SELECT dedupe_id FROM messages WHERE seq = ?').pluck().get(Number(id)))).toBe('tx-1');
  });

  it('is the hex SHA-256 of the body as sent under contentDedupe: a string as is, any other value as JSON text', async () => {
    const spool = spools.open();
    await spool.queues.create('c.fifo', { fifo: true, contentDedupe: true });
    await spool.send('c.fifo', 'héllo wörld', { group: 'a' });
    await spool.send('c.fifo', { b: 1, a: [true, null] }, { group: 'b' });
    await spool.sendBatch('c.fifo', ['one', 'two'], { group: 'c' });
    // An explicit key wins over the body, as MessageDeduplicationId does in SQS.
    await spool.send('c.fifo', 'keyed', { group: 'd', key: 'mine' });
    const received = await spool.receive('c.fifo', { max: 10 });
    expect(Object.fromEntries(received.map((m) => [m.group, m.dedupeId]))).toEqual({
      a: sha256('héllo wörld'),
      b: sha256('{"b":1,"a":[true,null]}'),
      c: sha256('one'),
      d: 'mine',
    });
    // The batch's second message, behind the first of its group.
    await spool.deleteMessage('c.fifo', received.find((m) => m.group === 'c')!.receipt);
    const [two] = await spool.receive('c.fifo');
    expect(two).toMatchObject({ body: 'two', dedupeId: sha256('two') });
  });

  it('is absent on a standard queue, even for a send with a key (the idempotency key)', async () => {
    const spool = spools.open();
    await spool.queues.create('std');
    await spool.send('std', 'keyed', { key: 'k-1' });
    await spool.send('std', 'plain');
    const received = await spool.receive('std', { max: 10 });
    expect(received.map((m) => m.body).sort()).toEqual(['keyed', 'plain']);
    for (const m of received) {
      expect(m).not.toHaveProperty('dedupeId');
      expect(await spool.get(m.id)).not.toHaveProperty('dedupeId');
    }
  });

  it('survives a restart', async () => {
    const first = spools.open();
    await first.queues.create('pay.fifo', { fifo: true, contentDedupe: true });
    await first.send('pay.fifo', 'by key', { group: 'g', key: 'tx-9' });
    await first.send('pay.fifo', 'by body', { group: 'h' });
    await first.close();
    const second = spools.open();
    const received = await second.receive('pay.fifo', { max: 10 });
    expect(Object.fromEntries(received.map((m) => [m.body, m.dedupeId]))).toEqual({ 'by key': 'tx-9', 'by body': sha256('by body') });
  });

  it('stays with the message in its dead-letter queue and after the redrive back', async () => {
    const spool = spools.open();
    await spool.queues.create('dlq.fifo', { fifo: true });
    await spool.queues.create('src.fifo', { fifo: true, deadLetter: { queue: 'dlq.fifo', maxReceiveCount: 1 } });
    const id = await spool.send('src.fifo', 'poison', { group: 'g', key: 'p-1' });
    const [once] = await spool.receive('src.fifo', { visibilityTimeoutMs: 0 });
    expect(once).toMatchObject({ id, dedupeId: 'p-1' });
    // The second hand-out would pass maxReceiveCount: the message moves to the dead-letter queue.
    expect(await spool.receive('src.fifo')).toEqual([]);
    const [dead] = await spool.receive('dlq.fifo');
    expect(dead).toMatchObject({ id, sourceQueue: 'src.fifo', dedupeId: 'p-1' });
    await spool.changeVisibility('dlq.fifo', dead!.receipt, 0);
    expect(await spool.queues.redrive('dlq.fifo')).toMatchObject({ moved: 1 });
    const [back] = await spool.receive('src.fifo');
    expect(back).toMatchObject({ id, dedupeId: 'p-1' });
  });
});
