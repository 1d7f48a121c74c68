/** The inspect option: every in-flight message is a live actor, and only in-flight ones are. */
import { describe, expect, it } from 'vitest';
import type { AnyActorRef, InspectionEvent } from 'xstate';
import { nextEvent, reached } from '../helpers/events.js';
import { createBaton } from '../helpers/gate.js';
import { useTempSpools } from '../helpers/spool.js';

const spools = useTempSpools();

/** Tracks live actors from inspection events: born at '@xstate.actor', gone at a done/stopped snapshot. */
function createTracker() {
  const live = new Set<string>();
  const started: string[] = [];
  const ended = new Map<string, string>();
  let maxLive = 0;
  let supervisorSeen = false;
  /** Actors born while one of the same id was still live (asserted by the test, not in here). */
  const duplicates: string[] = [];
  const inspect = (event: InspectionEvent) => {
    // Every actor here is a full ActorRef; the inspection type only promises ActorRefLike.
    const id = (event.actorRef as AnyActorRef).id;
    if (id === 'supervisor') {
      supervisorSeen = true;
      return;
    }
    if (event.type === '@xstate.actor') {
      if (live.has(id)) duplicates.push(id);
      live.add(id);
      started.push(id);
      maxLive = Math.max(maxLive, live.size);
    } else if (event.type === '@xstate.snapshot') {
      const { status } = event.snapshot as { status: string };
      if ((status === 'done' || status === 'stopped') && live.delete(id)) ended.set(id, status);
    }
  };
  return {
    inspect,
    live,
    started,
    ended,
    duplicates,
    get maxLive() {
      return maxLive;
    },
    get supervisorSeen() {
      return supervisorSeen;
    },
  };
}

describe('inspection observer', () => {
  it('sees each in-flight actor start and stop, never more live than the sum of the concurrencies', async () => {
    const tracker = createTracker();
    const spool = spools.open({
      inspect: tracker.inspect,
      config: {
        executor: { concurrency: 3 },
        queues: { video: { executor: { concurrency: 2 } }, fail: { maxAttempts: 1 } },
      },
    });
    const shared = createBaton();
    const video = createBaton();
    spool.register('email', () => shared.enter());
    spool.register('sms', () => shared.enter());
    spool.register('video', () => video.enter());
    spool.register('fail', () => {
      throw new Error('boom');
    });

    const ids = [
      ...(await spool.sendBatch('email', Array.from({ length: 8 }, (_, i) => i))),
      ...(await spool.sendBatch('sms', Array.from({ length: 6 }, (_, i) => i))),
      ...(await spool.sendBatch('video', Array.from({ length: 7 }, (_, i) => i))),
    ];
    // Failing messages share the default pool; a higher priority lets them through before it fills.
    const failIds = await spool.sendBatch('fail', [1, 2, 3], { priority: 10 });
    // Pending rows rest on disk: no message actor exists before start().
    expect(tracker.started).toEqual([]);

    const allDone = reached(spool.events$, 'done', ids.length);
    const allDead = reached(spool.events$, 'dead', failIds.length);
    await spool.start();
    expect(tracker.supervisorSeen).toBe(true);

    // Both pools full: exactly 3 + 2 actors are live, one per in-flight message.
    await Promise.all([shared.arrived(3), video.arrived(2), allDead]);
    expect(tracker.live.size).toBe(5);
    const inflight = (await spool.stats()).queues;
    const processingCount = Object.values(inflight).reduce((n, q) => n + q.processing + q.activating, 0);
    expect(processingCount).toBe(5);
    for (const id of tracker.live) expect((await spool.get(id))?.state).toBe('processing');

    shared.openForever();
    video.openForever();
    await allDone;

    expect(tracker.maxLive).toBeLessThanOrEqual(5);
    expect(tracker.maxLive).toBe(5);
    expect(tracker.live.size).toBe(0);
    expect(tracker.duplicates).toEqual([]);
    // One actor per delivery: every message started once and ended once.
    expect([...tracker.started].sort()).toEqual([...ids, ...failIds].sort());
    for (const id of ids) expect(tracker.ended.get(id)).toBe('done');
    // A failed attempt's actor is stopped once its dead letter is committed.
    for (const id of failIds) expect(tracker.ended.get(id)).toBe('stopped');
  });

  it('an actor abandoned at stop() is stopped; the redelivery after start() gets a new one', async () => {
    const tracker = createTracker();
    const spool = spools.open({ inspect: tracker.inspect });
    spool.register('email', (message, { signal }) =>
      message.deliveries === 1 ? new Promise((resolve) => signal.addEventListener('abort', resolve)) : undefined,
    );
    await spool.start();
    const processing = reached(spool.events$, 'processing', 1);
    const id = await spool.send('email', 1);
    await processing;
    expect([...tracker.live]).toEqual([id]);
    await spool.stop({ timeoutMs: 10 });
    expect(tracker.live.size).toBe(0);
    expect(tracker.ended.get(id)).toBe('stopped');

    const done = reached(spool.events$, 'done', 1);
    await spool.start();
    await done;
    expect(tracker.started).toEqual([id, id]);
    expect(tracker.duplicates).toEqual([]);
    expect(tracker.ended.get(id)).toBe('done');
    expect(tracker.live.size).toBe(0);
  });
  // Guards: an inspection observer that threw inside launch() escaped the claim loop: the claimed
  // row sat in flight with no handler (and the rest of the claimed batch never launched). Now the
  // attempt fails like a handler error, LAUNCH_FAILED is reported and the other messages run.
  it('an observer that throws once for one message does not strand it: LAUNCH_FAILED, a failed attempt, then a retry that completes', async () => {
    let target: string | undefined;
    let thrown = 0;
    const spool = spools.open({
      inspect: (event: InspectionEvent) => {
        if (event.type === '@xstate.actor' && (event.actorRef as AnyActorRef).id === target && thrown === 0) {
          thrown += 1;
          throw new Error('inspector bug');
        }
      },
      config: { queueDefaults: { maxAttempts: 3, backoff: { type: 'fixed', delayMs: 0, maxDelayMs: 0, jitter: false } } },
    });
    const runs: { id: string; attempt: number }[] = [];
    spool.register('email', (message) => {
      runs.push({ id: message.id, attempt: message.attempt });
    });
    const ids = await spool.sendBatch('email', [1, 2, 3, 4]);
    target = ids[1]!;
    const launchFailed = nextEvent(spool.events$, (e) => e.type === 'error' && e.code === 'LAUNCH_FAILED');
    const failedAttempt = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.id === target && e.from !== null && e.to === 'pending');
    const allDone = reached(spool.events$, 'done', ids.length);
    const chain: string[] = [];
    spool.events$.subscribe((e) => e.type === 'message.state' && e.id === target && chain.push(`${e.from}->${e.to}`));
    await spool.start();

    expect(await launchFailed).toMatchObject({ type: 'error', code: 'LAUNCH_FAILED' });
    expect(await failedAttempt).toMatchObject({ id: target, attempt: 1 });
    const done = await allDone;
    expect(thrown).toBe(1);
    expect(done.map((e) => (e.type === 'message.state' ? e.id : '')).sort()).toEqual([...ids].sort());
    // The target's handler never ran on attempt 1; its retry ran once, as attempt 2.
    expect(runs.filter((r) => r.id === target)).toEqual([{ id: target, attempt: 2 }]);
    // The failed launch's claim is announced too: each event starts where the one before it ended.
    expect(chain).toEqual(['pending->activating', 'activating->processing', 'processing->pending', 'pending->activating', 'activating->processing', 'processing->done']);
    for (const id of ids) if (id !== target) expect(runs.filter((r) => r.id === id)).toEqual([{ id, attempt: 1 }]);
    expect((await spool.stats()).pools.default.active).toBe(0);
  });
});
