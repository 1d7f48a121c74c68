/**
 * Durable schedules (issue 11) on an injected clock: management by name, validation that stores
 * nothing, ticks at anchor + k × everyMs and at cron times in a time zone across DST, exactly one
 * message per tick, the missed-tick policies, refused ticks, and a change of owner that must not
 * send a tick twice.
 */
import { describe, expect, it } from 'vitest';
import { isSpoolError, type Message, type ScheduleSpec, type Spool, type SpoolErrorEvent } from '../../src/index.js';
import { nextEvent } from '../helpers/events.js';
import { createGate } from '../helpers/gate.js';
import { readDb } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';

const spools = useTempSpools();


/** No poll and no sweep on the test clock (the poll is tested apart); done rows kept for get(). */
const QUIET = { processor: { pollIntervalMs: 3_600_000, batchSize: 100 }, maintenance: { intervalMs: 2_147_483_647 }, retention: { doneMs: 86_400_000 } };

/** Lets pending callbacks, immediates and I/O run a few times (no timed wait). */
async function turns(n = 8) {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Waits (event-loop turns, no timers) until `condition` holds; fails after many turns. */
async function until(condition: () => boolean, what: string) {
  for (let i = 0; i < 1000; i++) {
    if (condition()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`Never happened: ${what}`);
}

/** Every message a schedule sent, from the file: its tick and state, in send order. */
function sentBy(path: string, schedule: string): { scheduledFor: number; state: string }[] {
  return readDb(path, (conn) =>
    conn.prepare('SELECT scheduled_for AS scheduledFor, state FROM messages WHERE schedule = ? ORDER BY seq').all(schedule),
  ) as { scheduledFor: number; state: string }[];
}

/** A handler that records what it saw. */
function recorder(spool: Spool, queue: string) {
  const seen: Message[] = [];
  spool.register(queue, (message) => void seen.push(message));
  return seen;
}

describe('managing schedules', () => {
  it('upserts, gets, lists and removes by name; a flag disables without deleting', async () => {
    const clock = createTestClock(Date.parse('2024-01-15T12:00:00Z'));
    const spool = spools.open({ clock, config: QUIET });
    const t0 = clock.now();
    const heartbeat = await spool.schedules.upsert('heartbeat', { everyMs: 30_000, queue: 'maintenance', payload: { task: 'ping' } });
    expect(heartbeat).toEqual({
      name: 'heartbeat',
      everyMs: 30_000,
      queue: 'maintenance',
      payload: { task: 'ping' },
      missed: 'one',
      enabled: true,
      anchor: t0,
      lastTickAt: null,
      nextAt: t0 + 30_000,
      createdAt: t0,
      updatedAt: t0,
    });
    const nightly = await spool.schedules.upsert('nightly-vacuum', {
      cron: '0 3 * * *',
      tz: 'Europe/Berlin',
      queue: 'maintenance',
      payload: { task: 'vacuum' },
      missed: 'none',
    });
    // 03:00 in Berlin in January is 02:00 UTC.
    expect(nightly).toMatchObject({ cron: '0 3 * * *', tz: 'Europe/Berlin', missed: 'none', nextAt: Date.parse('2024-01-16T02:00:00Z') });
    expect((await spool.schedules.list()).map((s) => s.name)).toEqual(['heartbeat', 'nightly-vacuum']);
    expect(await spool.schedules.get('nightly-vacuum')).toEqual(nightly);

    clock.advance(1000);
    const disabled = await spool.schedules.upsert('heartbeat', { everyMs: 30_000, queue: 'maintenance', payload: { task: 'ping' }, enabled: false });
    expect(disabled).toMatchObject({ enabled: false, nextAt: null, anchor: t0, updatedAt: t0 + 1000 });
    expect((await spool.schedules.list()).map((s) => [s.name, s.enabled])).toEqual([
      ['heartbeat', false],
      ['nightly-vacuum', true],
    ]);

    expect(await spool.schedules.remove('heartbeat')).toBe(true);
    expect(await spool.schedules.get('heartbeat')).toBeUndefined();
    expect(await spool.schedules.remove('heartbeat')).toBe(false);
    await spool.close();
    await expect(spool.schedules.list()).rejects.toMatchObject({ code: 'CLOSED' });
  });

  it('refuses an invalid cron, time zone, everyMs < 1000 or queue name, and stores nothing', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock, config: QUIET });
    const good: ScheduleSpec = { everyMs: 60_000, queue: 'jobs', payload: { n: 1 } };
    const stored = await spool.schedules.upsert('s', good);
    const before = readDb(spools.path, (conn) => conn.prepare('SELECT * FROM schedules').all());
    const cases: [string, unknown, string][] = [
      ['a cron minute of 61', { cron: '61 * * * *', queue: 'jobs' }, 'INVALID_ARGUMENT'],
      ['a cron of 4 fields', { cron: '* * * *', queue: 'jobs' }, 'INVALID_ARGUMENT'],
      ['a cron of 7 fields', { cron: '* * * * * * *', queue: 'jobs' }, 'INVALID_ARGUMENT'],
      ['a cron that never fires', { cron: '0 0 31 2 *', queue: 'jobs' }, 'INVALID_ARGUMENT'],
      ['an unknown time zone', { cron: '0 3 * * *', tz: 'Mars/Olympus', queue: 'jobs' }, 'INVALID_ARGUMENT'],
      ['everyMs under 1000', { everyMs: 999, queue: 'jobs' }, 'INVALID_ARGUMENT'],
      ['a fractional everyMs', { everyMs: 1000.5, queue: 'jobs' }, 'INVALID_ARGUMENT'],
      ['both cron and everyMs', { cron: '* * * * *', everyMs: 1000, queue: 'jobs' }, 'INVALID_ARGUMENT'],
      ['neither cron nor everyMs', { queue: 'jobs' }, 'INVALID_ARGUMENT'],
      ['a tz on an everyMs schedule', { everyMs: 1000, tz: 'UTC', queue: 'jobs' }, 'INVALID_ARGUMENT'],
      ['an unknown missed policy', { everyMs: 1000, queue: 'jobs', missed: 'some' }, 'INVALID_ARGUMENT'],
      ['an unknown key', { everyMs: 1000, queue: 'jobs', every: 5 }, 'INVALID_ARGUMENT'],
      ['a payload that is not JSON', { everyMs: 1000, queue: 'jobs', payload: { at: new Date() } }, 'INVALID_ARGUMENT'],
      ['a bad queue name', { everyMs: 1000, queue: 'bad name' }, 'INVALID_QUEUE_NAME'],
      ['no queue', { everyMs: 1000 }, 'INVALID_QUEUE_NAME'],
      ['not an object', 'every second', 'INVALID_ARGUMENT'],
      ['a startAt Date before 1970', { everyMs: 1000, queue: 'jobs', startAt: new Date(-1000) }, 'INVALID_ARGUMENT'],
      ['an invalid startAt Date', { everyMs: 1000, queue: 'jobs', startAt: new Date(Number.NaN) }, 'INVALID_ARGUMENT'],
      [
        'a spec whose getter throws',
        Object.defineProperty({ everyMs: 1000 }, 'queue', {
          enumerable: true,
          get() {
            throw new Error('boom');
          },
        }),
        'INVALID_ARGUMENT',
      ],
    ];
    for (const [what, spec, code] of cases) {
      const error = await spool.schedules.upsert('s', spec as ScheduleSpec).catch((e: unknown) => e);
      expect(isSpoolError(error, code as 'INVALID_ARGUMENT'), `${what}: ${String(error)}`).toBe(true);
    }
    for (const name of ['', 'with space', 'a'.repeat(81), '__proto__']) {
      expect(await spool.schedules.upsert(name, good).catch((e: unknown) => (e as { code: string }).code)).toBe('INVALID_ARGUMENT');
    }
    expect(readDb(spools.path, (conn) => conn.prepare('SELECT * FROM schedules').all())).toEqual(before);
    expect(await spool.schedules.get('s')).toEqual(stored);
  });

  it('keeps the anchor and cursor on an identical re-upsert, and re-anchors a changed spec', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock, config: QUIET });
    const seen = recorder(spool, 'jobs');
    await spool.start();
    const t0 = clock.now();
    await spool.schedules.upsert('s', { everyMs: 1000, queue: 'jobs', payload: { a: 1, b: 2 } });
    clock.advance(1500);
    await until(() => seen.length === 1, 'the first tick');
    // Identical (object key order aside): nothing moves.
    const same = await spool.schedules.upsert('s', { everyMs: 1000, queue: 'jobs', payload: { b: 2, a: 1 } });
    expect(same).toMatchObject({ anchor: t0, lastTickAt: t0 + 1000, nextAt: t0 + 2000, updatedAt: t0 });
    // Changed: anchored at this upsert; the cursor stays as history.
    const changed = await spool.schedules.upsert('s', { everyMs: 1000, queue: 'jobs', payload: { a: 2 } });
    expect(changed).toMatchObject({ anchor: t0 + 1500, lastTickAt: t0 + 1000, nextAt: t0 + 2500, updatedAt: t0 + 1500, payload: { a: 2 } });
    clock.advance(1000);
    await until(() => seen.length === 2, 'the re-anchored tick');
    expect(seen.map((m) => [m.scheduledFor, m.payload])).toEqual([
      [t0 + 1000, { a: 1, b: 2 }],
      [t0 + 2500, { a: 2 }],
    ]);
    // startAt anchors explicitly.
    const anchored = await spool.schedules.upsert('s', { everyMs: 1000, queue: 'jobs', payload: { a: 2 }, startAt: t0 + 10_000 });
    expect(anchored).toMatchObject({ anchor: t0 + 10_000, startAt: t0 + 10_000, nextAt: t0 + 11_000 });
  });

  it('re-enabled together with a change of spec, sends none of the ticks that fell due while it was disabled', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock, config: QUIET });
    const seen = recorder(spool, 'jobs');
    await spool.start();
    const t0 = clock.now();
    // An app's boot code: a fixed startAt, the flag and the payload from its config.
    const spec: ScheduleSpec = { everyMs: 1000, queue: 'jobs', payload: { v: 1 }, startAt: t0, missed: 'all' };
    await spool.schedules.upsert('s', spec);
    clock.advance(1000);
    await until(() => seen.length === 1, 'the first tick');
    await spool.schedules.upsert('s', { ...spec, enabled: false });
    // Ten ticks fall due while it is disabled.
    clock.advance(10_000);
    await turns();
    const resumed = await spool.schedules.upsert('s', { ...spec, payload: { v: 2 }, enabled: true });
    expect(resumed).toMatchObject({ enabled: true, anchor: t0, lastTickAt: t0 + 1000, nextAt: t0 + 12_000 });
    await turns();
    expect(seen).toHaveLength(1);
    clock.advance(1000);
    await until(() => seen.length === 2, 'the first tick after the re-enable');
    await turns();
    expect(seen.map((m) => [m.scheduledFor! - t0, m.payload])).toEqual([
      [1000, { v: 1 }],
      [12_000, { v: 2 }],
    ]);
  });
});

describe('ticks', () => {
  it('sends one message per tick at anchor + k × everyMs, with schedule and scheduledFor; a late timer skips none', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock, config: QUIET });
    const seen = recorder(spool, 'maintenance');
    await spool.start();
    const t0 = clock.now();
    await spool.schedules.upsert('heartbeat', { everyMs: 1000, queue: 'maintenance', payload: { task: 'ping' } });
    clock.advance(999);
    await turns();
    expect(seen).toHaveLength(0);
    const done = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.to === 'done');
    clock.advance(1);
    await done;
    expect(seen[0]).toMatchObject({ queue: 'maintenance', payload: { task: 'ping' }, schedule: 'heartbeat', scheduledFor: t0 + 1000, attempt: 1 });
    expect(await spool.get(seen[0]!.id)).toMatchObject({ state: 'done', schedule: 'heartbeat', scheduledFor: t0 + 1000, payload: { task: 'ping' } });
    // Three ticks fall due in one stride of the clock: all three are sent, in order.
    clock.advance(3000);
    await until(() => seen.length === 4, 'three more ticks');
    expect(seen.map((m) => m.scheduledFor! - t0)).toEqual([1000, 2000, 3000, 4000]);
    expect(await spool.schedules.get('heartbeat')).toMatchObject({ lastTickAt: t0 + 4000, nextAt: t0 + 5000 });
    // A message sent otherwise carries neither field.
    const other = await spool.send('maintenance', 'plain');
    await until(() => seen.length === 5, 'the plain message');
    expect(seen[4]).not.toHaveProperty('schedule');
    expect(await spool.get(other)).not.toHaveProperty('scheduledFor');
  });

  it('keeps one timer for all schedules, never one per schedule', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock, config: QUIET });
    recorder(spool, 'jobs');
    await spool.start();
    await spool.schedules.upsert('s0', { everyMs: 5000, queue: 'jobs' });
    const withOne = clock.pending;
    for (let i = 1; i < 50; i++) await spool.schedules.upsert(`s${i}`, { everyMs: 1000 + i * 10, queue: 'jobs' });
    expect(clock.pending).toBe(withOne);
    await spool.stop();
    // Stopped: no schedule timer at all.
    expect(clock.pending).toBe(0);
  });

  it('fires only in a started spool; a producer only manages', async () => {
    const clock = createTestClock();
    const producer = spools.open({ clock, config: QUIET });
    const t0 = clock.now();
    await producer.schedules.upsert('heartbeat', { everyMs: 1000, queue: 'jobs', missed: 'one' });
    clock.advance(5500);
    await turns();
    expect(sentBy(spools.path, 'heartbeat')).toEqual([]);
    expect((await producer.stats()).queues).toEqual({});

    const owner = spools.open({ clock, config: QUIET });
    const seen = recorder(owner, 'jobs');
    await owner.start();
    await until(() => seen.length === 1, 'the catch-up');
    // One catch-up for the five missed ticks: the latest of them.
    expect(seen.map((m) => m.scheduledFor! - t0)).toEqual([5000]);
    clock.advance(500);
    await until(() => seen.length === 2, 'the next tick');
    expect(seen.map((m) => m.scheduledFor! - t0)).toEqual([5000, 6000]);
  });

  it('picks up within a poll a schedule that another handle (a producer, the CLI) changed', async () => {
    const clock = createTestClock();
    const owner = spools.open({ clock, config: { ...QUIET, processor: { pollIntervalMs: 1000, batchSize: 100 } } });
    const seen = recorder(owner, 'jobs');
    await owner.start();
    const producer = spools.open({ clock, config: QUIET });
    const t0 = clock.now();
    await producer.schedules.upsert('fast', { everyMs: 1000, queue: 'jobs' });
    clock.advance(1000);
    await until(() => seen.length === 1, 'the first tick, found by the poll');
    expect(seen[0]!.scheduledFor).toBe(t0 + 1000);
  });

  it('reports a refused tick as an error event and still moves the cursor: no flood', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock, config: { ...QUIET, queues: { jobs: { accepting: false } } } });
    const gate = createGate();
    const seen: Message[] = [];
    spool.register('jobs', async (message) => {
      seen.push(message);
      await gate.wait();
    });
    spools.onCleanup(() => gate.open());
    await spool.start();
    const t0 = clock.now();
    await spool.schedules.upsert('s', { everyMs: 1000, queue: 'jobs' });
    const refused = nextEvent<SpoolErrorEvent>(spool.events$, (e) => e.type === 'error' && e.code === 'NOT_ACCEPTING');
    clock.advance(1000);
    expect((await refused).message).toContain('Schedule "s"');
    expect(await spool.schedules.get('s')).toMatchObject({ lastTickAt: t0 + 1000, nextAt: t0 + 2000 });
    expect(sentBy(spools.path, 's')).toEqual([]);

    // Accepting again, but full: one message in flight fills maxPending 1, the next tick is refused.
    await spool.settings.update({ queues: { jobs: { accepting: true, maxPending: 1 } } });
    clock.advance(1000);
    await until(() => seen.length === 1, 'a tick after accepting again');
    const full = nextEvent<SpoolErrorEvent>(spool.events$, (e) => e.type === 'error' && e.code === 'QUEUE_FULL');
    clock.advance(1000);
    await full;
    expect(await spool.schedules.get('s')).toMatchObject({ lastTickAt: t0 + 3000 });
    // The refused ticks are not sent later: one message only, for the tick that was accepted.
    const done = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.to === 'done');
    gate.open();
    await done;
    clock.advance(1000);
    await until(() => seen.length === 2, 'the next tick');
    expect(seen.map((m) => m.scheduledFor! - t0)).toEqual([2000, 4000]);
  });

  it('reports a hand-corrupted schedule once and stops it, while the others tick on', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock, config: QUIET });
    const seen = recorder(spool, 'jobs');
    await spool.schedules.upsert('broken', { everyMs: 1000, queue: 'jobs' });
    await spool.schedules.upsert('fine', { everyMs: 1000, queue: 'jobs' });
    const conn = spools.connect();
    conn.prepare("UPDATE schedules SET spec = '{not json' WHERE name = 'broken'").run();
    conn.close();
    const errors: SpoolErrorEvent[] = [];
    spool.events$.subscribe((e) => e.type === 'error' && errors.push(e));
    await spool.start();
    clock.advance(1000);
    await until(() => seen.length === 1, 'the healthy tick');
    clock.advance(1000);
    await until(() => seen.length === 2, 'the next healthy tick');
    expect(errors.map((e) => [e.code, e.message.includes('"broken" is unreadable')])).toEqual([['STORAGE_ERROR', true]]);
    expect(await spool.schedules.get('broken')).toMatchObject({ payload: '{not json', nextAt: null });
    // An upsert replaces it, and it ticks again.
    await spool.schedules.upsert('broken', { everyMs: 1000, queue: 'jobs' });
    clock.advance(1000);
    await until(() => seen.length === 4, 'both ticks');
  });
});

describe('ticks that cannot be sent', () => {
  it('a schedule whose ticks cannot be computed (a time zone gone from ICU) is reported once and parked, not fired in a loop', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock, config: QUIET });
    const seen = recorder(spool, 'jobs');
    await spool.schedules.upsert('zoned', { cron: '* * * * *', tz: 'Europe/Berlin', queue: 'jobs' });
    await spool.schedules.upsert('fine', { everyMs: 60_000, queue: 'jobs' });
    const conn = spools.connect();
    conn.prepare(`UPDATE schedules SET spec = replace(spec, 'Europe/Berlin', 'Mars/Olympus') WHERE name = 'zoned'`).run();
    conn.close();
    const errors: SpoolErrorEvent[] = [];
    spool.events$.subscribe((e) => e.type === 'error' && errors.push(e));
    await spool.start();
    clock.advance(60_000);
    await until(() => seen.length === 1, 'the healthy tick');
    // Left due, it would fire again at every turn: thousands of error events in these turns.
    await turns(200);
    expect(errors.map((e) => [e.code, e.message.includes('"zoned" cannot compute its ticks')])).toEqual([['STORAGE_ERROR', true]]);
    expect(await spool.schedules.get('zoned')).toMatchObject({ nextAt: null });
    clock.advance(60_000);
    await until(() => seen.length === 2, 'the next healthy tick');
  });

  it('a parked schedule ticks again after an upsert of the very spec it holds (its time zone known again)', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock, config: QUIET });
    const seen = recorder(spool, 'jobs');
    const spec: ScheduleSpec = { cron: '* * * * *', tz: 'Europe/Berlin', queue: 'jobs' };
    await spool.schedules.upsert('zoned', spec);
    // This Node's ICU does not know the zone (as above): the schedule is parked.
    const conn = spools.connect();
    conn.prepare(`UPDATE schedules SET spec = replace(spec, 'Europe/Berlin', 'Mars/Olympus') WHERE name = 'zoned'`).run();
    const parked = nextEvent<SpoolErrorEvent>(spool.events$, (e) => e.type === 'error' && e.message.includes('"zoned" cannot compute its ticks'));
    await spool.start();
    clock.advance(60_000);
    await parked;
    expect(await spool.schedules.get('zoned')).toMatchObject({ enabled: true, nextAt: null });
    // An ICU that knows it again (Node with full-icu): the stored spec is the app's own again.
    conn.prepare(`UPDATE schedules SET spec = replace(spec, 'Mars/Olympus', 'Europe/Berlin') WHERE name = 'zoned'`).run();
    conn.close();
    // The app's boot upserts its spec, identical to the stored one: "until it is upserted again".
    const now = clock.now();
    const again = await spool.schedules.upsert('zoned', spec);
    expect(again.nextAt).toBe(Math.floor(now / 60_000) * 60_000 + 60_000);
    clock.advance(60_000);
    await until(() => seen.length === 1, 'a tick after the upsert');
  });

  it("judges the payload's size as a send does: the queue's own maxPayloadBytes, else the spool's", async () => {
    const spool = spools.open({ clock: createTestClock(), config: QUIET, maxPayloadBytes: 1000 });
    await spool.queues.create('roomy', { maxPayloadBytes: 4096 });
    const big = 'x'.repeat(2000);
    await expect(spool.schedules.upsert('a', { everyMs: 1000, queue: 'plain', payload: big })).rejects.toMatchObject({ code: 'INVALID_PAYLOAD' });
    await expect(spool.send('plain', big)).rejects.toMatchObject({ code: 'INVALID_PAYLOAD' });
    // A queue's own limit replaces the spool's, for a schedule as for a send.
    expect(await spool.schedules.upsert('b', { everyMs: 1000, queue: 'roomy', payload: big })).toMatchObject({ name: 'b' });
    expect(await spool.send('roomy', big)).toBeDefined();
  });

  it('obeys the rules of its queue: no FIFO queue (no group to send), and the queue\'s own maxPayloadBytes', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock, config: QUIET });
    await spool.queues.create('jobs.fifo', { contentDedupe: true });
    await spool.queues.create('small', { maxPayloadBytes: 1024 });
    const refused = async (spec: ScheduleSpec) => {
      try {
        await spool.schedules.upsert('s', spec);
      } catch (error) {
        return isSpoolError(error) && error.code;
      }
      return 'stored';
    };
    expect(await refused({ everyMs: 1000, queue: 'jobs.fifo' })).toBe('INVALID_ARGUMENT');
    expect(await refused({ everyMs: 1000, queue: 'small', payload: 'x'.repeat(2000) })).toBe('INVALID_PAYLOAD');
    expect(await spool.schedules.list()).toEqual([]);
    // A queue that becomes FIFO (or smaller) after the upsert refuses the tick: an error event, nothing stored.
    await spool.schedules.upsert('later', { everyMs: 1000, queue: 'later.fifo' });
    await spool.schedules.upsert('big', { everyMs: 1000, queue: 'roomy', payload: 'x'.repeat(2000) });
    await spool.queues.create('later.fifo', { contentDedupe: true });
    await spool.settings.update({ queues: { roomy: { maxPayloadBytes: 1024 } } });
    const errors: SpoolErrorEvent[] = [];
    spool.events$.subscribe((e) => e.type === 'error' && errors.push(e));
    await spool.start();
    clock.advance(1000);
    await until(() => errors.length === 2, 'both refusals');
    expect(errors.map((e) => e.code).sort()).toEqual(['INVALID_ARGUMENT', 'INVALID_PAYLOAD']);
    expect(readDb(spools.path, (c) => c.prepare('SELECT count(*) FROM messages').pluck().get())).toBe(0);
    // Refused ticks are not sent later; the cursor moved on.
    expect(await spool.schedules.get('later')).toMatchObject({ lastTickAt: clock.now() });
  });
});

describe('missed ticks', () => {
  /** A schedule created at t0 by a producer, then a spool started after `downMs`; the ticks it sends at start. */
  async function catchUp(missed: 'one' | 'all' | 'none', downMs: number, everyMs = 1000) {
    const clock = createTestClock();
    const t0 = clock.now();
    const producer = spools.open({ clock, config: QUIET });
    await producer.schedules.upsert('s', { everyMs, queue: 'jobs', missed });
    await producer.close();
    clock.advance(downMs);
    const spool = spools.open({ clock, config: QUIET });
    recorder(spool, 'jobs');
    await spool.start();
    await turns();
    await until(() => readDb(spools.path, (c) => (c.prepare("SELECT count(*) AS n FROM messages WHERE state != 'done'").get() as { n: number }).n) === 0, 'idle');
    return { clock, spool, t0, ticks: sentBy(spools.path, 's').map((m) => m.scheduledFor - t0) };
  }

  it("'one' (the default) sends one catch-up for the latest missed tick", async () => {
    const { ticks, clock, spool, t0 } = await catchUp('one', 10_500);
    expect(ticks).toEqual([10_000]);
    expect(await spool.schedules.get('s')).toMatchObject({ lastTickAt: t0 + 10_000, nextAt: t0 + 11_000 });
    clock.advance(500);
    await until(() => sentBy(spools.path, 's').length === 2, 'the next live tick');
  });

  it("'all' backfills each missed tick, in order", async () => {
    const { ticks } = await catchUp('all', 10_500);
    expect(ticks).toEqual([1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10_000]);
  });

  it("'all' backfills at most 1,000: the latest ones", async () => {
    const { ticks } = await catchUp('all', 1_500_500);
    expect(ticks).toHaveLength(1000);
    expect(ticks[0]).toBe(501_000);
    expect(ticks.at(-1)).toBe(1_500_000);
  });

  it("'none' sends nothing for them and goes on with the next tick", async () => {
    const { ticks, clock, spool, t0 } = await catchUp('none', 10_500);
    expect(ticks).toEqual([]);
    expect(await spool.schedules.get('s')).toMatchObject({ lastTickAt: null, nextAt: t0 + 11_000 });
    clock.advance(500);
    await until(() => sentBy(spools.path, 's').length === 1, 'the next live tick');
    expect(sentBy(spools.path, 's')[0]!.scheduledFor).toBe(t0 + 11_000);
  });

  it('has none before the first tick of a schedule created before the first start()', async () => {
    const { ticks, clock } = await catchUp('all', 900);
    expect(ticks).toEqual([]);
    clock.advance(100);
    await until(() => sentBy(spools.path, 's').length === 1, 'the first tick');
  });

  it('a change of owner sends no tick twice and skips none (missed: all)', async () => {
    const clock = createTestClock();
    const t0 = clock.now();
    const first = spools.open({ clock, config: QUIET });
    recorder(first, 'jobs');
    await first.start();
    await first.schedules.upsert('s', { everyMs: 1000, queue: 'jobs', missed: 'all' });
    clock.advance(3000);
    await until(() => sentBy(spools.path, 's').length === 3, 'three ticks');
    await first.close();
    clock.advance(2500); // ticks 4000 and 5000 fall due with no owner
    const second = spools.open({ clock, config: QUIET });
    recorder(second, 'jobs');
    // The new owner re-upserts the same spec at boot, as an app does: nothing moves.
    await second.schedules.upsert('s', { everyMs: 1000, queue: 'jobs', missed: 'all' });
    await second.start();
    clock.advance(1500);
    await until(() => sentBy(spools.path, 's').length === 7, 'the backfill and the live ticks');
    await turns();
    expect(sentBy(spools.path, 's').map((m) => m.scheduledFor - t0)).toEqual([1000, 2000, 3000, 4000, 5000, 6000, 7000]);
  });
});

describe('cron across DST (Europe/Berlin)', () => {
  /** Runs a started spool from `from` to `to` on the clock and returns the ticks' times (ISO). */
  async function run(cron: string, from: string, to: string): Promise<string[]> {
    const clock = createTestClock(Date.parse(from));
    const spool = spools.open({ clock, config: QUIET });
    recorder(spool, 'jobs');
    await spool.start();
    await spool.schedules.upsert('dst', { cron, tz: 'Europe/Berlin', queue: 'jobs' });
    const end = Date.parse(to);
    while (clock.now() < end) {
      await turns(4);
      clock.advance(Math.min(clock.nextDue() ?? Infinity, end - clock.now()));
    }
    await turns();
    return sentBy(spools.path, 'dst').map((m) => new Date(m.scheduledFor).toISOString());
  }

  it('does not run a time that the spring-forward skips that day', async () => {
    // 2024-03-31: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist that day.
    expect(await run('30 2 * * *', '2024-03-29T12:00:00Z', '2024-04-01T12:00:00Z')).toEqual([
      '2024-03-30T01:30:00.000Z',
      '2024-04-01T00:30:00.000Z',
    ]);
  });

  it('runs a time that the fall-back repeats once', async () => {
    // 2024-10-27: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice, and runs once.
    expect(await run('30 2 * * *', '2024-10-25T12:00:00Z', '2024-10-28T12:00:00Z')).toEqual([
      '2024-10-26T00:30:00.000Z',
      '2024-10-27T00:30:00.000Z',
      '2024-10-28T01:30:00.000Z',
    ]);
  });
});
