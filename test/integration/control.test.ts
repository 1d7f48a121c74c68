/**
 * Load control (issue 11) on an injected clock: rate limits and time budgets per queue, changed
 * live, isolated per queue on a shared pool, and a handler's RateLimitError pushback. Time moves
 * only when a test advances it, so every start time is exact.
 */
import { describe, expect, it } from 'vitest';
import { isSpoolError, RateLimitError, RetryAfterError, type Spool } from '../../src/index.js';
import { nextEvent, reached } from '../helpers/events.js';
import { useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';

const spools = useTempSpools();

type TestClock = ReturnType<typeof createTestClock>;

/** No poll and no sweep on the test clock: only the runtime's own timers move things. */
const QUIET = { processor: { pollIntervalMs: 3_600_000, batchSize: 100 }, maintenance: { intervalMs: 2_147_483_647 } };

function setup(config: Record<string, unknown>) {
  const clock = createTestClock();
  const spool = spools.open({ clock, config: { ...QUIET, ...config } });
  return { clock, spool, t0: clock.now() };
}

/** Lets pending callbacks, immediates and I/O run a few times (no timed wait). */
async function turns(n = 8) {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Waits (event-loop turns, no timers) until `condition` holds; fails after many turns. */
async function until(condition: () => boolean, what: string) {
  for (let i = 0; i < 500; i++) {
    if (condition()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`Never happened: ${what}`);
}

/** Resolves after `ms` on the test clock. */
const sleepOn = (clock: TestClock, ms: number) => new Promise<void>((resolve) => clock.setTimeout(resolve, ms));

/** The most starts any interval [t, t + perMs) holds (starts sorted). */
function busiestWindow(starts: number[], perMs: number): number {
  let worst = 0;
  for (let i = 0, j = 0; i < starts.length; i++) {
    while (starts[j]! <= starts[i]! - perMs) j++;
    worst = Math.max(worst, i - j + 1);
  }
  return worst;
}

/** Busy time of `intervals` inside (t − perMs, t] (running ones: end = null, counted up to t). */
function busyAt(intervals: [number, number | null][], t: number, perMs: number): number {
  let sum = 0;
  for (const [s, e] of intervals) sum += Math.max(0, Math.min(e ?? t, t) - Math.max(s, t - perMs));
  return sum;
}

describe('rate limits', () => {
  it('starts at most max per rolling window, exactly, and no window ever holds more', async () => {
    const { clock, spool, t0 } = setup({ executor: { concurrency: 10 }, queues: { api: { rateLimit: { max: 3, perMs: 1000 } } } });
    const starts: number[] = [];
    spool.register('api', () => void starts.push(clock.now() - t0));
    await spool.start();

    await spool.sendBatch('api', [1, 2]);
    await until(() => starts.length === 2, 'two starts');
    clock.advance(400);
    await spool.sendBatch('api', [3, 4, 5, 6, 7]);
    await until(() => starts.length === 3, 'the third start');
    await turns();
    expect(starts).toEqual([0, 0, 400]);
    expect((await spool.stats()).control.api).toEqual({ limitedBy: 'rate', busyFraction: 0, startsInWindow: 3 });

    clock.advance(599); // 999: the window still holds 3
    await turns();
    expect(starts).toHaveLength(3);
    clock.advance(1); // 1000: the two starts of 0 leave the window
    await until(() => starts.length === 5, 'starts at 1000');
    clock.advance(399);
    await turns();
    expect(starts).toHaveLength(5);
    clock.advance(1); // 1400: the start of 400 leaves
    await until(() => starts.length === 6, 'a start at 1400');
    clock.advance(600);
    await until(() => starts.length === 7, 'a start at 2000');
    await turns();
    expect(starts).toEqual([0, 0, 400, 1000, 1000, 1400, 2000]);
    expect(busiestWindow(starts, 1000)).toBe(3);
  });

  it('holds under a steady stream: every window of a long run has at most max starts', async () => {
    const { clock, spool, t0 } = setup({ executor: { concurrency: 8 }, queues: { api: { rateLimit: { max: 7, perMs: 250 } } } });
    const starts: number[] = [];
    spool.register('api', () => void starts.push(clock.now() - t0));
    await spool.start();
    await spool.sendBatch('api', Array.from({ length: 100 }, (_, i) => i));
    // Drive the clock timer by timer; sends trickle in too.
    for (let step = 0; starts.length < 120 && step < 2000; step++) {
      await turns(3);
      if (step % 7 === 0) await spool.send('api', step);
      clock.advance(clock.nextDue() ?? 1);
    }
    expect(starts.length).toBeGreaterThanOrEqual(100);
    expect(busiestWindow(starts, 250)).toBe(7);
    // Never idle while work waited: each window boundary released up to 7 more at once.
    expect(starts.filter((t) => t === 0)).toHaveLength(7);
  });

  it('takes a live change on the next claim: raised, lowered, back to queueDefaults, opted out', async () => {
    const { clock, spool, t0 } = setup({ executor: { concurrency: 20 }, queueDefaults: { rateLimit: { max: 2, perMs: 1000 } } });
    const starts: number[] = [];
    spool.register('api', () => void starts.push(clock.now() - t0));
    await spool.start();
    await spool.sendBatch('api', Array.from({ length: 12 }, (_, i) => i));
    await until(() => starts.length === 2, 'the default limit');
    await turns();
    expect(starts).toHaveLength(2);

    // Raised: three more at once, without waiting for the window.
    await spool.settings.update({ queues: { api: { rateLimit: { max: 5, perMs: 1000 } } } });
    await until(() => starts.length === 5, 'the raised limit');
    // Lowered to 1: the five inside must all leave first.
    await spool.settings.update({ queues: { api: { rateLimit: { max: 1 } } } });
    clock.advance(999);
    await turns();
    expect(starts).toHaveLength(5);
    clock.advance(1);
    await until(() => starts.length === 6, 'the lowered limit at 1000');
    await turns();
    expect(starts).toHaveLength(6);
    // null removes the queue's own limit: queueDefaults (2 per 1000) applies again, one start left.
    await spool.settings.update({ queues: { api: { rateLimit: null } } });
    await until(() => starts.length === 7, 'back to queueDefaults');
    await turns();
    expect(starts).toHaveLength(7);
    expect((await spool.stats()).control.api).toMatchObject({ limitedBy: 'rate', startsInWindow: 2 });
    // false opts the queue out of the default limit: the rest start now.
    await spool.settings.update({ queues: { api: { rateLimit: false } } });
    await until(() => starts.length === 12, 'opted out');
    expect(starts).toEqual([0, 0, 0, 0, 0, 1000, 1000, 1000, 1000, 1000, 1000, 1000]);
    expect((await spool.stats()).control.api).toBeUndefined();
  });

  it('a window made longer counts the starts the shorter one had let go: no interval of the new perMs holds more than max', async () => {
    const { clock, spool, t0 } = setup({ executor: { concurrency: 10 }, queues: { api: { rateLimit: { max: 3, perMs: 1000 } } } });
    const starts: number[] = [];
    spool.register('api', () => void starts.push(clock.now() - t0));
    await spool.start();
    await spool.sendBatch('api', [1, 2, 3]);
    await until(() => starts.length === 3, 'three starts');
    clock.advance(1500);
    // A look at the window (stats(), or a claim) while the old, shorter window applies.
    expect((await spool.stats()).control.api).toMatchObject({ startsInWindow: 0 });
    // 3 per minute now: the three starts at 0 hold the next ones until 60,000.
    await spool.settings.update({ queues: { api: { rateLimit: { max: 3, perMs: 60_000 } } } });
    await spool.sendBatch('api', [4, 5, 6]);
    await turns();
    expect(starts).toEqual([0, 0, 0]);
    expect((await spool.stats()).control.api).toMatchObject({ limitedBy: 'rate', startsInWindow: 3 });
    clock.advance(60_000 - 1500 - 1);
    await turns();
    expect(starts).toHaveLength(3);
    clock.advance(1);
    await until(() => starts.length === 6, 'the longer window at 60,000');
    expect(busiestWindow(starts, 60_000)).toBe(3);
  });

  it('counts pull hand-outs too: receives and waits get at most max per window, and a held-back waiter wakes when the window allows', async () => {
    const { clock, spool } = setup({ queues: { feed: { rateLimit: { max: 2, perMs: 1000 } } } });
    await spool.start();
    await spool.queues.create('feed');
    await spool.sendBatch('feed', [1, 2, 3, 4, 5]);
    // A receive of 10 gets the window's 2; the next gets nothing while the window is full.
    expect(await spool.receive('feed', { max: 10, waitMs: 0 })).toHaveLength(2);
    expect(await spool.receive('feed', { max: 10, waitMs: 0 })).toHaveLength(0);
    expect((await spool.stats()).control.feed).toMatchObject({ limitedBy: 'rate', startsInWindow: 2 });
    // A waiter finds the queue held back and sleeps until the window frees a start.
    const consumer = spool.consumer();
    let got: unknown;
    const waiting = consumer.wait('feed', {}).then((m) => (got = m));
    await turns();
    expect(got).toBeUndefined();
    clock.advance(999);
    await turns();
    expect(got).toBeUndefined();
    clock.advance(1);
    await until(() => got !== undefined, 'the waiter got a message when the window moved');
    await waiting;
    expect(got).toMatchObject({ queue: 'feed', payload: 3 });
    await consumer.close();
  });

  it('wakes a pull waiter it held back after stop(): the owner still gates hand-outs, and tells waiters when the window opens', async () => {
    const { clock, spool } = setup({ queues: { feed: { rateLimit: { max: 1, perMs: 1000 } } } });
    await spool.queues.create('feed');
    await spool.start();
    await spool.sendBatch('feed', [1, 2]);
    expect(await spool.receive('feed', { waitMs: 0 })).toHaveLength(1);
    await spool.stop();
    const consumer = spool.consumer();
    let got: unknown;
    const waiting = consumer.wait('feed', {}).then((m) => (got = m));
    await turns();
    // Held back: the window still holds the first hand-out.
    expect(got).toBeUndefined();
    clock.advance(1000);
    await until(() => got !== undefined, 'the waiter woken when the window opened');
    expect(got).toMatchObject({ queue: 'feed', payload: 2 });
    await waiting;
    await consumer.close();
  });

  it('holds back only its own queue: the other queues of a shared pool take its share', async () => {
    const { clock, spool } = setup({ executor: { concurrency: 2 }, queues: { limited: { rateLimit: { max: 1, perMs: 60_000 } } } });
    const seen = { limited: 0, free: 0 };
    spool.register('limited', () => void (seen.limited += 1));
    spool.register('free', () => void (seen.free += 1));
    // The limited queue's rows come first in the shared pool's order (higher priority).
    await spool.sendBatch('limited', [1, 2, 3, 4, 5], { priority: 10 });
    await spool.sendBatch('free', Array.from({ length: 20 }, (_, i) => i));
    const freeDone = reached(spool.events$, 'done', 20, 'free');
    await spool.start();
    await freeDone;
    await turns();
    expect(seen).toEqual({ limited: 1, free: 20 });
    const stats = await spool.stats();
    expect(stats.queues.limited).toMatchObject({ pending: 4, processing: 0 });
    expect(stats.control.limited).toMatchObject({ limitedBy: 'rate', startsInWindow: 1 });
    expect(stats.control.free).toBeUndefined();
    expect(spool.settings.explain()).toContainEqual({ path: ['queues', 'limited', 'rateLimit', 'max'], value: 1, layer: 'config' });

    clock.advance(60_000);
    await until(() => seen.limited === 2, 'the next window');
  });
});

describe('time budgets', () => {
  /** Handlers of `ms` on the test clock; records [start, end] of each (end null while running). */
  function timed(spool: Spool, clock: TestClock, t0: number, queue: string, ms = 100) {
    const intervals: [number, number | null][] = [];
    let aborted = 0;
    spool.register(queue, async (_message, { signal }) => {
      const entry: [number, number | null] = [clock.now() - t0, null];
      intervals.push(entry);
      await sleepOn(clock, ms);
      if (signal.aborted) aborted += 1;
      entry[1] = clock.now() - t0;
    });
    return { intervals, aborted: () => aborted };
  }

  /** Advances the test clock timer by timer until `done()` (or the step limit). */
  async function drive(clock: TestClock, done: () => boolean) {
    for (let step = 0; !done() && step < 1000; step++) {
      await turns(4);
      if (done()) return;
      clock.advance(clock.nextDue() ?? 1);
    }
  }

  it('claims nothing once the budget is spent, until the window allows it: exact on the clock', async () => {
    const { clock, spool, t0 } = setup({ executor: { concurrency: 1 }, queues: { chores: { budget: { busyMs: 200, perMs: 1000 } } } });
    const { intervals, aborted } = timed(spool, clock, t0, 'chores');
    await spool.sendBatch('chores', Array.from({ length: 8 }, (_, i) => i));
    await spool.start();
    await drive(clock, () => intervals.length === 5 && intervals[4]![1] === null);
    // 100 ms handlers, 20% of one worker: two back to back, then the window must slide: the
    // budget frees at the first ms where the busy time is under 200 again.
    expect(intervals.map(([s]) => s)).toEqual([0, 100, 1001, 1101, 2002]);
    const stats = await spool.stats();
    // At 2002 the window (1002, 2002] holds 99 ms of the third handler and all of the fourth.
    expect(stats.control.chores).toEqual({ limitedBy: null, busyFraction: 0.199, startsInWindow: 2 });
    await drive(clock, () => intervals.length === 8 && intervals[7]![1] !== null);
    expect(intervals.map(([s]) => s)).toEqual([0, 100, 1001, 1101, 2002, 2102, 3003, 3103]);
    expect(aborted()).toBe(0);
    // No window of the run held more than the budget (one handler at a time: no overshoot).
    for (let t = 0; t <= 4200; t++) expect(busyAt(intervals, t, 1000), `window ending at ${t}`).toBeLessThanOrEqual(200);
  });

  it('with several handlers, exceeds the budget only by what those running when it ran out still spend', async () => {
    const { clock, spool, t0 } = setup({ executor: { concurrency: 3 }, queues: { chores: { budget: { busyMs: 150, perMs: 1000 } } } });
    const { intervals, aborted } = timed(spool, clock, t0, 'chores');
    await spool.sendBatch('chores', Array.from({ length: 12 }, (_, i) => i));
    await spool.start();
    await drive(clock, () => intervals.length === 12 && intervals.every(([, e]) => e !== null));
    expect(aborted()).toBe(0);
    // Every start found the budget unspent.
    for (const [s] of intervals) expect(busyAt(intervals.map(([a, e]) => [a, e !== null && e <= s ? e : null]), s, 1000), `start at ${s}`).toBeLessThan(150);
    // The overshoot: the moments the budget ran out, and what the handlers running then still spent.
    let overshoot = 0;
    for (let t = 0; t <= intervals.at(-1)![1]!; t++) {
      if (busyAt(intervals, t, 1000) >= 150 && busyAt(intervals, t - 1, 1000) < 150) {
        const still = intervals.filter(([s, e]) => s <= t && e! > t).reduce((sum, [, e]) => sum + (e! - t), 0);
        overshoot = Math.max(overshoot, still);
      }
    }
    expect(overshoot).toBeGreaterThan(0);
    let worst = 0;
    for (let t = 0; t <= intervals.at(-1)![1]! + 1000; t++) worst = Math.max(worst, busyAt(intervals, t, 1000));
    expect(worst).toBeGreaterThan(150);
    expect(worst).toBeLessThanOrEqual(150 + overshoot);
  });

  it('takes a live change at once: a budget lifted mid-wait lets the queue run now', async () => {
    const { clock, spool, t0 } = setup({ executor: { concurrency: 1 }, queueDefaults: { budget: { busyMs: 100, perMs: 10_000 } } });
    const { intervals } = timed(spool, clock, t0, 'chores');
    await spool.sendBatch('chores', [1, 2, 3]);
    await spool.start();
    await drive(clock, () => intervals.length === 1 && intervals[0]![1] !== null);
    await turns();
    expect(intervals).toHaveLength(1);
    expect((await spool.stats()).control.chores).toMatchObject({ limitedBy: 'budget', busyFraction: 0.01 });
    await spool.settings.update({ queues: { chores: { budget: false } } });
    await until(() => intervals.length === 2, 'a start after the budget was lifted');
    expect(intervals[1]![0]).toBe(100);
    await drive(clock, () => intervals.length === 3 && intervals[2]![1] !== null);
    expect(intervals).toEqual([[0, 100], [100, 200], [200, 300]]);
  });
});

describe('RateLimitError', () => {
  it('pauses the whole queue for ms without charging an attempt; other queues run on', async () => {
    const { clock, spool, t0 } = setup({ executor: { concurrency: 4 } });
    const calls: { id: string; attempt: number; deliveries: number; at: number }[] = [];
    let limited = true;
    spool.register('upstream', (message) => {
      calls.push({ id: message.id, attempt: message.attempt, deliveries: message.deliveries, at: clock.now() - t0 });
      if (limited) {
        limited = false;
        throw new RateLimitError(5000);
      }
    });
    let others = 0;
    spool.register('local', () => void (others += 1));
    await spool.start();
    const backToPending = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.from === 'processing' && e.to === 'pending');
    const first = await spool.send('upstream', 'a');
    await backToPending;
    await spool.sendBatch('upstream', ['b', 'c']);
    await spool.sendBatch('local', [1, 2, 3]);
    await until(() => others === 3, 'the other queue');
    await turns();
    expect(calls).toHaveLength(1);
    const info = (await spool.get(first))!;
    expect(info).toMatchObject({ state: 'pending', attempt: 1, deliveries: 1, lastError: null });
    expect(info.visibleAt).toBe(t0);
    const stats = await spool.stats();
    expect(stats.control.upstream).toEqual({ limitedBy: 'pushback', busyFraction: 0, startsInWindow: 0, pausedUntil: t0 + 5000 });
    expect(stats.queues.upstream).toMatchObject({ pending: 3, processing: 0 });

    clock.advance(4999);
    await turns();
    expect(calls).toHaveLength(1);
    const done = reached(spool.events$, 'done', 3, 'upstream');
    clock.advance(1);
    await done;
    expect(calls.map((c) => c.at)).toEqual([0, 5000, 5000, 5000]);
    // The deferred message kept its attempt; only its deliveries grew.
    expect(calls.find((c) => c.id === first && c.at === 5000)).toMatchObject({ attempt: 1, deliveries: 2 });
    expect((await spool.stats()).control.upstream).toBeUndefined();
  });

  it('lives in memory only: a restart ends the pause', async () => {
    const clock = createTestClock();
    const first = spools.open({ clock, config: QUIET });
    first.register('upstream', () => {
      throw new RateLimitError(3_600_000);
    });
    await first.start();
    const backToPending = nextEvent(first.events$, (e) => e.type === 'message.state' && e.to === 'pending' && e.from === 'processing');
    const id = await first.send('upstream', 'a');
    await backToPending;
    expect((await first.stats()).control.upstream).toMatchObject({ limitedBy: 'pushback' });
    await first.close();

    const second = spools.open({ clock, config: QUIET });
    second.register('upstream', () => {});
    const done = nextEvent(second.events$, (e) => e.type === 'message.state' && e.id === id && e.to === 'done');
    await second.start();
    await done;
    expect((await second.stats()).control).toEqual({});
  });

  it('refuses a pause that is not a number of ms ≥ 0 (a Symbol or a bare object too)', () => {
    for (const make of [(ms: unknown) => new RateLimitError(ms as number), (ms: unknown) => new RetryAfterError(ms as number)]) {
      for (const ms of [-1, Number.NaN, Infinity, '5', Symbol('s'), Object.create(null)]) {
        let caught: unknown;
        try {
          make(ms);
        } catch (error) {
          caught = error;
        }
        expect(isSpoolError(caught, 'INVALID_ARGUMENT'), typeof ms).toBe(true);
      }
    }
    expect(new RateLimitError(0).pauseMs).toBe(0);
    expect(new RetryAfterError(250)).toMatchObject({ delayMs: 250, message: 'Retry after 250 ms', name: 'RetryAfterError' });
  });
});
