/**
 * Spool's pull workloads (issue 12), in the app setting of systems/spool.ts (a started spool with
 * an events$ counter), beside the push figures of the same run:
 * - `pull-c8`: 8 owner-mode consumers in this process, each in a loop of `wait` (which ends the
 *   message it owns first) until the queue is empty;
 * - `receive-10`: 8 receivers in this process, each in a loop of `receive({ max: 10 })`, then a
 *   `deleteMessage` per message;
 * - `wake`: a consumer process waits; this process, another handle on the file, sends; from just
 *   before `send()` to the consumer's first line after `wait()` resolved (children/spool.ts), and
 *   what an idle waiter costs in statements, on a quiet file and while another queue is busy;
 * - `claim-groups`: the claim workload on a queue whose messages are spread over message groups,
 *   against the same depth without groups.
 * The plain queues run on a queue that `queues.create` made, so the push runtime leaves it to
 * the pull consumers.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createSpool } from '../../dist/src/index.js';
import { runChild } from './child-runner.js';
import { collectGarbage, type Durability, now, payload, payloads, sleep, systemNow, tempDir } from './common.js';
import { openAppSpool, SPOOL_QUEUE } from './systems/spool.js';
import type { Metrics } from './workloads.js';

/** The queue the pull workloads drain. */
export const PULL_QUEUE = 'pull';
/** Consumers (pull-c8) and receivers (receive-10) at once. */
export const PULL_CONCURRENCY = 8;
/** The wake-up run: messages, their spacing (ms), and the idle phases' length (ms). */
export const WAKE = { sends: 200, spacingMs: 10, idleMs: 3000, busyEveryMs: 10 };

/** Which pull workload. */
export type PullWorkload = 'pull-c8' | 'receive-10';

/** One pull-c8 or receive-10 run on a fresh file: fills `n` messages, then drains them timed. */
export async function runPull(workload: PullWorkload, n: number, durability: Durability, batch: number, base?: string): Promise<Metrics> {
  const tmp = tempDir(base);
  const app = await openAppSpool({ path: join(tmp.dir, 'spool.db'), durability, concurrency: PULL_CONCURRENCY });
  try {
    const { spool } = app;
    await spool.queues.create(PULL_QUEUE);
    for (let i = 0; i < n; i += batch) await spool.sendBatch(PULL_QUEUE, payloads(i, Math.min(batch, n - i)));
    collectGarbage();
    let taken = 0;
    const t0 = now();
    if (workload === 'pull-c8') {
      await Promise.all(
        Array.from({ length: PULL_CONCURRENCY }, async () => {
          const consumer = spool.consumer();
          // Each wait() ends the message this consumer owns, then takes the next.
          while (await consumer.wait(PULL_QUEUE, { timeoutMs: 0 })) taken += 1;
          await consumer.close();
        }),
      );
    } else {
      await Promise.all(
        Array.from({ length: PULL_CONCURRENCY }, async () => {
          for (;;) {
            const batchOf = await spool.receive(PULL_QUEUE, { max: 10 });
            if (batchOf.length === 0) return;
            taken += batchOf.length;
            await Promise.all(batchOf.map((m) => spool.deleteMessage(PULL_QUEUE, m.receipt)));
          }
        }),
      );
    }
    const ms = now() - t0;
    const { counts } = await spool.queues.get(PULL_QUEUE);
    const left = counts.visible + counts.inFlight + counts.delayed + counts.dead;
    if (taken !== n || left !== 0) throw new Error(`spool ${workload}: took ${taken} of ${n}, ${left} left in the queue`);
    return { 'msg/s': (n / ms) * 1000 };
  } finally {
    await app.close();
    tmp.cleanup();
  }
}

/**
 * The cross-process wake-up: a consumer child waits on one file; this process sends to it from a
 * handle of its own (not started: a producer, as another process would be). The child reports
 * the statements it ran while idle (quiet file, then while this process sends to another queue)
 * and every wake-up latency.
 */
export async function runWake(base?: string): Promise<Metrics> {
  const tmp = tempDir(base);
  const path = join(tmp.dir, 'spool.db');
  // The file and its schema exist before the child opens it.
  const producer = createSpool({ path });
  await producer.send('warm-up', { i: 0 });
  try {
    let busy: Promise<void> | undefined;
    let waking: Promise<void> | undefined;
    const result = await runChild({ mode: 'wake', system: 'spool', path, sends: WAKE.sends, idleMs: WAKE.idleMs }, (line) => {
      if (line === 'PHASE busy') busy = sendEvery(producer, 'other', WAKE.busyEveryMs, WAKE.idleMs);
      if (line === 'PHASE wake') waking = sendWakes(producer);
    });
    await busy;
    await waking;
    return result.metrics;
  } finally {
    await producer.close();
    tmp.cleanup();
  }
}

/** Sends to `queue` every `everyMs` for `forMs`: traffic the idle waiter must sleep through. */
async function sendEvery(producer: ReturnType<typeof createSpool>, queue: string, everyMs: number, forMs: number) {
  const end = now() + forMs;
  for (let i = 0; now() < end; i++) {
    await producer.send(queue, payload(i));
    await sleep(everyMs);
  }
}

/** The timed sends: each payload carries the epoch time (sub-ms) taken just before send(). */
async function sendWakes(producer: ReturnType<typeof createSpool>) {
  for (let i = 0; i < WAKE.sends; i++) {
    await sleep(WAKE.spacingMs);
    await producer.send('wake', { i, sentAt: systemNow() });
  }
}

/**
 * A Spool claim template whose `depth` messages are spread over `groups` message groups on the
 * bench queue, each group's messages sent together (one sendBatch per group), as the claim
 * workload's own templates are filled through sendBatch.
 */
export async function fillGroupsTemplate(path: string, depth: number, groups: number): Promise<number> {
  const t0 = Date.now();
  const app = await openAppSpool({ path, durability: 'normal', concurrency: 1 });
  try {
    const per = Math.ceil(depth / groups);
    for (let g = 0, i = 0; i < depth; g++, i += per) {
      await app.spool.sendBatch(SPOOL_QUEUE, payloads(i, Math.min(per, depth - i)), { group: `g${g}` });
    }
  } finally {
    await app.close();
  }
  if (existsSync(`${path}-wal`)) {
    // One self-contained file, as fillTemplate leaves its templates.
    const db = new Database(path);
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
  }
  collectGarbage();
  return Date.now() - t0;
}
