/**
 * The executor: after a claim commits, takes the pool slots, announces each claimed message
 * (pending → activating → processing), activates its actor from the committed state when an
 * inspector is attached (a virtual actor: the row is the truth) and runs its handler with an
 * AbortSignal. A handler's return or
 * throw, synchronous or not, goes to settle by one path.
 */
import { createActor } from 'xstate';
import { compiledMessageMachine as machine } from '../../machines/compiled.js';
import { messageMachine } from '../../machines/message.machine.js';
import { byName } from '../../machines/supervisor.machine.js';
import { crashPoint } from '../crash-points.js';
import { messageOf, toStoredError } from '../errors.js';
import { LazyHandlerContext, outcomeOf } from './handler.js';
import type { Leases } from './leases.js';
import type { Pools } from './pools.js';
import type { Settler } from './settle.js';
import type { Announcer, ClaimResult, Claimed, SupervisorDeps } from './types.js';

/** What the executor needs besides the shared dependencies. */
export interface ExecutorParts {
  pools: Pools;
  leases: Leases;
  settler: Settler;
  announce: Announcer;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  try {
    return value !== null && typeof value === 'object' && typeof (value as PromiseLike<unknown>).then === 'function';
  } catch {
    return false;
  }
}

/** Creates the executor. */
export function createExecutor(deps: SupervisorDeps, parts: ExecutorParts) {
  const { clock, events, consumers, inspect, committer } = deps;
  const { pools, leases, settler, announce } = parts;

  /** After the claim's commit: announce settled rows, take slots, launch handlers. */
  function claimed(result: ClaimResult | null) {
    // Nothing claimed: no acquisition carries the pending releases, so they go alone, and the
    // supervisor's snapshot is current after every commit whose claim ran.
    if (!result || result.claimed.length === 0) pools.applyReleases();
    if (!result) return;
    const at = clock.now();
    for (const d of result.dispositions) {
      // A message without a consumer really went through activating (the machine's path); a
      // corrupt row's stored state was unreadable, so it is announced as one step.
      if (d.error.code === 'NO_CONSUMER') announce.state(d.row.id, d.row.queue, 'pending', 'activating', d.attempt, at);
      announce.error(d.row.id, d.row.queue, d.error, at);
      announce.state(d.row.id, d.row.queue, d.error.code === 'NO_CONSUMER' ? 'activating' : 'pending', d.to, d.attempt, at);
    }
    if (result.claimed.length) {
      // Claimed and committed, nothing handled yet: recovery must hand these out again.
      crashPoint('claim.afterCommit');
      const counts = byName<number>();
      for (const c of result.claimed) counts[c.entry.pool] = (counts[c.entry.pool] ?? 0) + 1;
      // The slots are taken now (the next plan counts them), and the supervisor's event follows
      // the handlers' start (pools.ts says why).
      pools.acquire(counts);
      try {
        for (const c of result.claimed) {
          try {
            launch(c, at);
          } catch (error) {
            // Our own launch path failed (e.g. a throwing inspection observer) before the handler
            // could run: fail this attempt like a handler error, so the row cannot sit in flight
            // with no handler, and every other claimed message still launches.
            events.emit({ type: 'error', code: 'LAUNCH_FAILED', message: `Could not start ${c.entry.id}: ${messageOf(error)}`, at });
            if (!c.entry.settled) settler.settle(c.entry, { kind: 'fail', error: toStoredError(error, 'LAUNCH_FAILED') });
          }
        }
      } finally {
        pools.flush();
      }
    }
    // Rows settled at claim (no consumer, corrupt) took no slot, yet may have crowded out ready
    // rows of other queues in this claim; claim again rather than wait for the poll.
    if (result.capped || result.dispositions.length > 0) committer.wake();
  }

  function launch(c: Claimed, at: number) {
    const { entry } = c;
    leases.add(entry);
    if (inspect) {
      // Someone is looking: activate a live actor from the committed state (a virtual actor, the
      // row is the truth). Replaying CLAIM and START would recompute what the claim committed.
      // Without an observer nobody could tell a live actor from the row, so none is made.
      try {
        const live = createActor(messageMachine, { snapshot: machine.persist(entry.state) as never, input: { visibleAt: 0 }, inspect, id: entry.id });
        live.start();
        entry.actor = live;
      } catch (error) {
        // The claim committed both steps: announce them before the failed attempt settles, or
        // subscribers would see the message leave processing without ever entering it.
        announceClaim(entry, at);
        throw error;
      }
    }
    announceClaim(entry, at);
    leases.watchDeadline(entry);
    crashPoint('handler.started');
    const handler = consumers.get(entry.queue)!;
    let result: unknown;
    try {
      result = handler(entry.message, new LazyHandlerContext(entry));
    } catch (thrown) {
      settler.settle(entry, outcomeOf(thrown));
      return;
    }
    if (isThenable(result)) {
      // A rejection takes exactly the path of a synchronous throw; and nothing in the chain may
      // reject unhandled, or a hostile rejection value would kill the process.
      entry.finished = Promise.resolve(result)
        .then(
          () => settler.settle(entry, { kind: 'complete' }),
          (thrown) => settler.settle(entry, outcomeOf(thrown)),
        )
        .catch((error: unknown) => {
          events.emit({ type: 'error', code: 'STORAGE_ERROR', message: `Could not settle ${entry.id}: ${messageOf(error)}`, at: clock.now() });
        });
    } else {
      settler.settle(entry, { kind: 'complete' });
    }
  }

  /** The claim's two committed steps, as events. */
  function announceClaim(entry: Claimed['entry'], at: number) {
    announce.state(entry.id, entry.queue, 'pending', 'activating', entry.message.attempt, at);
    announce.state(entry.id, entry.queue, 'activating', 'processing', entry.message.attempt, at);
  }

  return { claimed };
}
