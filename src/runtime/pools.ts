/**
 * The executor pools: the supervisor machine's accounting (limits, active counts, which queue
 * claims from which pool), plus batching of releases, so a burst of settles costs one event.
 *
 * A claim's event is deferred until its handlers have started (`acquire`, then `flush` after the
 * launch): on an idle queue that event was most of the time between the claim's commit and the
 * handler's first line. Every other call here sends a deferred event first, so the actor still
 * sees the same events in the same order; only a handler's own synchronous code can see a
 * snapshot that does not count it yet.
 */
import { createActor } from 'xstate';
import { adjustChangesNothing, byName, DEFAULT_POOL, freeSlots, poolOf, supervisorMachine, type PoolLimits, type SupervisorEvent } from '../../machines/supervisor.machine.js';
import type { Settings } from '../settings/schema.js';
import type { Inspect } from './types.js';

/** Pool limits and use, as the public stats() shows them. */
export interface PoolsView {
  default: { concurrency: number; active: number };
  byQueue: Record<string, { concurrency: number; active: number }>;
}

/** The limits the settings ask for. */
export function limitsOf(settings: Settings): PoolLimits {
  const queues: Record<string, number> = {};
  const paused: string[] = [];
  for (const [name, q] of Object.entries(settings.queues)) {
    if (q.executor) queues[name] = q.executor.concurrency;
    if (q.paused) paused.push(name);
  }
  return { concurrency: settings.executor.concurrency, queues, paused };
}

/** Creates the pools over a started supervisor actor. */
export function createPools(settings: Settings, inspect: Inspect | undefined) {
  const actor = createActor(supervisorMachine, { input: limitsOf(settings), inspect, id: 'supervisor' });
  actor.start();
  // Keyed by pool name: nothing inherited, so a queue called "constructor" reads undefined here.
  let releases = byName<number>();
  let releaseCount = 0;
  /** A claim's ADJUST, held until its handlers have started (see the module header). */
  let deferred: { release: Record<string, number>; acquire: Record<string, number> } | undefined;

  /** Sends the deferred claim event, if any. */
  function flush() {
    if (!deferred) return;
    const event = deferred;
    deferred = undefined;
    actor.send({ type: 'ADJUST', release: event.release, acquire: event.acquire });
  }

  /** Sends `event` after any deferred one, so the actor sees them in the order they happened. */
  function send(event: SupervisorEvent) {
    flush();
    actor.send(event);
  }

  /** The releases not yet sent, handed over (and forgotten here). */
  function takeReleases(): Record<string, number> {
    const counts = releases;
    releases = byName<number>();
    releaseCount = 0;
    return counts;
  }

  function applyReleases() {
    if (releaseCount > 0) send({ type: 'RELEASE', counts: takeReleases() });
    else flush();
  }

  /** The actor's context, any deferred event applied. */
  function current() {
    flush();
    return actor.getSnapshot().context;
  }

  return {
    actor,
    /** The accounting context: limits, routes, paused queues (releases may be pending: see freeSlots). */
    context: current,
    /** Free slots per pool, pending releases counted as free. */
    freeSlots: () => freeSlots(current(), releases),
    poolOf: (queue: string) => poolOf(current(), queue),
    configure: (settings: Settings) => send({ type: 'CONFIGURE', limits: limitsOf(settings) }),
    /**
     * A claim's slots, taken after its commit, with the releases since the last event: one event
     * for both, sent by `flush()` once the claim's handlers have started, or by the next call
     * here, whichever comes first. (A claim that took nothing sends the releases alone:
     * applyReleases.)
     */
    acquire(counts: Record<string, number>) {
      flush();
      const release = takeReleases();
      // An event that changes nothing is not sent, unless an inspector is there to show it.
      if (!inspect && adjustChangesNothing(actor.getSnapshot().context, release, counts)) return;
      deferred = { release, acquire: counts };
    },
    flush,
    /** A slot freed by a settled handler; sent with the next claim's slots (or view). */
    release(pool: string) {
      // A held claim event goes first, so the snapshot never lags a settle.
      flush();
      releases[pool] = (releases[pool] ?? 0) + 1;
      releaseCount += 1;
    },
    applyReleases,
    start: () => send({ type: 'START' }),
    stop: () => send({ type: 'STOP' }),
    view(): PoolsView {
      applyReleases();
      const { pools } = actor.getSnapshot().context;
      const byQueue: Record<string, { concurrency: number; active: number }> = {};
      for (const [key, pool] of Object.entries(pools)) if (key !== DEFAULT_POOL) byQueue[key] = { ...pool };
      return { default: { ...pools[DEFAULT_POOL]! }, byQueue };
    },
    dispose: () => {
      flush();
      actor.stop();
    },
  };
}

/** The pools' type. */
export type Pools = ReturnType<typeof createPools>;
