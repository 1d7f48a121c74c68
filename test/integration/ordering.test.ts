/**
 * Delays and claim order, with an injected clock. Delayed messages must stay invisible until the
 * clock reaches their time; ready ones run by priority, then visible-at, then send order.
 */
import { lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { Spool } from '../../src/index.js';
import { nextEvent, reached } from '../helpers/events.js';
import { useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';

const spools = useTempSpools();

function setup(config: Record<string, unknown> = {}) {
  const clock = createTestClock();
  const spool = spools.open({ clock, config });
  const order: string[] = [];
  spool.register<{ name: string }>('jobs', (message) => {
    order.push(message.payload.name);
  });
  return { spool, clock, order };
}

const doneOf = (spool: Spool, id: string) => nextEvent(spool.events$, (e) => e.type === 'message.state' && e.id === id && e.to === 'done');

/** Resolves once the message is done (watch() completes at once if it already finished). */
const finished = (spool: Spool, id: string) => lastValueFrom(spool.watch(id), { defaultValue: 'done' });

/** Sends a marker and waits for it: a claim ran at the current clock reading and is finished. */
async function claimNow(spool: Spool, name: string) {
  const id = await spool.send('jobs', { name });
  expect(await finished(spool, id)).toBe('done');
}

describe('delays', () => {
  it('keeps a delayMs message invisible until the clock passes its time', async () => {
    const { spool, clock, order } = setup();
    await spool.start();
    const sentAt = clock.now();
    const id = await spool.send('jobs', { name: 'delayed' }, { delayMs: 1000 });
    expect(await spool.get(id)).toMatchObject({ state: 'pending', visibleAt: sentAt + 1000 });

    clock.advance(999);
    await claimNow(spool, 'marker');
    expect(order).toEqual(['marker']);

    const done = doneOf(spool, id);
    clock.advance(1);
    await done;
    expect(order).toEqual(['marker', 'delayed']);
  });

  it('keeps a runAt message (Date or epoch ms) invisible until its time', async () => {
    const { spool, clock, order } = setup();
    await spool.start();
    const t0 = clock.now();
    const asDate = await spool.send('jobs', { name: 'date' }, { runAt: new Date(t0 + 5000) });
    const asNumber = await spool.send('jobs', { name: 'number' }, { runAt: t0 + 3000 });
    expect((await spool.get(asDate))!.visibleAt).toBe(t0 + 5000);
    expect((await spool.get(asNumber))!.visibleAt).toBe(t0 + 3000);

    clock.advance(2999);
    await claimNow(spool, 'm1');
    expect(order).toEqual(['m1']);

    let done = doneOf(spool, asNumber);
    clock.advance(1);
    await done;
    await claimNow(spool, 'm2');
    expect(order).toEqual(['m1', 'number', 'm2']);

    done = doneOf(spool, asDate);
    clock.advance(2000);
    await done;
    expect(order).toEqual(['m1', 'number', 'm2', 'date']);
  });

  it('runs a runAt in the past at once', async () => {
    const { spool, clock, order } = setup();
    await spool.start();
    const id = await spool.send('jobs', { name: 'late' }, { runAt: clock.now() - 60_000 });
    expect(await finished(spool, id)).toBe('done');
    expect(order).toEqual(['late']);
  });

  it('arms the delay timer at start for messages sent before it', async () => {
    const { spool, clock, order } = setup();
    const id = await spool.send('jobs', { name: 'delayed' }, { delayMs: 10_000 });
    await spool.start();
    await claimNow(spool, 'marker');
    expect(order).toEqual(['marker']);
    const done = doneOf(spool, id);
    clock.advance(10_000);
    await done;
    expect(order).toEqual(['marker', 'delayed']);
  });

  it('refuses delayMs and runAt together', async () => {
    const { spool, clock } = setup();
    await expect(spool.send('jobs', { name: 'x' }, { delayMs: 1, runAt: clock.now() })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(spool.send('jobs', { name: 'x' }, { delayMs: -1 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('priorities', () => {
  it('runs higher priorities first, equal ones in send order', async () => {
    const { spool, order } = setup({ executor: { concurrency: 1 } });
    const sends: [string, number | undefined][] = [
      ['a0', undefined],
      ['b5', 5],
      ['c-1', -1],
      ['d5', 5],
      ['e10', 10],
      ['f0', 0],
    ];
    for (const [name, priority] of sends) await spool.send('jobs', { name }, priority === undefined ? {} : { priority });
    const done = reached(spool.events$, 'done', sends.length);
    await spool.start();
    await done;
    expect(order).toEqual(['e10', 'b5', 'd5', 'a0', 'f0', 'c-1']);
  });

  it('runs equal priorities in visible-at order, then send order', async () => {
    const { spool, clock, order } = setup({ executor: { concurrency: 1 } });
    const t0 = clock.now();
    await spool.send('jobs', { name: 'v300' }, { runAt: t0 + 300 });
    await spool.send('jobs', { name: 'v100-first' }, { runAt: t0 + 100 });
    await spool.send('jobs', { name: 'now-first' });
    await spool.send('jobs', { name: 'v100-second' }, { delayMs: 100 });
    await spool.send('jobs', { name: 'now-second' });
    // A high priority that became visible last still goes first.
    await spool.send('jobs', { name: 'v200-urgent' }, { runAt: t0 + 200, priority: 1 });
    clock.advance(300);
    const done = reached(spool.events$, 'done', 6);
    await spool.start();
    await done;
    expect(order).toEqual(['v200-urgent', 'now-first', 'now-second', 'v100-first', 'v100-second', 'v300']);
  });

  it('shows the priority on the message and in get()', async () => {
    const { spool } = setup();
    let seen: number | undefined;
    spool.register('other', (message) => {
      seen = message.priority;
    });
    const id = await spool.send('other', {}, { priority: 7 });
    expect((await spool.get(id))!.priority).toBe(7);
    const done = doneOf(spool, id);
    await spool.start();
    await done;
    expect(seen).toBe(7);
  });
});
