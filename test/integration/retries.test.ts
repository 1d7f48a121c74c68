/**
 * Retries with backoff, dead letters and redrive, with an injected clock: time moves only when the
 * test advances it, so the backoff schedule is read exactly from each retried row's visible-at.
 */
import { describe, expect, it } from 'vitest';
import {
  NonRetryableError,
  RetryAfterError,
  type MessageStateEvent,
  type Spool,
  type SpoolEvent,
} from '../../src/index.js';
import { rejection } from '../helpers/errors.js';
import { nextEvent, reached } from '../helpers/events.js';
import { useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';

const spools = useTempSpools();

function setup(config: Record<string, unknown>, random?: () => number) {
  const clock = createTestClock();
  return { spool: spools.open({ config, clock, ...(random ? { random } : {}) }), clock };
}

const isState = (id: string, to: string) => (e: SpoolEvent) => e.type === 'message.state' && e.id === id && e.to === to;

/**
 * Runs a message that always fails and returns, for each retry, the delay between the failure and
 * the retried row's visible-at. The clock is advanced by exactly that delay to reach the next try.
 */
async function observeSchedule(spool: Spool, clock: ReturnType<typeof createTestClock>, retries: number): Promise<number[]> {
  spool.register('jobs', () => {
    throw new Error('boom');
  });
  await spool.start();
  let failed = nextEvent<MessageStateEvent>(spool.events$, (e) => e.type === 'message.state' && e.from === 'processing');
  const id = await spool.send('jobs', { n: 1 });
  const delays: number[] = [];
  for (let n = 1; n <= retries; n++) {
    const event = await failed;
    expect(event).toMatchObject({ id, to: 'pending', attempt: n });
    const info = (await spool.get(id))!;
    expect(info.state).toBe('pending');
    const delay = info.visibleAt - event.at;
    delays.push(delay);
    failed = nextEvent<MessageStateEvent>(spool.events$, (e) => e.type === 'message.state' && e.from === 'processing');
    clock.advance(delay);
  }
  // The last wait is not needed: it ends (empty) when the spool closes.
  failed.catch(() => {});
  return delays;
}

describe('retries and backoff', () => {
  it('waits min(maxDelayMs, delayMs·2^(n−1)) between exponential retries', async () => {
    const { spool, clock } = setup({
      queues: { jobs: { maxAttempts: 6, backoff: { type: 'exponential', delayMs: 1000, maxDelayMs: 5000, jitter: false } } },
    });
    expect(await observeSchedule(spool, clock, 5)).toEqual([1000, 2000, 4000, 5000, 5000]);
  });

  it('waits delayMs between fixed retries', async () => {
    const { spool, clock } = setup({
      queues: { jobs: { maxAttempts: 4, backoff: { type: 'fixed', delayMs: 50, maxDelayMs: 50, jitter: false } } },
    });
    expect(await observeSchedule(spool, clock, 3)).toEqual([50, 50, 50]);
  });

  it('with full jitter waits random · (delay + 1), rounded down, within [0, delay]', async () => {
    const draws = [0.5, 0, 0.9999];
    let i = 0;
    const { spool, clock } = setup(
      { queues: { jobs: { maxAttempts: 4, backoff: { type: 'exponential', delayMs: 1000, maxDelayMs: 300_000, jitter: true } } } },
      () => draws[i++ % draws.length]!,
    );
    // Bases 1000, 2000, 4000: half of the first, none of the second, all of the third (floor(0.9999 · 4001)).
    expect(await observeSchedule(spool, clock, 3)).toEqual([500, 0, 4000]);
  });

  it('a random source that throws or answers outside [0, 1) is replaced by Math.random: the message is retried, not left in flight', async () => {
    // NaN made the retry time NaN (the row refused it) and a throw escaped the settle: either
    // way the row stayed in processing, with no handler, until the next boot.
    const draws: (() => number)[] = [() => NaN, () => { throw new Error('rng down'); }, () => 1, () => -0.1, () => 0.5];
    let i = 0;
    const { spool, clock } = setup(
      { queues: { jobs: { maxAttempts: 6, backoff: { type: 'fixed', delayMs: 100, maxDelayMs: 100, jitter: true } } } },
      () => (draws[i++] ?? (() => 0.5))(),
    );
    const delays = await observeSchedule(spool, clock, 5);
    expect(i).toBeGreaterThanOrEqual(5);
    for (const delay of delays.slice(0, 4)) expect(delay).toSatisfy((d: number) => Number.isInteger(d) && d >= 0 && d <= 100);
    expect(delays[4]).toBe(50);
  });

  it('retries, then goes dead after maxAttempts with the last error as plain JSON in get() and dead()', async () => {
    const { spool, clock } = setup({
      queues: { jobs: { maxAttempts: 3, backoff: { type: 'fixed', delayMs: 100, maxDelayMs: 100, jitter: false } } },
    });
    const attempts: number[] = [];
    spool.register('jobs', (message) => {
      attempts.push(message.attempt);
      const error = new Error(`failure ${message.attempt}`) as Error & { code: string };
      error.code = 'SMTP_DOWN';
      throw error;
    });
    const errors: SpoolEvent[] = [];
    spool.events$.subscribe((e) => e.type === 'message.error' && errors.push(e));
    await spool.start();
    const id = await spool.send('jobs', { to: 'x' });
    const firstClaim = clock.now();
    const dead = nextEvent<MessageStateEvent>(spool.events$, isState(id, 'dead'));
    for (let n = 1; n < 3; n++) {
      await nextEvent(spool.events$, (e) => isState(id, 'pending')(e) && (e as MessageStateEvent).from === 'processing');
      clock.advance(100);
    }
    expect(await dead).toMatchObject({ from: 'processing', attempt: 3 });
    expect(attempts).toEqual([1, 2, 3]);
    expect(errors.map((e) => e.type === 'message.error' && e.code)).toEqual(['SMTP_DOWN', 'SMTP_DOWN', 'SMTP_DOWN']);

    const info = (await spool.get(id))!;
    // The first hand-out is the first claim, not a later one.
    expect(info).toMatchObject({ state: 'dead', attempt: 3, deliveries: 3, payload: { to: 'x' }, firstDeliveredAt: firstClaim });
    expect(info.lastError).toMatchObject({ code: 'SMTP_DOWN', message: 'failure 3' });
    expect(info.lastError!.stack).toContain('failure 3');
    // Plain JSON, not an Error: it survives a round trip unchanged.
    expect(JSON.parse(JSON.stringify(info.lastError))).toEqual(info.lastError);

    const letters = await spool.dead('jobs');
    expect(letters.map((m) => m.id)).toEqual([id]);
    expect(letters[0]!.lastError).toEqual(info.lastError);
    expect(await spool.dead('other')).toEqual([]);
    expect((await spool.stats()).queues.jobs).toMatchObject({ dead: 1, pending: 0 });
  });

  it('uses HANDLER_ERROR as the code of an error without one', async () => {
    const { spool } = setup({ queues: { jobs: { maxAttempts: 1 } } });
    spool.register('jobs', async () => {
      throw new TypeError('bad input');
    });
    await spool.start();
    const dead = reached(spool.events$, 'dead', 1);
    const id = await spool.send('jobs', {});
    await dead;
    expect((await spool.get(id))!.lastError).toMatchObject({ code: 'HANDLER_ERROR', message: 'bad input' });
  });

  it('keeps what a handler threw when it was not an Error: a string, an object with its code, a value without JSON', async () => {
    const { spool } = setup({ queues: { jobs: { maxAttempts: 1 } } });
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic.self = cyclic;
    const thrown: unknown[] = ['plain string', { code: 'UPSTREAM_429', message: 'slow down', retryIn: 30 }, 42, cyclic];
    spool.register('jobs', async (message) => {
      throw thrown[(message.payload as { i: number }).i];
    });
    await spool.start();
    const dead = reached(spool.events$, 'dead', thrown.length);
    const ids = await Promise.all(thrown.map((_, i) => spool.send('jobs', { i })));
    await dead;
    const errors = await Promise.all(ids.map(async (id) => (await spool.get(id))!.lastError));
    expect(errors).toEqual([
      { code: 'HANDLER_ERROR', message: 'plain string', value: 'plain string' },
      { code: 'UPSTREAM_429', message: 'slow down', value: { code: 'UPSTREAM_429', message: 'slow down', retryIn: 30 } },
      { code: 'HANDLER_ERROR', message: 'Non-error thrown: 42', value: 42 },
      { code: 'HANDLER_ERROR', message: 'Non-error thrown: [object Object]' },
    ]);
  });
});

describe('dead letters and redrive', () => {
  it('requeue(id) sends a dead letter back to pending with attempts reset, and it completes', async () => {
    const { spool } = setup({ queues: { jobs: { maxAttempts: 2, backoff: { type: 'fixed', delayMs: 0, maxDelayMs: 0, jitter: false } } } });
    let healthy = false;
    const seen: { attempt: number; deliveries: number }[] = [];
    spool.register('jobs', (message) => {
      seen.push({ attempt: message.attempt, deliveries: message.deliveries });
      if (!healthy) throw new Error('down');
    });
    await spool.start();
    const dead = reached(spool.events$, 'dead', 1);
    const id = await spool.send('jobs', { n: 1 });
    await dead;
    expect(seen.map((s) => s.attempt)).toEqual([1, 2]);

    healthy = true;
    // Held back by a stop, so the requeued row can be read at rest before it runs.
    await spool.stop();
    const redriven = nextEvent<MessageStateEvent>(spool.events$, isState(id, 'pending'));
    expect(await spool.requeue(id)).toBe(1);
    expect(await redriven).toMatchObject({ from: 'dead', attempt: 0 });
    expect(await spool.get(id)).toMatchObject({ state: 'pending', attempt: 0 });
    expect(await spool.dead('jobs')).toEqual([]);
    // A second requeue finds no dead letter.
    expect(await spool.requeue(id)).toBe(0);

    const done = nextEvent<MessageStateEvent>(spool.events$, isState(id, 'done'));
    await spool.start();
    expect(await done).toMatchObject({ attempt: 1 });
    expect(seen.at(-1)).toEqual({ attempt: 1, deliveries: 3 });
    expect(await spool.get(id)).toBeUndefined();
  });

  it('requeue({ queue }) redrives every dead letter of that queue and no other', async () => {
    const { spool } = setup({});
    let healthy = false;
    spool.register('a', () => {
      if (!healthy) throw new NonRetryableError('no');
    });
    spool.register('b', () => {
      if (!healthy) throw new NonRetryableError('no');
    });
    await spool.start();
    const dead = reached(spool.events$, 'dead', 3);
    const a1 = await spool.send('a', { n: 1 });
    const a2 = await spool.send('a', { n: 2 });
    const b1 = await spool.send('b', { n: 1 });
    await dead;
    expect((await spool.dead()).map((m) => m.id).sort()).toEqual([a1, a2, b1].sort());

    healthy = true;
    const done = reached(spool.events$, 'done', 2, 'a');
    expect(await spool.requeue({ queue: 'a' })).toBe(2);
    await done;
    expect(await spool.get(a1)).toBeUndefined();
    expect(await spool.get(a2)).toBeUndefined();
    expect((await spool.dead()).map((m) => m.id)).toEqual([b1]);
  });

  it('purge(queue, { state: "dead" }) deletes the queue’s dead letters in bulk', async () => {
    const { spool } = setup({});
    spool.register('jobs', () => {
      throw new NonRetryableError('no');
    });
    await spool.start();
    const dead = reached(spool.events$, 'dead', 3);
    await spool.sendBatch('jobs', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    await dead;
    expect(await spool.purge('jobs', { state: 'dead' })).toBe(3);
    expect(await spool.dead('jobs')).toEqual([]);
  });
  // Guards: requeue() treated anything that was not a string as a filter, so requeue(undefined)
  // (an id looked up from a missing key), null or 42 redrove EVERY dead letter; a filter with a
  // misspelt key did the same. dead() passed a fractional or zero limit to SQLite unchecked.
  it('requeue() with no id, null, a number or unknown filter keys, and dead() with a bad limit, reject INVALID_ARGUMENT and redrive nothing', async () => {
    const { spool } = setup({});
    spool.register('a', () => {
      throw new NonRetryableError('poison');
    });
    spool.register('b', () => {
      throw new NonRetryableError('poison');
    });
    await spool.start();
    const dead = reached(spool.events$, 'dead', 4);
    const ids = [...(await spool.sendBatch('a', [1, 2])), ...(await spool.sendBatch('b', [1, 2]))];
    await dead;
    await spool.stop();
    const deadIds = async () => (await spool.dead()).map((m) => m.id).sort();
    expect(await deadIds()).toEqual([...ids].sort());

    const lookup: Record<string, string> = {};
    const requeue = spool.requeue as (filter: unknown) => Promise<number>;
    for (const bad of [lookup.missing, null, 42, { queue: 'x', extra: 1 }] as unknown[]) {
      const error = await rejection(requeue(bad));
      expect(error.code, `requeue(${JSON.stringify(bad)})`).toBe('INVALID_ARGUMENT');
      expect(await deadIds()).toEqual([...ids].sort());
    }
    for (const limit of [1.5, 0]) {
      expect((await rejection(spool.dead('a', { limit }))).code, `dead(a, { limit: ${limit} })`).toBe('INVALID_ARGUMENT');
    }
    // The valid forms still work.
    expect(await spool.dead('a', { limit: 1 })).toHaveLength(1);
    for (const id of ids) expect((await spool.get(id))?.state).toBe('dead');
  });
});

describe('NonRetryableError and RetryAfterError', () => {
  it('NonRetryableError sends the message to dead at once, whatever maxAttempts says', async () => {
    const { spool } = setup({ queues: { jobs: { maxAttempts: 10 } } });
    let calls = 0;
    spool.register('jobs', () => {
      calls += 1;
      throw new NonRetryableError('invalid address');
    });
    await spool.start();
    const transitions: string[] = [];
    spool.events$.subscribe((e) => e.type === 'message.state' && transitions.push(`${e.from}→${e.to}`));
    const dead = reached(spool.events$, 'dead', 1);
    const id = await spool.send('jobs', {});
    await dead;
    expect(calls).toBe(1);
    expect(transitions).toEqual(['null→pending', 'pending→activating', 'activating→processing', 'processing→dead']);
    expect(await spool.get(id)).toMatchObject({
      state: 'dead',
      attempt: 1,
      lastError: { code: 'NON_RETRYABLE', message: 'invalid address' },
    });
  });

  it('RetryAfterError reschedules after its delay without using an attempt', async () => {
    // One attempt only: a charged failure would be fatal, so the deferrals must be free.
    const { spool, clock } = setup({ queues: { jobs: { maxAttempts: 1 } } });
    const seen: { attempt: number; deliveries: number }[] = [];
    spool.register('jobs', (message) => {
      seen.push({ attempt: message.attempt, deliveries: message.deliveries });
      if (message.deliveries < 3) throw new RetryAfterError(2000);
    });
    await spool.start();
    let deferred = nextEvent<MessageStateEvent>(spool.events$, (e) => e.type === 'message.state' && e.from === 'processing');
    const id = await spool.send('jobs', {});
    for (let n = 1; n <= 2; n++) {
      const event = await deferred;
      expect(event).toMatchObject({ id, to: 'pending', attempt: 1 });
      const info = (await spool.get(id))!;
      expect(info.visibleAt - event.at).toBe(2000);
      expect(info).toMatchObject({ attempt: 1, lastError: null });
      deferred = nextEvent<MessageStateEvent>(spool.events$, (e) => e.type === 'message.state' && e.from === 'processing');
      clock.advance(2000);
    }
    expect(await deferred).toMatchObject({ id, to: 'done', attempt: 1 });
    expect(seen).toEqual([
      { attempt: 1, deliveries: 1 },
      { attempt: 1, deliveries: 2 },
      { attempt: 1, deliveries: 3 },
    ]);
  });
});
