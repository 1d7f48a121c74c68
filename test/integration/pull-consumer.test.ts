/**
 * Q4M-shaped pull consumers (issue 12 §2): owner mode, end and abort, implicit end on the next
 * wait, lease expiry then redelivery then dead-letter, extend, where filters, queue preference
 * order, close, the async iterator, push and pull competing for one queue, and the waits of one
 * commit sharing one lease pass.
 */
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isSpoolError, type SpoolEvent } from '../../src/index.js';
import { rejection } from '../helpers/errors.js';
import { nextEvent } from '../helpers/events.js';
import { readDb } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';

const spools = useTempSpools();

afterEach(() => {
  vi.restoreAllMocks();
});

/**
 * A started owner on a manual clock with a poll far away (only its lease timer returns leases),
 * and one message of an SQS queue that its own handle received under a 500 ms lease.
 */
async function ownerWithLease() {
  const clock = createTestClock();
  const spool = spools.open({ clock, config: { processor: { pollIntervalMs: 3_600_000 } } });
  await spool.queues.create('orders');
  await spool.start();
  const id = await spool.send('orders', { n: 1 });
  await spool.receive('orders', { visibilityTimeoutMs: 500 });
  return { clock, spool, id };
}

/** How many candidate queries (the lease's and the claim's) this process runs from here on. */
function countCandidateQueries(): { n: number } {
  const count = { n: 0 };
  const probe = new Database(':memory:');
  const proto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as { all(...args: unknown[]): unknown[] };
  probe.close();
  const all = proto.all;
  vi.spyOn(proto, 'all').mockImplementation(function (this: { source: string }, ...args: unknown[]) {
    if (/ORDER BY priority DESC, visible_at, seq/.test(this.source)) count.n += 1;
    return all.apply(this, args);
  });
  return count;
}

describe('owner-mode consumers', () => {
  it('waits, owns one message, and end() completes it; wait() again ends the previous one first', async () => {
    const spool = spools.open();
    const consumer = spool.consumer({ id: 'worker-1' });
    const [a, b] = await spool.sendBatch('jobs', [{ n: 1 }, { n: 2 }]);
    const first = await consumer.wait<{ n: number }>('jobs', { timeoutMs: 1000 });
    expect(first).toMatchObject({ id: a, queue: 'jobs', payload: { n: 1 }, attempt: 1, deliveries: 1 });
    expect(first!.receipt).toMatch(new RegExp(`^${a}:`));
    expect(await spool.get(a!)).toMatchObject({ state: 'processing' });
    const second = await consumer.wait('jobs', { timeoutMs: 1000 });
    expect(second?.id).toBe(b);
    // Owner mode: waiting again ended (deleted) the first.
    expect(await spool.get(a!)).toBeUndefined();
    await consumer.end();
    expect(await spool.get(b!)).toBeUndefined();
    expect(await consumer.wait('jobs', { timeoutMs: 0 })).toBeNull();
    await consumer.close();
  });

  it('archives what end() and the next wait() complete with the attempt the lease made, and keeps the counts', async () => {
    const spool = spools.open();
    const consumer = spool.consumer();
    const events: SpoolEvent[] = [];
    spool.events$.subscribe((e) => events.push(e));
    const [a, b] = await spool.sendBatch('jobs', [{ n: 1 }, { n: 2 }]);
    expect((await consumer.wait('jobs', { timeoutMs: 1000 }))?.id).toBe(a);
    expect((await consumer.wait('jobs', { timeoutMs: 1000 }))?.id).toBe(b);
    await consumer.end();
    for (const id of [a!, b!]) {
      const gone = await spool.removedHistory(id);
      expect(gone).toMatchObject({ id, queue: 'jobs', state: 'done', reason: 'done' });
      expect(gone!.history.at(-1)).toMatchObject({ from: 'processing', to: 'done', attempt: 1 });
      expect(events.find((e) => e.type === 'message.state' && e.id === id && e.to === 'done')).toMatchObject({ queue: 'jobs', attempt: 1 });
    }
    expect((await spool.stats()).queues.jobs).toMatchObject({ pending: 0, processing: 0 });
    expect(readDb(spools.path, (c) => c.prepare("SELECT count(*) FROM messages WHERE queue = 'jobs'").pluck().get())).toBe(0);
    await consumer.close();
  });

  it('abort() returns the message at once for others, with no attempt charged', async () => {
    const spool = spools.open();
    const one = spool.consumer();
    const two = spool.consumer();
    const id = await spool.send('jobs', { n: 1 });
    expect((await one.wait('jobs', { timeoutMs: 100 }))?.id).toBe(id);
    expect(await two.wait('jobs', { timeoutMs: 0 })).toBeNull();
    await one.abort();
    const again = await two.wait('jobs', { timeoutMs: 100 });
    expect(again).toMatchObject({ id, attempt: 1, deliveries: 2 });
  });

  it('wakes a waiter at once when this handle sends, and resolves null at its timeout', async () => {
    const spool = spools.open();
    const consumer = spool.consumer();
    const waiting = consumer.wait('later', {});
    const id = await spool.send('later', { n: 1 });
    expect((await waiting)?.id).toBe(id);
    const clock = createTestClock();
    const timed = spools.open({ clock }).consumer();
    const nothing = timed.wait('empty', { timeoutMs: 500 });
    clock.advance(500);
    expect(await nothing).toBeNull();
  });

  it("wakes a waiter when another handle sends (another process's commit, seen through the file watch), long before the poll", async () => {
    const waiter = spools.open({ config: { processor: { pollIntervalMs: 3_600_000 } } });
    const sender = spools.open();
    const consumer = waiter.consumer();
    // Bring the waiter into the room: its first lease attempt finds nothing.
    const waiting = consumer.wait('remote', {});
    await sender.send('other', { n: 0 });
    const id = await sender.send('remote', { n: 1 });
    expect((await waiting)?.id).toBe(id);
    await consumer.close();
  });

  it("wakes a waiter when another handle ends a group's head: the group's next message became claimable", async () => {
    const waiter = spools.open({ config: { processor: { pollIntervalMs: 3_600_000 } } });
    const other = spools.open();
    await other.send('grouped', { n: 0 }, { group: 'g' });
    const next = await other.send('grouped', { n: 1 }, { group: 'g' });
    const holder = other.consumer();
    expect((await holder.wait('grouped', { timeoutMs: 0 }))?.payload).toEqual({ n: 0 });
    const consumer = waiter.consumer();
    // The waiter finds the group held by the other handle's lease and sleeps.
    let woke = false;
    const waiting = consumer.wait('grouped', {}).finally(() => (woke = true));
    // Another queue's commit, once the waiter sleeps: the room reads the group queue's arrivals.
    await new Promise((resolve) => setTimeout(resolve, 20));
    await other.send('elsewhere', { n: 2 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(woke).toBe(false);
    await holder.end();
    expect((await waiting)?.id).toBe(next);
    await Promise.all([consumer.close(), holder.close()]);
  });

  it('takes earlier queues first, in claim order within a queue', async () => {
    const spool = spools.open();
    await spool.send('normal', { q: 'normal' });
    await spool.send('urgent', { q: 'urgent', p: 0 });
    await spool.send('urgent', { q: 'urgent', p: 9 }, { priority: 9 });
    const consumer = spool.consumer();
    const order: unknown[] = [];
    for (let i = 0; i < 3; i++) order.push((await consumer.wait(['urgent', 'normal'], { timeoutMs: 100 }))?.payload);
    expect(order).toEqual([{ q: 'urgent', p: 9 }, { q: 'urgent', p: 0 }, { q: 'normal' }]);
  });

  it('a lease that runs out returns the message (a failed attempt on a push queue), then dead after maxAttempts', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock, config: { queues: { jobs: { maxAttempts: 2, backoff: { type: 'fixed', delayMs: 0, maxDelayMs: 0, jitter: false } } } } });
    const crashed = spool.consumer({ id: 'crashed' });
    const id = await spool.send('jobs', { n: 1 });
    expect((await crashed.wait('jobs', { leaseMs: 1000, timeoutMs: 0 }))?.id).toBe(id);
    clock.advance(1001);
    const other = spool.consumer();
    const second = await other.wait('jobs', { timeoutMs: 0 });
    expect(second).toMatchObject({ id, attempt: 2, deliveries: 2 });
    const info = await spool.get(id);
    expect(info?.lastError).toMatchObject({ code: 'LEASE_EXPIRED' });
    clock.advance(second!.leaseExpiresAt - clock.now() + 1);
    // A third consumer finds the second lease expired too: its second failed attempt, so dead.
    expect(await spool.consumer().wait('jobs', { timeoutMs: 0 })).toBeNull();
    expect(await spool.get(id)).toMatchObject({ state: 'dead', lastError: { code: 'LEASE_EXPIRED' } });
    // The stale owner's end() changes nothing (its receipt no longer holds the message) and says so.
    const stale = nextEvent(spool.events$, (e) => e.type === 'message.stale' && e.id === id);
    await expect(crashed.end()).rejects.toMatchObject({ code: 'LEASE_EXPIRED' });
    await stale;
    expect(await spool.get(id)).toMatchObject({ state: 'dead' });
  });

  it('a started owner returns a lease that ran out by its own timer, with no receive to find it', async () => {
    const clock = createTestClock();
    // A poll far away: only the lease timer can return the message in this test.
    const owner = spools.open({ clock, config: { processor: { pollIntervalMs: 3_600_000 } } });
    await owner.queues.create('orders');
    await owner.start();
    // Another handle on the file (another process, as far as the owner knows) leases and stalls.
    const puller = spools.open({ clock });
    const id = await puller.send('orders', { n: 1 });
    const [got] = await puller.receive('orders', { visibilityTimeoutMs: 2000 });
    expect(got?.id).toBe(id);
    // The owner learns of the lease from its start or poll; this one came after both, so poll now.
    await owner.settings.update({ processor: { pollIntervalMs: 1000 } });
    const back = nextEvent(owner.events$, (e) => e.type === 'message.state' && e.id === id && e.to === 'pending');
    clock.advance(1000);
    expect((await owner.get(id))?.state).toBe('processing');
    clock.advance(1001);
    await back;
    expect(await owner.get(id)).toMatchObject({ state: 'pending', deliveries: 1 });
  });

  it("a started owner arms the expiry of its own handle's leases at once", async () => {
    const { clock, spool, id } = await ownerWithLease();
    const back = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.id === id && e.to === 'pending');
    clock.advance(501);
    await back;
    expect((await spool.get(id))?.state).toBe('pending');
  });

  it("says so once when its lease timer cannot return a lease, and returns it once it can", async () => {
    const { clock, spool, id } = await ownerWithLease();
    // A fault in the store: no message row can change until the trigger goes.
    const conn = spools.connect();
    conn.exec("CREATE TRIGGER fault BEFORE UPDATE ON messages BEGIN SELECT RAISE(ABORT, 'injected fault'); END");
    const errors: SpoolEvent[] = [];
    const sub = spool.events$.subscribe((e) => {
      if (e.type === 'error') errors.push(e);
    });
    const said = nextEvent(spool.events$, (e) => e.type === 'error');
    clock.advance(501);
    expect(await said).toMatchObject({ code: 'STORAGE_ERROR', message: expect.stringContaining('injected fault') });
    expect((await spool.get(id))?.state).toBe('processing');
    // Each poll arms the timer again, and each pass fails while the fault lasts: said only once.
    await spool.settings.update({ processor: { pollIntervalMs: 100 } });
    for (let i = 0; i < 3; i++) {
      clock.advance(100);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect((await spool.get(id))?.state).toBe('processing');
    conn.exec('DROP TRIGGER fault');
    const back = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.id === id && e.to === 'pending');
    clock.advance(100);
    await back;
    sub.unsubscribe();
    expect(errors).toHaveLength(1);
  });

  it('extend() moves the lease deadline, up to 12 h after the hand-out', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock });
    const consumer = spool.consumer();
    const id = await spool.send('jobs', { n: 1 });
    await consumer.wait('jobs', { leaseMs: 1000, timeoutMs: 0 });
    clock.advance(900);
    await consumer.extend(5000);
    clock.advance(4000);
    expect(await spool.consumer().wait('jobs', { timeoutMs: 0 })).toBeNull();
    expect((await spool.get(id))?.state).toBe('processing');
    expect((await rejection(consumer.extend(43_200_000))).code).toBe('INVALID_ARGUMENT');
    expect((await rejection(consumer.extend(0))).code).toBe('INVALID_ARGUMENT');
    await consumer.end();
    expect((await rejection(consumer.extend(10))).code).toBe('MESSAGE_NOT_INFLIGHT');
  });

  it('extend() with a bad argument is INVALID_ARGUMENT whether or not the consumer owns a message', async () => {
    const spool = spools.open();
    const consumer = spool.consumer();
    for (const ms of ['x', 0, -1, 1.5, Number.NaN, 43_200_001, undefined]) {
      expect((await rejection(consumer.extend(ms as number))).code, String(ms)).toBe('INVALID_ARGUMENT');
    }
    expect((await rejection(consumer.extend(10))).code).toBe('MESSAGE_NOT_INFLIGHT');
  });

  it('filters on payload fields with where, with bound parameters only', async () => {
    const spool = spools.open();
    await spool.sendBatch('t', [
      { region: 'us', size: 1 },
      { region: 'eu', size: 5, meta: { tier: 'gold' } },
      { region: 'eu', size: 2, meta: { tier: 'gold' } },
      { region: 'eu', size: 1, meta: { tier: 'free' } },
    ]);
    const consumer = spool.consumer();
    const m = await consumer.wait('t', { timeoutMs: 0, where: { region: 'eu', size: { lt: 3 }, 'meta.tier': 'gold' } });
    expect(m?.payload).toEqual({ region: 'eu', size: 2, meta: { tier: 'gold' } });
    await consumer.abort();
    const inList = await consumer.wait('t', { timeoutMs: 0, where: { size: { in: [5] }, region: { ne: 'us' } } });
    expect(inList?.payload).toMatchObject({ size: 5 });
    await consumer.abort();
  });

  it('refuses hostile where paths and values before any query, leaving the store byte-identical', async () => {
    const spool = spools.open();
    await spool.sendBatch('t', [{ a: 1 }, { a: 2 }]);
    const consumer = spool.consumer();
    const digest = () => readDb(spools.path, (c) => createHash('sha256').update(JSON.stringify(c.prepare('SELECT * FROM messages ORDER BY seq').raw().all())).digest('hex'));
    const before = digest();
    const hostile: unknown[] = [
      { "a') OR 1=1 --": 1 },
      { 'a.b)': 1 },
      { 'a--': 1 },
      { $: 1 },
      { 'a.$where': 1 },
      { 'a\u0000b': 1 },
      { a: { lt: { nested: 1 } } },
      { a: { in: [] } },
      { a: { regex: 'x' } },
      // Names every object inherits: not operators.
      { a: { constructor: 1 } },
      { a: { toString: 1 } },
      { a: { valueOf: 1 } },
      JSON.parse('{"a":{"__proto__":1}}'),
      { a: "1'; DROP TABLE messages; --\u0000" },
      { a: Number.NaN },
      { a: [1, 2] },
      ['a'],
      'a = 1',
    ];
    for (const where of hostile) {
      const error = await rejection(consumer.wait('t', { timeoutMs: 0, where: where as never }));
      expect(error.code, JSON.stringify(where)).toBe('INVALID_ARGUMENT');
    }
    // A quote in a bound value is just data: no match, no harm.
    expect(await consumer.wait('t', { timeoutMs: 0, where: { a: "1' OR '1'='1" } })).toBeNull();
    expect(digest()).toBe(before);
  });

  it('close() aborts what it owns and rejects a pending wait with CLOSED', async () => {
    const spool = spools.open();
    const owner = spool.consumer();
    const id = await spool.send('jobs', { n: 1 });
    await owner.wait('jobs', { timeoutMs: 0 });
    const waiter = spool.consumer();
    const pending = waiter.wait('other', {});
    await waiter.close();
    expect((await rejection(pending)).code).toBe('CLOSED');
    await owner.close();
    expect(await spool.get(id)).toMatchObject({ state: 'pending', attempt: 1, deliveries: 1 });
    expect((await rejection(owner.wait('jobs', { timeoutMs: 0 }))).code).toBe('CLOSED');
  });

  it('leaving messages() with break or a throw gives the message back at once, no attempt charged, as abort() would', async () => {
    const spool = spools.open();
    const a = await spool.send('jobs', { n: 1 });
    const consumer = spool.consumer();
    for await (const m of consumer.messages('jobs', { timeoutMs: 0, leaseMs: 3_600_000 })) {
      expect(m.id).toBe(a);
      break;
    }
    expect(await spool.get(a)).toMatchObject({ state: 'pending', attempt: 1 });
    const thrown = new Error('out');
    const leave = async () => {
      for await (const m of consumer.messages('jobs', { timeoutMs: 0, leaseMs: 3_600_000 })) {
        expect(m.id).toBe(a);
        throw thrown;
      }
    };
    await expect(leave()).rejects.toBe(thrown);
    expect(await spool.get(a)).toMatchObject({ state: 'pending', attempt: 1 });
    // Another consumer takes it at once, with no failed attempt counted.
    expect(await spool.consumer().wait('jobs', { timeoutMs: 0 })).toMatchObject({ id: a, attempt: 1, deliveries: 3 });
    // A message ended in the loop is left as it is.
    const b = await spool.send('jobs', { n: 2 });
    for await (const m of consumer.messages('jobs', { timeoutMs: 0 })) {
      expect(m.id).toBe(b);
      await consumer.end();
      break;
    }
    expect(await spool.get(b)).toBeUndefined(); // ended: deleted (no retention), not given back
  });

  it('messages() iterates, ending each message before the next', async () => {
    const spool = spools.open();
    await spool.sendBatch('jobs', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const consumer = spool.consumer();
    const seen: unknown[] = [];
    for await (const m of consumer.messages<{ n: number }>('jobs', { timeoutMs: 0 })) seen.push(m.payload.n);
    expect(seen).toEqual([1, 2, 3]);
    expect((await spool.stats()).queues.jobs).toEqual({ pending: 0, activating: 0, processing: 0, dead: 0, done: 0 });
  });

  it('competes safely with push handlers on one queue: no message is held by both', async () => {
    const spool = spools.open({ config: { executor: { concurrency: 4 } } });
    const pushed: string[] = [];
    spool.register('shared', async (m) => {
      pushed.push(m.id);
      await new Promise((resolve) => setImmediate(resolve));
    });
    const ids = await spool.sendBatch('shared', Array.from({ length: 300 }, (_, n) => ({ n })));
    const pulled: string[] = [];
    const consumers = Array.from({ length: 4 }, () => spool.consumer());
    const events: SpoolEvent[] = [];
    spool.events$.subscribe((e) => events.push(e));
    await spool.start();
    await Promise.all(
      consumers.map(async (c) => {
        for (;;) {
          const m = await c.wait('shared', { timeoutMs: 50 });
          if (!m) return;
          pulled.push(m.id);
        }
      }),
    );
    for (const c of consumers) await c.close();
    await spool.stop();
    const all = [...pushed, ...pulled];
    expect(new Set(all).size).toBe(all.length);
    expect(all.sort()).toEqual([...ids].sort());
    expect(pulled.length).toBeGreaterThan(0);
    expect(events.filter((e) => e.type === 'message.stale')).toEqual([]);
  });

  it("sleeps through another queue's lease that ran out: it returns that message and makes no commit per turn", async () => {
    const spool = spools.open();
    await spool.queues.create('x');
    await spool.queues.create('y');
    const id = await spool.send('x', { n: 0 });
    expect(await spool.receive('x', { visibilityTimeoutMs: 1 })).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const commits = spool.telemetry().commit.count;
    expect(await spool.consumer().wait('y', { timeoutMs: 300 })).toBeNull();
    // Before, the wait saw the other queue's due lease as its next event and went round at once:
    // about 180 commits in these 300 ms.
    expect(spool.telemetry().commit.count - commits).toBeLessThan(10);
    expect((await spool.receive('x'))[0]?.id).toBe(id);
  });

  it('one wait at a time per consumer: a second at once is CONSUMER_BUSY, and holds nothing', async () => {
    const spool = spools.open();
    const consumer = spool.consumer();
    const first = consumer.wait('jobs', { timeoutMs: 1000 });
    expect(await rejection(consumer.wait('jobs', { timeoutMs: 0 }))).toMatchObject({ code: 'CONSUMER_BUSY' });
    const id = await spool.send('jobs', { n: 1 });
    expect((await first)?.id).toBe(id);
    await consumer.end();
    expect(await spool.get(id)).toBeUndefined();
  });

  it('a wait that fails leaves the consumer owning what it owned: its end rolled back with it', async () => {
    const spool = spools.open();
    const consumer = spool.consumer();
    const [a] = await spool.sendBatch('jobs', [{ n: 0 }, { n: 1 }]);
    expect((await consumer.wait('jobs', { timeoutMs: 0 }))?.id).toBe(a);
    const conn = spools.connect();
    conn.exec("CREATE TRIGGER fault BEFORE UPDATE ON messages BEGIN SELECT RAISE(ABORT, 'injected fault'); END");
    expect(await rejection(consumer.wait('jobs', { timeoutMs: 0 }))).toMatchObject({ code: 'STORAGE_ERROR' });
    conn.exec('DROP TRIGGER fault');
    expect(await spool.get(a!)).toMatchObject({ state: 'processing' });
    await consumer.end();
    expect(await spool.get(a!)).toBeUndefined();
  });

  it('an end() or abort() that fails leaves the consumer owning the message: a retry ends it', async () => {
    const spool = spools.open();
    const consumer = spool.consumer();
    const [a, b] = await spool.sendBatch('jobs', [{ n: 0 }, { n: 1 }]);
    expect((await consumer.wait('jobs', { timeoutMs: 0 }))?.id).toBe(a);
    const conn = spools.connect();
    conn.exec("CREATE TRIGGER fault BEFORE DELETE ON messages BEGIN SELECT RAISE(ABORT, 'injected fault'); END");
    expect(await rejection(consumer.end())).toMatchObject({ code: 'STORAGE_ERROR' });
    conn.exec('DROP TRIGGER fault');
    expect(await spool.get(a!)).toMatchObject({ state: 'processing' });
    await consumer.end();
    expect(await spool.get(a!)).toBeUndefined();
    expect((await consumer.wait('jobs', { timeoutMs: 0 }))?.id).toBe(b);
    conn.exec("CREATE TRIGGER fault BEFORE UPDATE ON messages BEGIN SELECT RAISE(ABORT, 'injected fault'); END");
    expect(await rejection(consumer.abort())).toMatchObject({ code: 'STORAGE_ERROR' });
    conn.exec('DROP TRIGGER fault');
    await consumer.abort();
    expect(await spool.get(b!)).toMatchObject({ state: 'pending', attempt: 1 });
  });

  it('refuses bad arguments with coded errors', async () => {
    const spool = spools.open();
    const consumer = spool.consumer();
    for (const [queues, options] of [
      [[], {}],
      ['bad name', {}],
      ['q', { leaseMs: 0 }],
      ['q', { leaseMs: 43_200_001 }],
      ['q', { timeoutMs: -1 }],
      ['q', { signal: {} }],
      [
        'q',
        {
          where: Object.defineProperty({}, 'k', {
            get: () => {
              throw new Error('getter failed');
            },
            enumerable: true,
          }),
        },
      ],
      // SQLite refuses a where of about 1,000 conditions with a storage error; it is refused first.
      ['q', { where: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) }],
      // Options that are not an object (a JSON null from a request body, say).
      ['q', null],
      ['q', 'x'],
    ] as [string | string[], object][]) {
      const error = await rejection(consumer.wait(queues, options));
      expect(['INVALID_ARGUMENT', 'INVALID_QUEUE_NAME']).toContain(error.code);
    }
    expect(() => spool.consumer({ id: 'a b' })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => spool.consumer(null as never)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    await spool.queues.create('sqs-q');
    expect((await rejection(spool.receive('sqs-q', null as never))).code).toBe('INVALID_ARGUMENT');
    expect((await rejection(spool.receive('sqs-q', 'x' as never))).code).toBe('INVALID_ARGUMENT');
    expect((await rejection(spool.queues.redrive('sqs-q', null as never))).code).toBe('INVALID_ARGUMENT');
    expect(isSpoolError(await rejection(consumer.extend(10)), 'MESSAGE_NOT_INFLIGHT')).toBe(true);
  });
});

describe('a filtered wait over a row that cannot be read', () => {
  it('dead-letters the row (CORRUPT_ROW) and hands out the next match, where json_extract failed the whole query', async () => {
    const spool = spools.open();
    const [bad, good, other] = await spool.sendBatch('jobs', [{ region: 'eu' }, { region: 'eu' }, { region: 'us' }]);
    const conn = spools.connect();
    expect(conn.prepare('UPDATE messages SET payload = ? WHERE seq = ?').run('{"region": ', Number(bad)).changes).toBe(1);
    // A listing with the same filter leaves it out, and does not fail either.
    expect((await spool.browse({ queue: 'jobs', where: { region: 'eu' } })).messages.map((m) => m.id)).toEqual([good]);
    const consumer = spool.consumer();
    expect(await consumer.wait('jobs', { where: { region: 'eu' }, timeoutMs: 0 })).toMatchObject({ id: good });
    expect(await spool.get(bad!)).toMatchObject({ state: 'dead', lastError: { code: 'CORRUPT_ROW' } });
    expect(await spool.get(other!)).toMatchObject({ state: 'pending' });
    await consumer.close();
  });
});

describe('waits of one commit', () => {
  it('share one lease pass: each consumer owns a different message, in the order they called, from one candidate query', async () => {
    const spool = spools.open();
    const ids = await spool.sendBatch('jobs', Array.from({ length: 10 }, (_, n) => ({ n })));
    const consumers = Array.from({ length: 8 }, () => spool.consumer());
    const queries = countCandidateQueries();
    const commits = spool.telemetry().commit.count;
    const got = await Promise.all(consumers.map((c) => c.wait('jobs', { timeoutMs: 0 })));
    expect(got.map((m) => m?.id)).toEqual(ids.slice(0, 8));
    expect(spool.telemetry().commit.count - commits).toBe(1);
    expect(queries.n).toBe(1);
    // Each consumer's next wait ends what it owns in the same pass, before the lease.
    const again = await Promise.all(consumers.map((c) => c.wait('jobs', { timeoutMs: 0 })));
    expect(again.map((m) => m?.id ?? null)).toEqual([...ids.slice(8), ...Array(6).fill(null)]);
    for (const id of ids.slice(0, 8)) expect(await spool.get(id!)).toBeUndefined();
    await Promise.all(consumers.map((c) => c.close()));
  });

  it('a wait with where, or on other queues, takes a pass of its own', async () => {
    const spool = spools.open();
    await spool.sendBatch('jobs', [{ n: 0, kind: 'a' }, { n: 1, kind: 'b' }]);
    await spool.send('other', { n: 2 });
    const queries = countCandidateQueries();
    const [plain, filtered, other] = await Promise.all([
      spool.consumer().wait('jobs', { timeoutMs: 0 }),
      spool.consumer().wait('jobs', { timeoutMs: 0, where: { kind: 'b' } }),
      spool.consumer().wait(['other', 'jobs'], { timeoutMs: 0 }),
    ]);
    expect([plain?.payload, filtered?.payload, other?.payload]).toEqual([{ n: 0, kind: 'a' }, { n: 1, kind: 'b' }, { n: 2 }]);
    expect(queries.n).toBe(3);
  });

  it("a failure in one consumer's end fails only its own wait: the others end what they own and take the next", async () => {
    const spool = spools.open();
    const ids = await spool.sendBatch('jobs', Array.from({ length: 6 }, (_, n) => ({ n })));
    const [a, b, c] = Array.from({ length: 3 }, () => spool.consumer());
    const owned = [await a!.wait('jobs', { timeoutMs: 0 }), await b!.wait('jobs', { timeoutMs: 0 }), await c!.wait('jobs', { timeoutMs: 0 })].map((m) => m!.id);
    // A fault only A's end meets: the DELETE of the message A owns.
    const conn = spools.connect();
    conn.exec(`CREATE TRIGGER fault BEFORE DELETE ON messages WHEN old.seq = ${Number(owned[0])} BEGIN SELECT RAISE(ABORT, 'injected fault'); END`);
    const [failed, nextB, nextC] = await Promise.allSettled([a!.wait('jobs', { timeoutMs: 0 }), b!.wait('jobs', { timeoutMs: 0 }), c!.wait('jobs', { timeoutMs: 0 })]);
    expect(failed).toMatchObject({ status: 'rejected', reason: { code: 'STORAGE_ERROR', message: expect.stringContaining('injected fault') } });
    expect([nextB, nextC].map((r) => (r.status === 'fulfilled' ? r.value?.id : r.reason))).toEqual(ids.slice(3, 5));
    // B's and C's ends landed; A's message is still held under its lease.
    expect(await spool.get(owned[1]!)).toBeUndefined();
    expect(await spool.get(owned[2]!)).toBeUndefined();
    expect(await spool.get(owned[0]!)).toMatchObject({ state: 'processing' });
    conn.exec('DROP TRIGGER fault');
    await Promise.all([b!.close(), c!.close(), a!.close()]);
  });

  it('a joined lease counts from its own caller: a wait made after the clock moved sees what became due', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock });
    const id = await spool.send('jobs', { n: 0 }, { delayMs: 500 });
    const [early, late] = [spool.consumer(), spool.consumer()];
    const first = early.wait('jobs', { timeoutMs: 0, leaseMs: 10_000 });
    clock.advance(1000);
    const second = late.wait('jobs', { timeoutMs: 0, leaseMs: 10_000 });
    const got = (await Promise.all([first, second])).filter((m) => m !== null);
    expect(got.map((m) => m.id)).toEqual([id]);
    expect(got[0]!.leaseExpiresAt).toBe(clock.now() + 10_000);
    await Promise.all([early.close(), late.close()]);
  });

  it('a pass that fails rejects each of its waits, and the next waits start a new one', async () => {
    const spool = spools.open();
    await spool.sendBatch('jobs', [{ n: 0 }, { n: 1 }, { n: 2 }]);
    // A fault in the store: every update of a message fails until the trigger goes.
    const conn = spools.connect();
    conn.exec("CREATE TRIGGER fault BEFORE UPDATE ON messages BEGIN SELECT RAISE(ABORT, 'injected fault'); END");
    const consumers = Array.from({ length: 3 }, () => spool.consumer());
    const failed = await Promise.all(consumers.map((c) => rejection(c.wait('jobs', { timeoutMs: 0 }))));
    for (const error of failed) expect(error).toMatchObject({ code: 'STORAGE_ERROR', message: expect.stringContaining('injected fault') });
    conn.exec('DROP TRIGGER fault');
    const got = await Promise.all(consumers.map((c) => c.wait('jobs', { timeoutMs: 0 })));
    expect(got.map((m) => m?.payload)).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }]);
    await Promise.all(consumers.map((c) => c.close()));
  });
});
