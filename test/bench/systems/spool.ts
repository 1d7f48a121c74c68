/**
 * Spool through its public API, measured as an application uses it (issue #10):
 * - the spool is `start()`ed when the queue is opened (owner lock taken, supervisor running), so
 *   every send is made by a running spool;
 * - the bench queue starts paused (`queues.bench.paused: true` in the config layer), and
 *   consume() registers the handler, then resumes the queue with `settings.update`, as an
 *   operator or a deploy would;
 * - an `events$` subscriber (a cheap counter) is attached from creation to close, and the end of
 *   a drain is seen through it: the N-th `message.state → done`, announced after its commit.
 * Every other setting is the shipped default, except the executor concurrency a workload asks for.
 *
 * It is the compiled package (dist/, what `npm install` gives an app), not the TypeScript sources:
 * `npm run bench` builds it first. Sources run through tsx would also start the maintenance
 * worker thread through tsx, whose start-up alone is a second of CPU in the middle of a run.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Subscription } from 'rxjs';
import { createSpool, type Handler, type Inspect, type Spool } from '../../../dist/src/index.js';
import type { Durability, Payload } from '../common.js';
import type { BenchSystem, OpenOptions, QueueHandle } from './types.js';

/** The queue every Spool workload uses. */
export const SPOOL_QUEUE = 'bench';

/** How a bench spool is created: the app setting above, plus what a run adds. */
export interface AppSpoolOptions {
  path: string;
  durability: Durability;
  /** executor.concurrency (the only non-default setting of a timed run). */
  concurrency: number;
  /** The Spool check's inspection observer (never on timed runs). */
  inspect?: Inspect;
  /**
   * Config-layer settings merged over the bench's own, for workload variants later issues add
   * (a rate limit far above the drain rate, message history on/off: see workloads.ts). The
   * queue's `paused: true` is kept whatever this says.
   */
  config?: Record<string, unknown>;
}

/** A started spool in the app setting, with its events counter. */
export interface AppSpool {
  spool: Spool;
  /** Events seen by the subscriber, and `message.state → done` among them. */
  counts: { events: number; done: number };
  /** Registers `handler` on the bench queue, then un-pauses it with settings.update. */
  resume(handler: Handler<Payload>): Promise<void>;
  /** Resolves once `n` messages have been announced done (each after its commit). */
  untilDone(n: number): Promise<void>;
  close(): Promise<void>;
}

/** Creates and starts a spool with the bench queue paused and an events$ counter attached. */
export async function openAppSpool(o: AppSpoolOptions): Promise<AppSpool> {
  const extra = o.config ?? {};
  const extraQueues = (extra.queues ?? {}) as Record<string, Record<string, unknown>>;
  const spool = createSpool({
    path: o.path,
    durability: o.durability,
    config: {
      ...extra,
      executor: { concurrency: o.concurrency },
      queues: { ...extraQueues, [SPOOL_QUEUE]: { ...extraQueues[SPOOL_QUEUE], paused: true } },
    },
    ...(o.inspect ? { inspect: o.inspect } : {}),
  });
  const counts = { events: 0, done: 0 };
  let target = Infinity;
  let reached: (() => void) | undefined;
  const subscription: Subscription = spool.events$.subscribe((event) => {
    counts.events += 1;
    if (event.type === 'message.state' && event.to === 'done' && ++counts.done >= target) reached?.();
  });
  try {
    await spool.start();
  } catch (error) {
    subscription.unsubscribe();
    await spool.close();
    throw error;
  }
  return {
    spool,
    counts,
    async resume(handler) {
      spool.register<Payload>(SPOOL_QUEUE, handler);
      await spool.settings.update({ queues: { [SPOOL_QUEUE]: { paused: false } } });
    },
    untilDone(n) {
      if (counts.done >= n) return Promise.resolve();
      target = n;
      return new Promise<void>((resolve) => (reached = resolve));
    },
    async close() {
      await spool.close();
      subscription.unsubscribe();
    },
  };
}

/** Spool in the app setting above. */
export function spoolSystem(config?: Record<string, unknown>): BenchSystem {
  return {
    name: 'spool',
    note:
      'createSpool defaults (batchSize 100, retention.doneMs 0) with executor.concurrency = C; start()ed at open with queues.bench.paused = true, ' +
      'consume() = register + settings.update({ queues: { bench: { paused: false } } }); an events$ counter attached throughout; ' +
      'a drain ends at the N-th message.state → done event (announced after its commit)',
    async open(o: OpenOptions): Promise<QueueHandle> {
      const path = o.path ?? join(o.dir, 'spool.db');
      const app = await openAppSpool({ path, durability: o.durability, concurrency: o.concurrency, ...(config ? { config } : {}) });
      let reader: Database.Database | undefined;
      return {
        send: (p) => app.spool.send(SPOOL_QUEUE, p),
        sendBatch: (ps) => app.spool.sendBatch(SPOOL_QUEUE, ps),
        consume: (handler) => app.resume((message) => handler(message.payload) as Promise<void>),
        untilDone: (n) => app.untilDone(n),
        async remaining() {
          reader ??= new Database(path, { readonly: true });
          return reader.prepare('SELECT count(*) FROM messages').pluck().get() as number;
        },
        async close() {
          reader?.close();
          await app.close();
        },
      };
    },
  };
}
