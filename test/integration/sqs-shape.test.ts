/**
 * The SQS shape of the library (issue 12 §3): queues with attributes (as settings), receive in
 * batches under a visibility timeout, delete by receipt (stale receipts fenced), change of
 * visibility, redrive to a dead-letter queue and back, message attributes, and the errors.
 */
import { describe, expect, it } from 'vitest';
import { isSpoolError, type SpoolEvent } from '../../src/index.js';
import { rejection } from '../helpers/errors.js';
import { nextEvent } from '../helpers/events.js';
import { useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';
import { until } from '../helpers/until.js';

const spools = useTempSpools();

describe('queues', () => {
  it('creates idempotently, lists by case-sensitive prefix, gets attributes and counts, updates and deletes', async () => {
    const spool = spools.open();
    const info = await spool.queues.create('orders', { visibilityTimeoutMs: 60_000 }, { tags: { team: 'a' } });
    expect(info).toMatchObject({
      name: 'orders',
      fifo: false,
      tags: { team: 'a' },
      attributes: { visibilityTimeoutMs: 60_000, delayMs: 0, receiveWaitMs: 0, maxPayloadBytes: 1_048_576, retentionMs: 345_600_000, deadLetter: null, fifo: false },
      counts: { visible: 0, inFlight: 0, delayed: 0, dead: 0 },
    });
    expect(await spool.queues.create('orders', { visibilityTimeoutMs: 60_000 })).toMatchObject({ name: 'orders' });
    expect((await rejection(spool.queues.create('orders', { visibilityTimeoutMs: 5_000 }))).code).toBe('QUEUE_EXISTS');
    await spool.queues.create('Orders-B');
    await spool.queues.create('ord_x');
    expect(await spool.queues.list({ prefix: 'ord' })).toEqual(['orders', 'ord_x'].sort());
    expect(await spool.queues.list({ prefix: 'Ord' })).toEqual(['Orders-B']);
    // Attributes are settings: live, layered, explained.
    expect(spool.settings.get().queues.orders).toMatchObject({ visibilityTimeoutMs: 60_000 });
    await spool.queues.update('orders', { visibilityTimeoutMs: 1_000, retentionMs: null });
    expect((await spool.queues.get('orders')).attributes).toMatchObject({ visibilityTimeoutMs: 1_000, retentionMs: null });
    expect(spool.settings.explain().find((e) => e.path.join('.') === 'queues.orders.visibilityTimeoutMs')).toMatchObject({ layer: 'override', value: 1_000 });
    await spool.send('orders', { n: 1 });
    await spool.send('orders', { n: 2 }, { delayMs: 60_000 });
    expect((await spool.queues.get('orders')).counts).toEqual({ visible: 1, inFlight: 0, delayed: 1, dead: 0 });
    await spool.queues.delete('orders');
    expect((await rejection(spool.queues.get('orders'))).code).toBe('QUEUE_NOT_FOUND');
    expect((await rejection(spool.receive('orders'))).code).toBe('QUEUE_NOT_FOUND');
    expect(spool.settings.get().queues.orders).toBeUndefined();
    expect((await spool.stats()).queues.orders).toBeUndefined();
  });

  it('a delete through a handle with a stale settings view still drops the queue\'s attributes; a re-create starts from the defaults', async () => {
    const a = spools.open();
    const b = spools.open();
    b.settings.get(); // b has read the settings before a created the queue
    await a.queues.create('orders', { delayMs: 5000, visibilityTimeoutMs: 1000 });
    await b.queues.delete('orders');
    expect(spools.open().settings.get().queues.orders).toBeUndefined();
    await spools.open().queues.create('orders');
    expect((await spools.open().queues.get('orders')).attributes).toMatchObject({ delayMs: 0, visibilityTimeoutMs: 30_000 });
  });

  it("get, an idempotent create and deadLetterSources see another handle's attribute changes", async () => {
    const admin = spools.open();
    const other = spools.open();
    await admin.queues.create('dlq');
    await admin.queues.create('q', { visibilityTimeoutMs: 30_000 });
    expect((await other.queues.get('q')).attributes.visibilityTimeoutMs).toBe(30_000);
    await admin.queues.update('q', { visibilityTimeoutMs: 60_000, deadLetter: { queue: 'dlq', maxReceiveCount: 3 } });
    expect((await other.queues.get('q')).attributes).toMatchObject({ visibilityTimeoutMs: 60_000, deadLetter: { queue: 'dlq', maxReceiveCount: 3 } });
    expect((await other.queues.create('q', { visibilityTimeoutMs: 60_000, deadLetter: { queue: 'dlq', maxReceiveCount: 3 } })).name).toBe('q');
    expect(await other.queues.deadLetterSources('dlq')).toEqual(['q']);
  });

  it('a create right after another handle deleted the queue makes it again, whatever this handle last saw', async () => {
    const admin = spools.open();
    const service = spools.open();
    await admin.queues.create('q');
    await admin.queues.create('r');
    expect((await service.queues.get('q')).name).toBe('q');
    expect((await service.queues.get('r')).name).toBe('r');
    await admin.queues.delete('q');
    await admin.queues.delete('r');
    // Different attributes are no QUEUE_EXISTS, and equal ones do not answer for a queue that is gone.
    expect((await service.queues.create('q', { visibilityTimeoutMs: 5000 })).attributes.visibilityTimeoutMs).toBe(5000);
    await service.queues.create('r');
    expect(await admin.queues.list()).toEqual(['q', 'r']);
    expect(await rejection(service.queues.get('gone'))).toMatchObject({ code: 'QUEUE_NOT_FOUND' });
    await admin.queues.delete('r');
    expect(await rejection(service.queues.update('r', { delayMs: 10 }))).toMatchObject({ code: 'QUEUE_NOT_FOUND' });
  });

  it('a create replaces a settings entry left under its name rather than merge into it', async () => {
    const spool = spools.open();
    await spool.settings.update({ queues: { orders: { delayMs: 5000, visibilityTimeoutMs: 1000 } } });
    await spool.queues.create('orders', { receiveWaitMs: 100 });
    expect((await spool.queues.get('orders')).attributes).toMatchObject({ delayMs: 0, visibilityTimeoutMs: 30_000, receiveWaitMs: 100 });
    expect(spool.settings.get().queues.orders).toEqual({ receiveWaitMs: 100 });
  });

  it('attributes or tags that throw when read, or a tag named __proto__, are INVALID_ARGUMENT, and change nothing', async () => {
    const spool = spools.open();
    await spool.queues.create('kept', {}, { tags: { team: 'a' } });
    const throwing = () =>
      Object.defineProperty({}, 'visibilityTimeoutMs', {
        get: () => {
          throw new Error('getter failed');
        },
        enumerable: true,
      });
    for (const call of [spool.queues.create('new', throwing()), spool.queues.create('new', {}, { tags: throwing() as Record<string, string> }), spool.queues.update('kept', throwing()), spool.queues.tag('kept', throwing() as Record<string, string>)]) {
      expect(await rejection(call)).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('getter failed') });
    }
    // A tag named __proto__ would set the tags object's prototype and vanish: refused too.
    expect(await rejection(spool.queues.tag('kept', JSON.parse('{"__proto__": "v"}') as Record<string, string>))).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await spool.queues.list()).toEqual(['kept']);
    expect(await spool.queues.tags('kept')).toEqual({ team: 'a' });
  });

  it('tags outside the SQS character set (controls but tab/LF/CR, U+FFFE/U+FFFF, lone surrogates) are INVALID_ARGUMENT', async () => {
    const spool = spools.open();
    await spool.queues.create('kept', {}, { tags: { team: 'a' } });
    for (const bad of ['\u0000', '\u0007', '\u000b', '\ufffe', '\uffff', '\ud800', '\udfff']) {
      for (const tags of [{ [`k${bad}`]: 'v' }, { k: `v${bad}` }]) {
        expect(await rejection(spool.queues.tag('kept', tags)), JSON.stringify(tags)).toMatchObject({ code: 'INVALID_ARGUMENT' });
        expect(await rejection(spool.queues.create('new', {}, { tags })), JSON.stringify(tags)).toMatchObject({ code: 'INVALID_ARGUMENT' });
      }
    }
    expect(await spool.queues.list()).toEqual(['kept']);
    expect(await spool.queues.tags('kept')).toEqual({ team: 'a' });
    await spool.queues.tag('kept', { k: 'a\tb\nc\rd \u{1F600}' });
    expect(await spool.queues.tags('kept')).toEqual({ team: 'a', k: 'a\tb\nc\rd \u{1F600}' });
  });

  it('refuses bad names and attributes, storing nothing', async () => {
    const spool = spools.open();
    const cases: [string, Promise<unknown>, string][] = [
      ['fifo name without fifo', spool.queues.create('x.fifo', { fifo: false }), 'INVALID_ARGUMENT'],
      ['fifo without .fifo', spool.queues.create('x', { fifo: true }), 'INVALID_ARGUMENT'],
      ['visibility too long', spool.queues.create('a', { visibilityTimeoutMs: 43_200_001 }), 'INVALID_ARGUMENT'],
      ['delay too long', spool.queues.create('a', { delayMs: 900_001 }), 'INVALID_ARGUMENT'],
      ['wait too long', spool.queues.create('a', { receiveWaitMs: 20_001 }), 'INVALID_ARGUMENT'],
      ['size too small', spool.queues.create('a', { maxPayloadBytes: 1_023 }), 'INVALID_ARGUMENT'],
      ['retention too short', spool.queues.create('a', { retentionMs: 59_999 }), 'INVALID_ARGUMENT'],
      ['unknown attribute', spool.queues.create('a', { colour: 'red' } as never), 'INVALID_ARGUMENT'],
      ['dead-letter queue missing', spool.queues.create('a', { deadLetter: { queue: 'nope', maxReceiveCount: 3 } }), 'QUEUE_NOT_FOUND'],
      ['dedupe on a standard queue', spool.queues.create('a', { contentDedupe: true }), 'INVALID_ARGUMENT'],
      ['bad name', spool.queues.create("'; DROP TABLE queues;--"), 'INVALID_QUEUE_NAME'],
      ['create options not an object', spool.queues.create('a', {}, 'team-a' as never), 'INVALID_ARGUMENT'],
      ['list options not an object', spool.queues.list('ord' as never), 'INVALID_ARGUMENT'],
      ['list options null', spool.queues.list(null as never), 'INVALID_ARGUMENT'],
    ];
    for (const [name, promise, code] of cases) expect((await rejection(promise)).code, name).toBe(code);
    const error = await rejection(spool.queues.create('a', { visibilityTimeoutMs: -1 }));
    expect(error.details).toMatchObject({ field: 'visibilityTimeoutMs', min: 0, max: 43_200_000, value: -1 });
    expect(await spool.queues.list()).toEqual([]);
    expect(spool.settings.get().queues).toEqual({});
    await spool.queues.create('dlq');
    expect(await rejection(spool.queues.redrive('dlq', { destination: 'dlq' }))).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'destination' } });
  });
});

describe('receive, delete, change visibility', () => {
  it('receives up to max in one commit, hides them for the visibility timeout, and deletes by receipt', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock });
    await spool.queues.create('q', { visibilityTimeoutMs: 30_000 });
    const ids = await spool.sendBatch('q', Array.from({ length: 12 }, (_, n) => ({ n })));
    const batch = await spool.receive('q', { max: 10 });
    expect(batch.map((m) => m.id)).toEqual(ids.slice(0, 10));
    expect(batch[0]).toMatchObject({ queue: 'q', body: { n: 0 }, receiveCount: 1, sentAt: clock.now(), firstReceivedAt: clock.now(), attributes: {}, sequence: Number(ids[0]) });
    expect((await spool.receive('q', { max: 10 })).map((m) => m.id)).toEqual(ids.slice(10));
    expect(await spool.receive('q', { max: 10 })).toEqual([]);
    for (const m of batch) await spool.deleteMessage('q', m.receipt);
    expect((await spool.queues.get('q')).counts).toEqual({ visible: 0, inFlight: 2, delayed: 0, dead: 0 });
    // The rest come back after their visibility timeout, with their receive count grown.
    clock.advance(30_001);
    const again = await spool.receive('q', { max: 10 });
    expect(again.map((m) => [m.id, m.receiveCount])).toEqual(ids.slice(10).map((id) => [id, 2]));
  });

  it('a stale receipt deletes nothing and never throws; garbage is INVALID_RECEIPT', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock });
    await spool.queues.create('q', { visibilityTimeoutMs: 1000 });
    const id = await spool.send('q', 'hello');
    const [first] = await spool.receive('q');
    clock.advance(1001);
    const [second] = await spool.receive('q');
    expect(second!.id).toBe(id);
    const stale = nextEvent(spool.events$, (e) => e.type === 'message.stale' && e.id === id);
    await spool.deleteMessage('q', first!.receipt);
    await stale;
    expect((await spool.get(id))?.state).toBe('processing');
    await spool.deleteMessage('q', second!.receipt);
    expect(await spool.get(id)).toBeUndefined();
    // Deleting again (an SDK retry) is fine; garbage is not.
    await spool.deleteMessage('q', second!.receipt);
    for (const bad of ['', 'nope', `${id}:`, ':abc', `${id}:not-a-token`]) expect((await rejection(spool.deleteMessage('q', bad))).code).toBe('INVALID_RECEIPT');
  });

  it('refuses a signal that is not an AbortSignal with INVALID_ARGUMENT, receiving nothing', async () => {
    const spool = spools.open();
    await spool.queues.create('a');
    const id = await spool.send('a', { n: 1 });
    expect(await rejection(spool.receive('a', { signal: 'stop' as unknown as AbortSignal }))).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'signal' } });
    expect(await spool.get(id)).toMatchObject({ state: 'pending', deliveries: 0 });
  });

  it("a receipt used on another queue than its message's is INVALID_RECEIPT, and changes nothing", async () => {
    const spool = spools.open();
    await spool.queues.create('a');
    await spool.queues.create('b');
    const id = await spool.send('b', { n: 1 });
    const [m] = await spool.receive('b');
    for (const call of [spool.deleteMessage('a', m!.receipt), spool.changeVisibility('a', m!.receipt, 0)]) {
      expect(await rejection(call)).toMatchObject({ code: 'INVALID_RECEIPT', message: expect.stringContaining('"a"') });
    }
    expect(await spool.get(id)).toMatchObject({ state: 'processing' });
    await spool.deleteMessage('b', m!.receipt);
    expect(await spool.get(id)).toBeUndefined();
  });

  it('changeVisibility(0) returns a message at once, counting the receive but no attempt; more extends from now, up to 12 h', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock });
    await spool.queues.create('q');
    const id = await spool.send('q', { n: 1 });
    const [m] = await spool.receive('q');
    await spool.changeVisibility('q', m!.receipt, 0);
    const [back] = await spool.receive('q');
    expect(back).toMatchObject({ id, receiveCount: 2 });
    expect((await spool.get(id))?.attempt).toBe(1);
    await spool.changeVisibility('q', back!.receipt, 100_000);
    clock.advance(50_000);
    expect(await spool.receive('q')).toEqual([]);
    expect((await rejection(spool.changeVisibility('q', back!.receipt, 43_200_000))).code).toBe('INVALID_ARGUMENT');
    expect((await rejection(spool.changeVisibility('q', m!.receipt, 10))).code).toBe('MESSAGE_NOT_INFLIGHT');
  });

  for (const started of [false, true]) {
    it(`a shorter visibility returns the message at its new deadline to a receive already long-polling (${started ? 'the owner' : 'a handle that only pulls'})`, async () => {
      const clock = createTestClock();
      const spool = spools.open({ clock, config: { processor: { pollIntervalMs: 3_600_000 } } });
      await spool.queues.create('q');
      if (started) await spool.start();
      const id = await spool.send('q', { n: 1 });
      const [m] = await spool.receive('q', { visibilityTimeoutMs: 30_000 });
      const polling = spool.receive('q', { waitMs: 20_000 });
      await until(() => clock.nextDue() === 20_000, 'the long poll sleeps until its waitMs');
      await spool.changeVisibility('q', m!.receipt, 1000);
      // The owner's expiry timer, or the waiter itself, is armed for the new deadline, not the old one.
      await until(() => clock.nextDue() === 1000, 'a timer armed for the new deadline');
      clock.advance(1000);
      expect((await polling).map((r) => [r.id, r.receiveCount])).toEqual([[id, 2]]);
    });
  }

  it('long-polls: an empty receive waits for a send, and resolves [] at waitMs; an aborted one claims nothing', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock });
    await spool.queues.create('q');
    const waiting = spool.receive('q', { waitMs: 20_000 });
    const id = await spool.send('q', { n: 1 });
    expect((await waiting).map((m) => m.id)).toEqual([id]);
    const empty = spool.receive('q', { waitMs: 5_000 });
    clock.advance(5_000);
    expect(await empty).toEqual([]);
    const abort = new AbortController();
    const aborted = spool.receive('q', { waitMs: 20_000, signal: abort.signal });
    abort.abort();
    expect(await aborted).toEqual([]);
    const late = await spool.send('q', { n: 2 });
    expect((await spool.receive('q')).map((m) => m.id)).toEqual([late]);
  });

  it('an SQS queue without a handler is never claimed by a started spool (no NO_CONSUMER)', async () => {
    const spool = spools.open({ config: { processor: { pollIntervalMs: 20 } } });
    await spool.queues.create('pull-only');
    await spool.start();
    const id = await spool.send('pull-only', { n: 1 });
    const poll = nextEvent(spool.events$, () => false, { timeoutMs: 100 }).catch(() => undefined);
    await poll;
    expect((await spool.get(id))?.state).toBe('pending');
    expect((await spool.receive('pull-only')).map((m) => m.id)).toEqual([id]);
  });
});

describe('retention', () => {
  it("deletes a queue's messages older than retentionMs at the sweep, in flight too, and nothing younger or elsewhere", async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock });
    await spool.queues.create('orders', { retentionMs: 60_000 });
    const [old, held] = await spool.sendBatch('orders', [{ n: 1 }, { n: 2 }]);
    const kept = await spool.send('plain', { n: 3 });
    const [received] = await spool.receive('orders', { max: 1, visibilityTimeoutMs: 3_600_000 });
    expect([old, held]).toContain(received?.id);
    clock.advance(30_000);
    const young = await spool.send('orders', { n: 4 });
    clock.advance(30_001);
    const removed: { id: string; reason: string; from: string }[] = [];
    const sub = spool.events$.subscribe((e) => e.type === 'message.removed' && removed.push({ id: e.id, reason: e.reason, from: e.from }));
    await spool.sweep();
    sub.unsubscribe();
    expect(removed.sort((a, b) => a.id.localeCompare(b.id))).toEqual(
      [{ id: old!, reason: 'expired', from: old === received!.id ? 'processing' : 'pending' }, { id: held!, reason: 'expired', from: held === received!.id ? 'processing' : 'pending' }].sort((a, b) => a.id.localeCompare(b.id)),
    );
    expect(await spool.get(young)).toMatchObject({ state: 'pending' });
    expect(await spool.get(kept)).toMatchObject({ state: 'pending' });
    // The receipt of an expired message deletes nothing and never throws.
    await spool.deleteMessage('orders', received!.receipt);
    expect((await spool.queues.get('orders')).counts).toMatchObject({ visible: 1, inFlight: 0 });
  });

  it('forgets an SQS queue that another handle deleted: its name, used as a push queue since, keeps its messages', async () => {
    const clock = createTestClock();
    const owner = spools.open({ clock });
    const other = spools.open();
    await other.queues.create('jobs');
    await owner.send('jobs', { warm: true }); // the owner has read the queue's kind: SQS
    await other.queues.delete('jobs');
    // Settings of its own put it on the sweep's list of queues to look at.
    await owner.settings.update({ queues: { jobs: { maxAttempts: 1 } } });
    const ids = await owner.sendBatch('jobs', [{ n: 1 }, { n: 2 }]);
    // Past SQS's four days: a push queue keeps its messages unless it has a retentionMs of its own.
    clock.advance(5 * 86_400_000);
    expect((await owner.sweep()).deleted).toBe(0);
    for (const id of ids) expect(await owner.get(id)).toMatchObject({ state: 'pending' });
    expect(await rejection(owner.queues.get('jobs'))).toMatchObject({ code: 'QUEUE_NOT_FOUND' });
  });
});

describe('dead-letter queues', () => {
  it('moves a message past maxReceiveCount to the dead-letter queue, keeping id, body and attributes, and redrives it back', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock });
    await spool.queues.create('dlq');
    await spool.queues.create('src', { visibilityTimeoutMs: 1000, deadLetter: { queue: 'dlq', maxReceiveCount: 2 } });
    const id = await spool.send('src', 'poison', { attributes: { kind: { type: 'String', value: 'p' } } });
    for (let i = 0; i < 2; i++) {
      expect((await spool.receive('src')).map((m) => m.id)).toEqual([id]);
      clock.advance(1001);
    }
    // The third receive would pass maxReceiveCount: the message moves instead.
    expect(await spool.receive('src')).toEqual([]);
    const [moved] = await spool.receive('dlq');
    expect(moved).toMatchObject({ id, body: 'poison', sourceQueue: 'src', attributes: { kind: { type: 'String', value: 'p' } } });
    expect(await spool.queues.deadLetterSources('dlq')).toEqual(['src']);
    await spool.changeVisibility('dlq', moved!.receipt, 0);
    expect(await spool.queues.redrive('dlq')).toMatchObject({ moved: 1 });
    expect((await spool.receive('src')).map((m) => m.id)).toEqual([id]);
  });

  /** Sends one message to `queue` and receives it past its maxReceiveCount of 1, so it dies. */
  async function killOne(spool: ReturnType<typeof spools.open>, clock: ReturnType<typeof createTestClock>, queue: string, body: string): Promise<string> {
    const id = await spool.send(queue, body);
    expect((await spool.receive(queue)).map((m) => m.id)).toEqual([id]);
    clock.advance(1001);
    expect(await spool.receive(queue)).toEqual([]);
    return id;
  }

  it('a handle that only receives applies the visibility timeout and redrive policy another handle set since', async () => {
    const clock = createTestClock();
    const admin = spools.open({ clock });
    const worker = spools.open({ clock });
    await admin.queues.create('dlq');
    await admin.queues.create('q', { visibilityTimeoutMs: 30_000 });
    const [a, b] = await admin.sendBatch('q', [{ n: 1 }, { n: 2 }]);
    const [first] = await worker.receive('q');
    expect(first).toMatchObject({ id: a, visibleAt: clock.now() + 30_000 });
    await admin.queues.update('q', { visibilityTimeoutMs: 1000, deadLetter: { queue: 'dlq', maxReceiveCount: 1 } });
    clock.advance(30_001);
    // The worker's next receive leases under the new timeout, and (past maxReceiveCount) moves
    // the first message to the dead-letter queue instead of handing it out again.
    const [second] = await worker.receive('q', { max: 10 });
    expect(second).toMatchObject({ id: b, visibleAt: clock.now() + 1000 });
    expect(await worker.get(a!)).toMatchObject({ queue: 'dlq', state: 'pending' });
    const consumer = worker.consumer();
    clock.advance(2000);
    expect(await consumer.wait('q', { timeoutMs: 0 })).toBeNull();
    expect(await worker.get(b!)).toMatchObject({ queue: 'dlq', state: 'pending' });
  });

  it("a FIFO dead-letter queue's retention counts from the move, a standard one's from the send (as in SQS)", async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock });
    const day = 86_400_000;
    await spool.queues.create('dlq');
    await spool.queues.create('dlq.fifo', { contentDedupe: true });
    await spool.queues.create('q', { deadLetter: { queue: 'dlq', maxReceiveCount: 1 } });
    await spool.queues.create('q.fifo', { contentDedupe: true, deadLetter: { queue: 'dlq.fifo', maxReceiveCount: 1 } });
    const standard = await spool.send('q', { n: 1 });
    const fifo = await spool.send('q.fifo', { n: 2 }, { group: 'g' });
    const sentAt = clock.now();
    for (const queue of ['q', 'q.fifo']) await spool.receive(queue, { visibilityTimeoutMs: 0 });
    clock.advance(3 * day);
    // The second receive would pass maxReceiveCount: both move to their dead-letter queues.
    for (const queue of ['q', 'q.fifo']) expect(await spool.receive(queue)).toEqual([]);
    const movedAt = clock.now();
    clock.advance(day + 1); // past the 4 days of retention since the send, not since the move
    await spool.sweep();
    expect(await spool.get(standard)).toBeUndefined();
    expect(await spool.get(fifo)).toMatchObject({ queue: 'dlq.fifo', state: 'pending', createdAt: movedAt });
    const [letter] = await spool.receive('dlq.fifo');
    expect(letter).toMatchObject({ id: fifo, sentAt: movedAt, sourceQueue: 'q.fifo' });
    expect(letter!.sentAt).not.toBe(sentAt);
  });

  it('a letter whose dead-letter queue was deleted stays dead in its own queue, where dead() and requeue reach it', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock });
    await spool.queues.create('dlq');
    await spool.queues.create('src', { visibilityTimeoutMs: 1000, deadLetter: { queue: 'dlq', maxReceiveCount: 1 } });
    await spool.queues.delete('dlq');
    const id = await killOne(spool, clock, 'src', 'poison');
    // Not moved into a queue no one has (a push queue, out of reach of receive and redrive).
    expect(await spool.get(id)).toMatchObject({ queue: 'src', state: 'dead', lastError: { code: 'MAX_RECEIVES' } });
    expect((await spool.dead('src')).map((m) => m.id)).toEqual([id]);
    expect(await spool.queues.list()).toEqual(['src']);
    // Made again, it takes the letters that die from then on.
    await spool.queues.create('dlq');
    const next = await killOne(spool, clock, 'src', 'second');
    expect(await spool.get(next)).toMatchObject({ queue: 'dlq', state: 'pending', sourceQueue: 'src' });
    expect(await spool.requeue(id)).toBe(1);
    expect(await spool.get(id)).toMatchObject({ queue: 'src', state: 'pending' });
  });

  it("a standard queue's letters never go to a FIFO dead-letter queue that only a settings change named", async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock });
    await spool.queues.create('f.fifo', { contentDedupe: true });
    await spool.queues.create('std', { visibilityTimeoutMs: 1000 });
    // queues.update refuses this pair; settings.update (and the admin API, the CLI) can name it.
    await spool.settings.update({ queues: { std: { deadLetter: { queue: 'f.fifo', maxReceiveCount: 1 } } } });
    const id = await killOne(spool, clock, 'std', 'poison');
    // A FIFO queue's messages all have a group: it stays dead here rather than arrive without one.
    expect(await spool.get(id)).toMatchObject({ queue: 'std', state: 'dead', lastError: { code: 'MAX_RECEIVES' } });
    expect(await spool.receive('f.fifo')).toEqual([]);
  });

  it('redrives every letter with a source, however many without one come before it, and leaves those whose source is gone', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock });
    await spool.queues.create('dlq');
    await spool.queues.create('src', { visibilityTimeoutMs: 1000, deadLetter: { queue: 'dlq', maxReceiveCount: 1 } });
    await spool.queues.create('gone', { visibilityTimeoutMs: 1000, deadLetter: { queue: 'dlq', maxReceiveCount: 1 } });
    const first = await killOne(spool, clock, 'src', 'first');
    // More than one page (500) of messages sent straight to the dead-letter queue: no source.
    await spool.sendBatch('dlq', Array.from({ length: 600 }, (_, i) => ({ direct: i })));
    const second = await killOne(spool, clock, 'src', 'second');
    const orphan = await killOne(spool, clock, 'gone', 'orphan');
    await spool.queues.delete('gone');
    const seen: SpoolEvent[] = [];
    spool.events$.subscribe((e) => seen.push(e));
    expect(await spool.queues.redrive('dlq')).toMatchObject({ moved: 2 });
    // Each move is announced after its commit, under the queue it moved to.
    expect(seen.map((e) => e.type === 'message.state' && [e.id, e.queue, e.from, e.to])).toEqual([
      [first, 'src', 'pending', 'pending'],
      [second, 'src', 'pending', 'pending'],
    ]);
    expect(await spool.get(first)).toMatchObject({ queue: 'src', state: 'pending' });
    expect(await spool.get(second)).toMatchObject({ queue: 'src', state: 'pending' });
    // Its source was deleted: it stays, rather than make 'gone' a queue nothing receives from.
    expect(await spool.get(orphan)).toMatchObject({ queue: 'dlq', state: 'pending', sourceQueue: 'gone' });
    expect(await spool.queues.list()).toEqual(['dlq', 'src']);
    expect((await spool.queues.get('dlq')).counts.visible).toBe(601);
  });

  it('refuses to redrive a standard dead-letter queue into a FIFO queue, moving nothing', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock });
    await spool.queues.create('dlq');
    await spool.queues.create('src', { visibilityTimeoutMs: 1000, deadLetter: { queue: 'dlq', maxReceiveCount: 1 } });
    await spool.queues.create('dest.fifo', { contentDedupe: true });
    const id = await killOne(spool, clock, 'src', 'poison');
    const error = await rejection(spool.queues.redrive('dlq', { destination: 'dest.fifo' }));
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'destination' } });
    expect(await spool.get(id)).toMatchObject({ queue: 'dlq', state: 'pending' });
    expect(await spool.receive('dest.fifo')).toEqual([]);
  });

  it('on a push queue with a dead-letter queue, running out of attempts moves the message there', async () => {
    const spool = spools.open({ config: { queues: { jobs: { maxAttempts: 1 } } } });
    await spool.queues.create('jobs-dlq');
    await spool.settings.update({ queues: { jobs: { deadLetter: { queue: 'jobs-dlq', maxReceiveCount: 5 } } } });
    spool.register('jobs', () => {
      throw new Error('always');
    });
    await spool.start();
    const arrived = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.queue === 'jobs-dlq' && e.to === 'pending');
    const id = await spool.send('jobs', { n: 1 });
    await arrived;
    expect(await spool.get(id)).toMatchObject({ queue: 'jobs-dlq', state: 'pending' });
  });
});

describe('sends to SQS queues', () => {
  it('validates attributes as SQS does, counts them toward the size limit, and refuses unknown queues with mustExist', async () => {
    const spool = spools.open();
    await spool.queues.create('q', { maxPayloadBytes: 1024 });
    const eleven = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`a${i}`, { type: 'String', value: 'v' }]));
    const bad: [string, object][] = [
      ['eleven attributes', { attributes: eleven }],
      ['an AWS. name', { attributes: { 'AWS.x': { type: 'String', value: 'v' } } }],
      ['a doubled dot', { attributes: { 'a..b': { type: 'String', value: 'v' } } }],
      ['an empty value', { attributes: { a: { type: 'String', value: '' } } }],
      ['a Number that is not', { attributes: { a: { type: 'Number', value: 'x' } } }],
      ['an unknown type', { attributes: { a: { type: 'Date', value: 'x' } } }],
      ['a binary string', { attributes: { a: { type: 'Binary', value: 'x' } } }],
    ];
    for (const [name, options] of bad) expect((await rejection(spool.send('q', 'x', options))).code, name).toBe('INVALID_ARGUMENT');
    // 1,024 bytes in all: body 1,000 + name 4 + type 6 + value 14 fits; one byte more does not.
    const attributes = { name: { type: 'String', value: 'v'.repeat(14) } };
    await spool.send('q', 'b'.repeat(1000), { attributes });
    expect((await rejection(spool.send('q', 'b'.repeat(1001), { attributes }))).code).toBe('INVALID_PAYLOAD');
    expect((await rejection(spool.send('q', 'bad \u0000 char'))).details).toMatchObject({ reason: 'charset' });
    expect((await rejection(spool.send('never-made', 'x', { mustExist: true }))).code).toBe('QUEUE_NOT_FOUND');
    const [m] = await spool.receive('q');
    expect(m!.attributes).toEqual(attributes);
    const bin = await spool.send('q', 'x', { attributes: { blob: { type: 'Binary', value: new Uint8Array([1, 2, 3]) } } });
    const [withBinary] = await spool.receive('q');
    expect(withBinary!.id).toBe(bin);
    expect(Buffer.from(withBinary!.attributes.blob!.value as Uint8Array)).toEqual(Buffer.from([1, 2, 3]));
    expect(isSpoolError(await rejection(spool.send('q', 'x', { group: 'g'.repeat(129) })), 'INVALID_ARGUMENT')).toBe(true);
  });

  it('refuses attributes that are not a plain object (a Map, a class instance), which were stored as none', async () => {
    const spool = spools.open();
    await spool.queues.create('q');
    const tenant = { type: 'String', value: 'acme' };
    class Attrs {
      get tenant() {
        return tenant;
      }
    }
    for (const attributes of [new Map([['tenant', tenant]]), new Attrs(), [tenant]]) {
      for (const queue of ['q', 'push']) {
        const error = await rejection(spool.send(queue, { n: 1 }, { attributes: attributes as never }));
        expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('plain object') });
        expect((await rejection(spool.sendBatch(queue, [{ n: 1 }], { attributes: attributes as never }))).code).toBe('INVALID_ARGUMENT');
      }
    }
    expect((await spool.queues.get('q')).counts.visible).toBe(0);
    // A null-prototype object is plain: it is how an attribute named __proto__ is given.
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { tenant });
    const id = await spool.send('q', { n: 1 }, { attributes: bare as never });
    expect((await spool.get(id))?.attributes).toEqual({ tenant });
  });

  it("holds a message's own delay to SQS's 0–900,000 ms on a created queue, and stores nothing when refusing", async () => {
    const spool = spools.open();
    await spool.queues.create('q');
    const error = await rejection(spool.send('q', 'x', { delayMs: 900_001 }));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.details).toMatchObject({ field: 'delayMs', min: 0, max: 900_000, value: 900_001 });
    expect((await spool.queues.get('q')).counts).toEqual({ visible: 0, inFlight: 0, delayed: 0, dead: 0 });
    await spool.send('q', 'x', { delayMs: 900_000 });
    expect((await spool.queues.get('q')).counts.delayed).toBe(1);
    // A push queue (never created) keeps the library's longer delays.
    await spool.send('push', 'x', { delayMs: 3_600_000 });
  });
});
