/**
 * plainjob (npm) at its defaults: one worker is one loop handling one job at a time, polling every
 * 1000 ms when idle; concurrency C means C workers on the queue. Its logger is silenced (the
 * default, console, prints a debug line per job). Done jobs stay as rows (status 2) until its
 * maintenance removes them after 7 days, so "drained" means every job has status done.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { better, defineQueue, defineWorker, type Worker } from 'plainjob';
import type { Payload } from '../common.js';
import type { BenchSystem, OpenOptions, QueueHandle } from './types.js';

const TYPE = 'bench';
const silent = { error() {}, warn() {}, info() {}, debug() {} };

/** plainjob with the given idle poll interval (undefined: its default, 1000 ms). */
export function plainjobSystem(pollMs?: number): BenchSystem {
  return {
    name: pollMs === undefined ? 'plainjob' : `plainjob (${pollMs} ms poll)`,
    note:
      pollMs === undefined
        ? 'plainjob 0.0.14 defaults (poll 1000 ms), C workers, silent logger; synchronous forced to FULL after defineQueue under full (it sets NORMAL itself); add() is synchronous'
        : `plainjob with pollIntervall ${pollMs} ms, otherwise as above`,
    async open(o: OpenOptions): Promise<QueueHandle> {
      const db = new Database(o.path ?? join(o.dir, 'plainjob.db'));
      const queue = defineQueue({ connection: better(db), logger: silent });
      if (o.durability === 'full') db.pragma('synchronous = FULL');
      const count = db.prepare('SELECT count(*) FROM plainjob_jobs WHERE status <> 2').pluck();
      const workers: Worker[] = [];
      const loops: Promise<void>[] = [];
      let done = 0;
      let target = Infinity;
      let reached: (() => void) | undefined;

      return {
        async send(p) {
          queue.add(TYPE, p);
        },
        async sendBatch(ps) {
          queue.addMany(TYPE, ps);
        },
        async consume(handler) {
          for (let c = 0; c < o.concurrency; c++) {
            const worker = defineWorker(TYPE, (job) => handler(JSON.parse(job.data) as Payload) as Promise<void>, {
              queue,
              logger: silent,
              ...(pollMs === undefined ? {} : { pollIntervall: pollMs }),
              onCompleted: () => {
                if (++done >= target) reached?.();
              },
            });
            workers.push(worker);
            loops.push(worker.start());
          }
        },
        untilDone(n) {
          if (done >= n) return Promise.resolve();
          target = n;
          return new Promise<void>((resolve) => (reached = resolve));
        },
        async remaining() {
          return count.get() as number;
        },
        async close() {
          await Promise.all(workers.map((w) => w.stop()));
          // stop() returns while a loop may still be between jobs; close the db only after every loop exits.
          await Promise.all(loops);
          queue.close();
        },
      };
    },
  };
}
