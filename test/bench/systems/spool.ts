/** Spool through its public API, as an application would use it. */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createSpool, type Inspect, type Spool } from '../../../src/index.js';
import type { Payload } from '../common.js';
import type { BenchSystem, OpenOptions, QueueHandle } from './types.js';

/** The queue every Spool workload uses. */
export const SPOOL_QUEUE = 'bench';

/** Extra hooks for the verification run (never set on timed runs: they cost time). */
export interface SpoolHooks {
  inspect?: Inspect;
  /** Called with the spool right after it is created. */
  created?(spool: Spool, path: string): void;
}

/** Spool at its defaults, except the executor concurrency a workload asks for. */
export function spoolSystem(hooks: SpoolHooks = {}): BenchSystem {
  return {
    name: 'spool',
    note: 'createSpool defaults (batchSize 100, retention.doneMs 0) with executor.concurrency = C; drain ends when stop() has committed the last settle',
    async open(o: OpenOptions): Promise<QueueHandle> {
      const path = o.path ?? join(o.dir, 'spool.db');
      const spool = createSpool({
        path,
        durability: o.durability,
        config: { executor: { concurrency: o.concurrency } },
        ...(hooks.inspect ? { inspect: hooks.inspect } : {}),
      });
      hooks.created?.(spool, path);
      let reader: Database.Database | undefined;
      let started = 0;
      let target = Infinity;
      let reached: (() => void) | undefined;
      let stopped: Promise<void> | undefined;

      return {
        send: (p) => spool.send(SPOOL_QUEUE, p),
        sendBatch: (ps) => spool.sendBatch(SPOOL_QUEUE, ps),
        async consume(handler) {
          spool.register<Payload>(SPOOL_QUEUE, (message) => {
            if (++started === target) {
              // stop() waits for the running handlers and commits their settles: the last row gone.
              setImmediate(() => (stopped = spool.stop()).then(reached));
            }
            return handler(message.payload) as Promise<void>;
          });
          await spool.start();
        },
        untilDone(n) {
          if (started >= n) return (stopped ??= spool.stop());
          target = n;
          return new Promise<void>((resolve) => (reached = resolve));
        },
        async remaining() {
          reader ??= new Database(path, { readonly: true });
          return reader.prepare('SELECT count(*) FROM messages').pluck().get() as number;
        },
        async close() {
          reader?.close();
          await spool.close();
        },
      };
    },
  };
}
