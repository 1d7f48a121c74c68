/**
 * Handler timeouts and lease fencing, with an injected clock: the deadline passes when the test
 * advances the clock, while the hung handler is still held on a gate.
 */
import { describe, expect, it } from 'vitest';
import {
  isSpoolError,
  SpoolError,
  type MessageStateEvent,
  type MessageStaleEvent,
  type SpoolEvent,
} from '../../src/index.js';
import { nextEvent } from '../helpers/events.js';
import { createGate } from '../helpers/gate.js';
import { useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';

const spools = useTempSpools();

function setup(queue: Record<string, unknown>) {
  const clock = createTestClock();
  const spool = spools.open({ clock, config: { executor: { concurrency: 1 }, queues: { slow: queue } } });
  const events: SpoolEvent[] = [];
  spool.events$.subscribe((e) => events.push(e));
  return { spool, clock, events };
}

const isState = (id: string, to: string, attempt?: number) => (e: SpoolEvent) =>
  e.type === 'message.state' && e.id === id && e.to === to && (attempt === undefined || e.attempt === attempt);

interface Call {
  id: string;
  attempt: number;
  signal: AbortSignal;
  returned: boolean;
}

describe('timeouts and fencing', () => {
  it('aborts the signal with TIMEOUT, fails the attempt, frees the slot at once, and ignores the late completion', async () => {
    const { spool, clock, events } = setup({
      timeoutMs: 1000,
      maxAttempts: 3,
      backoff: { type: 'fixed', delayMs: 5000, maxDelayMs: 5000, jitter: false },
    });
    const gates = [createGate(), createGate()];
    const calls: Call[] = [];
    spool.register<{ hang: boolean }>('slow', async (message, { signal }) => {
      const call: Call = { id: message.id, attempt: message.attempt, signal, returned: false };
      calls.push(call);
      // This handler ignores its signal, as a hung one would: only the gate lets it return.
      if (message.payload.hang) await gates[message.attempt - 1]!.wait();
      call.returned = true;
    });
    await spool.start();

    const firstStarted = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.to === 'processing');
    const hung = await spool.send('slow', { hang: true });
    await firstStarted;
    const quick = await spool.send('slow', { hang: false });
    expect((await spool.get(quick))!.state).toBe('pending');

    const timedOut = nextEvent<MessageStateEvent>(spool.events$, isState(hung, 'pending', 1));
    const quickDone = nextEvent(spool.events$, isState(quick, 'done'));
    clock.advance(1000);

    // The abort is synchronous with the deadline passing.
    const signal = calls[0]!.signal;
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(SpoolError);
    expect(isSpoolError(signal.reason, 'TIMEOUT')).toBe(true);

    // The attempt counts as a failure: retried after the backoff, TIMEOUT recorded.
    const timeout = await timedOut;
    expect(timeout.from).toBe('processing');
    const afterTimeout = (await spool.get(hung))!;
    expect(afterTimeout).toMatchObject({ state: 'pending', attempt: 1, lastError: { code: 'TIMEOUT' } });
    expect(afterTimeout.visibleAt).toBe(timeout.at + 5000);
    expect(events.some((e) => e.type === 'message.error' && e.id === hung && e.code === 'TIMEOUT')).toBe(true);

    // The slot was freed at once: with concurrency 1 the other message ran to done while the
    // hung handler is still inside.
    await quickDone;
    expect(calls.map((c) => c.id)).toEqual([hung, quick]);
    expect(calls[0]!.returned).toBe(false);
    expect((await spool.stats()).pools.default).toEqual({ concurrency: 1, active: 0 });

    // The retry takes the message, under a new lease, while the first attempt still hangs.
    const retryStarted = nextEvent(spool.events$, isState(hung, 'processing', 2));
    clock.advance(5000);
    await retryStarted;
    expect(calls[2]).toMatchObject({ id: hung, attempt: 2, returned: false });
    expect(calls[2]!.signal.aborted).toBe(false);

    // The timed-out attempt completes late: reported as stale, and nothing changes.
    const stale = nextEvent<MessageStaleEvent>(spool.events$, (e) => e.type === 'message.stale');
    const stateEventsBefore = events.filter((e) => e.type === 'message.state' && e.id === hung).length;
    gates[0]!.open();
    expect(await stale).toMatchObject({ type: 'message.stale', id: hung, queue: 'slow', attempt: 1 });
    expect(calls[0]!.returned).toBe(true);
    expect(await spool.get(hung)).toMatchObject({ state: 'processing', attempt: 2, deliveries: 2 });
    expect(events.filter((e) => e.type === 'message.state' && e.id === hung)).toHaveLength(stateEventsBefore);

    // The retry, which still holds the message, is the one attempt that settles it.
    const done = nextEvent<MessageStateEvent>(spool.events$, isState(hung, 'done'));
    gates[1]!.open();
    expect(await done).toMatchObject({ from: 'processing', attempt: 2 });
    expect(await spool.get(hung)).toBeUndefined();
    expect(calls.filter((c) => c.returned)).toHaveLength(3);

    const settles = events
      .filter((e): e is MessageStateEvent => e.type === 'message.state' && e.id === hung && e.from === 'processing')
      .map((e) => `${e.attempt}:${e.to}`);
    expect(settles).toEqual(['1:pending', '2:done']);
    expect(events.filter((e) => e.type === 'message.stale')).toHaveLength(1);
  });

  it('counts a timeout as a failed attempt: dead with TIMEOUT when attempts run out', async () => {
    const { spool, clock } = setup({ timeoutMs: 250, maxAttempts: 1 });
    const gate = createGate();
    let signal: AbortSignal | undefined;
    spool.register('slow', (_message, context) => {
      signal = context.signal;
      return gate.wait();
    });
    await spool.start();
    const started = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.to === 'processing');
    const id = await spool.send('slow', {});
    await started;
    const dead = nextEvent<MessageStateEvent>(spool.events$, isState(id, 'dead'));
    // Short of the deadline nothing happens; the deadline itself fires the timeout.
    clock.advance(249);
    expect(signal!.aborted).toBe(false);
    clock.advance(1);
    expect(signal!.aborted).toBe(true);
    expect(await dead).toMatchObject({ from: 'processing', attempt: 1 });
    expect((await spool.get(id))!.lastError).toMatchObject({ code: 'TIMEOUT' });
    const stale = nextEvent(spool.events$, (e) => e.type === 'message.stale' && e.id === id);
    gate.open();
    await stale;
    expect((await spool.get(id))!.state).toBe('dead');
  });

  it('a handler that honours its signal and rejects with the reason is still one failure', async () => {
    const { spool, clock, events } = setup({
      timeoutMs: 100,
      maxAttempts: 2,
      backoff: { type: 'fixed', delayMs: 0, maxDelayMs: 0, jitter: false },
    });
    const attempts: number[] = [];
    spool.register('slow', (message, { signal }) => {
      attempts.push(message.attempt);
      if (message.attempt > 1) return undefined;
      return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
    });
    await spool.start();
    const started = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.to === 'processing');
    const id = await spool.send('slow', {});
    await started;
    const stale = nextEvent(spool.events$, (e) => e.type === 'message.stale' && e.id === id);
    const done = nextEvent<MessageStateEvent>(spool.events$, isState(id, 'done'));
    clock.advance(100);
    await stale;
    expect(await done).toMatchObject({ attempt: 2 });
    expect(attempts).toEqual([1, 2]);
    const errors = events.filter((e) => e.type === 'message.error' && e.id === id);
    expect(errors.map((e) => e.type === 'message.error' && e.code)).toEqual(['TIMEOUT']);
  });

  it('has no deadline when timeoutMs is null', async () => {
    const { spool, clock } = setup({ timeoutMs: null });
    const gate = createGate();
    let signal: AbortSignal | undefined;
    spool.register('slow', async (_message, context) => {
      signal = context.signal;
      await gate.wait();
    });
    await spool.start();
    const started = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.to === 'processing');
    const id = await spool.send('slow', {});
    await started;
    clock.advance(600_000);
    expect(signal!.aborted).toBe(false);
    const done = nextEvent(spool.events$, isState(id, 'done'));
    gate.open();
    await done;
  });
});
