/**
 * The supervisor's accounting: executor pools, their limits and active counts, and which queue
 * claims from which pool. Pure; the runtime (src/runtime/supervisor.ts) does the I/O and asks
 * this machine's snapshot how much each pool may still take.
 *
 * States: `stopped` (claims nothing) ⇄ `running`. Both accept every accounting event, so
 * handlers still finishing after STOP are released correctly.
 *
 * Events
 * - CONFIGURE  new limits from the settings store. A queue that loses its own executor keeps the
 *              old pool, at concurrency 0, until its running handlers finish: they count against
 *              the pool that started them.
 * - ACQUIRE    slots taken by a claim; the runtime never asks for more than `freeSlots()` gives.
 * - RELEASE    slots given back by settled (or timed-out) handlers, per pool.
 * - ADJUST     both in one step, releases first: a claim's commit gives back the slots of the
 *              handlers settled since the last step and takes its own. At concurrency 1 that is
 *              one event per message, where RELEASE then ACQUIRE were two.
 */
import { assign, setup } from 'xstate';

/** The key of the default executor in pool maps. `*` cannot occur in a queue name. */
export const DEFAULT_POOL = '*';

/** One executor pool: its limit and how many handlers it runs now. */
export interface PoolState {
  concurrency: number;
  active: number;
}

/** Limits pushed from the settings store. */
export interface PoolLimits {
  /** The default executor's concurrency. */
  concurrency: number;
  /** Queues with their own executor, and its concurrency. */
  queues: Record<string, number>;
  /** Queues that claim nothing for now. */
  paused: string[];
}

/** The supervisor's context: every pool, keyed by queue name or DEFAULT_POOL. */
export interface SupervisorContext {
  pools: Record<string, PoolState>;
  /** Queue → pool key, for queues with their own executor (absent: the default pool). */
  routes: Record<string, string>;
  paused: Record<string, true>;
}

/** Every event the supervisor machine accepts. */
export type SupervisorEvent =
  | { type: 'START' }
  | { type: 'STOP' }
  | { type: 'CONFIGURE'; limits: PoolLimits }
  | { type: 'ACQUIRE'; counts: Record<string, number> }
  | { type: 'RELEASE'; counts: Record<string, number> }
  | { type: 'ADJUST'; release: Record<string, number>; acquire: Record<string, number> };

/** The prototype of byName's records: it has no keys and no prototype, so no key is inherited. */
const NO_KEYS: object = Object.freeze(Object.create(null) as object);

/**
 * A record keyed by queue or pool names: no inherited keys, so "constructor" or "__proto__" are
 * plain keys, as with Object.create(null). But V8 makes an Object.create(null) object a dictionary
 * from birth, and a for…in or Object.entries over one cost about 1.5 µs more (measured in a loop):
 * a claim made several. An object whose prototype is NO_KEYS stays in fast mode.
 */
export function byName<T>(entries?: Record<string, T>): Record<string, T> {
  const out = Object.create(NO_KEYS) as Record<string, T>;
  return entries === undefined ? out : Object.assign(out, entries);
}

function configure(context: SupervisorContext, limits: PoolLimits): SupervisorContext {
  const old = byName(context.pools);
  const pools = byName<PoolState>();
  pools[DEFAULT_POOL] = { concurrency: limits.concurrency, active: old[DEFAULT_POOL]?.active ?? 0 };
  const routes = byName<string>();
  for (const [queue, concurrency] of Object.entries(limits.queues)) {
    pools[queue] = { concurrency, active: old[queue]?.active ?? 0 };
    routes[queue] = queue;
  }
  // A removed executor lingers at concurrency 0 while its handlers finish.
  for (const [key, pool] of Object.entries(context.pools)) {
    if (!(key in pools) && pool.active > 0) pools[key] = { concurrency: 0, active: pool.active };
  }
  const paused = byName<true>();
  for (const queue of limits.paused) paused[queue] = true;
  return { pools, routes, paused };
}

function adjust(context: SupervisorContext, counts: Record<string, number>, sign: 1 | -1) {
  const pools = byName(context.pools);
  for (const [key, count] of Object.entries(counts)) {
    const pool = pools[key] ?? { concurrency: 0, active: 0 };
    const active = Math.max(0, pool.active + sign * count);
    if (key !== DEFAULT_POOL && !(key in context.routes) && active === 0) delete pools[key];
    else pools[key] = { concurrency: pool.concurrency, active };
  }
  return { pools };
}

const accounting = {
  CONFIGURE: { actions: 'configure' },
  ACQUIRE: { actions: 'acquire' },
  RELEASE: { actions: 'release' },
  ADJUST: { actions: 'adjust' },
} as const;

/** The supervisor machine (see the module header). */
export const supervisorMachine = setup({
  types: {} as { context: SupervisorContext; events: SupervisorEvent; input: PoolLimits },
  actions: {
    configure: assign(({ context, event }) => (event.type === 'CONFIGURE' ? configure(context, event.limits) : {})),
    acquire: assign(({ context, event }) => (event.type === 'ACQUIRE' ? adjust(context, event.counts, 1) : {})),
    release: assign(({ context, event }) => (event.type === 'RELEASE' ? adjust(context, event.counts, -1) : {})),
    adjust: assign(({ context, event }) => {
      if (event.type !== 'ADJUST') return {};
      return adjust({ ...context, ...adjust(context, event.release, -1) }, event.acquire, 1);
    }),
  },
}).createMachine({
  id: 'supervisor',
  initial: 'stopped',
  context: ({ input }) => configure({ pools: {}, routes: {}, paused: {} }, input),
  states: {
    stopped: { on: { START: 'running', ...accounting } },
    running: { on: { STOP: 'stopped', ...accounting } },
  },
});

/**
 * True when `ADJUST { release, acquire }` would leave `context` as it is: each pool gives back
 * as many slots as it takes, and holds at least that many (so the release cannot clamp at zero).
 * A drain in steady state is that case at every commit. Property-tested against the machine's
 * own transition (test/unit/machines/supervisor.machine.test.ts).
 */
export function adjustChangesNothing(context: SupervisorContext, release: Record<string, number>, acquire: Record<string, number>): boolean {
  for (const key in release) if (release[key] !== (acquire[key] ?? 0)) return false;
  for (const key in acquire) {
    const count = acquire[key]!;
    if (count === 0) continue;
    if (release[key] !== count) return false;
    const pool = context.pools[key];
    if (pool === undefined || pool.active < count) return false;
  }
  return true;
}

/** The pool key a queue claims from. */
export function poolOf(context: SupervisorContext, queue: string): string {
  return context.routes[queue] ?? DEFAULT_POOL;
}

/**
 * Free slots per pool key (never negative: a shrunk pool may run above its new limit), counting
 * `releasing` (slots given back but not yet sent as an event) as free, as RELEASE would.
 */
export function freeSlots(context: SupervisorContext, releasing?: Record<string, number>): Record<string, number> {
  const free = byName<number>();
  for (const [key, pool] of Object.entries(context.pools)) {
    const active = Math.max(0, pool.active - (releasing?.[key] ?? 0));
    free[key] = Math.max(0, pool.concurrency - active);
  }
  return free;
}
