/**
 * BullMQ over a local redis-server without persistence (--save '' --appendonly no): nothing is
 * fsynced, so it has no durability setting and runs under `normal` only. Completed and failed
 * jobs are removed (removeOnComplete/removeOnFail), so a drained queue holds nothing, as Spool's.
 */
import { randomUUID } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import type { Payload } from '../common.js';
import type { BenchSystem, OpenOptions, QueueHandle } from './types.js';

/** BullMQ against redis on 127.0.0.1:`port`. */
export function bullmqSystem(port: number): BenchSystem {
  const connection = { host: '127.0.0.1', port };
  return {
    name: 'bullmq',
    note: 'BullMQ 5 defaults with concurrency C, removeOnComplete/removeOnFail; redis without persistence (runs under normal only)',
    async open(o: OpenOptions): Promise<QueueHandle> {
      const name = `bench-${randomUUID()}`;
      const queue = new Queue<Payload>(name, { connection, defaultJobOptions: { removeOnComplete: true, removeOnFail: true } });
      await queue.waitUntilReady();
      let worker: Worker<Payload> | undefined;
      let done = 0;
      let target = Infinity;
      let reached: (() => void) | undefined;

      return {
        send: (p) => queue.add('m', p),
        sendBatch: (ps) => queue.addBulk(ps.map((data) => ({ name: 'm', data }))),
        async consume(handler) {
          worker = new Worker<Payload>(name, async (job) => {
            await handler(job.data);
          }, { connection, concurrency: o.concurrency });
          worker.on('completed', () => {
            if (++done >= target) reached?.();
          });
          await worker.waitUntilReady();
        },
        untilDone(n) {
          if (done >= n) return Promise.resolve();
          target = n;
          return new Promise<void>((resolve) => (reached = resolve));
        },
        async remaining() {
          const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed');
          return Object.values(counts).reduce((a, b) => a + b, 0);
        },
        async close() {
          await worker?.close();
          await queue.obliterate({ force: true });
          await queue.close();
        },
      };
    },
  };
}
