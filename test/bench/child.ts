/**
 * Runs one measurement in a fresh process, for figures a long-lived bench process would distort:
 * RSS with a deep queue (workload 6), boot time (workload 6), and CPU profiles of one workload.
 * Usage: node --expose-gc --import tsx test/bench/child.ts '<json ChildSpec>'
 * Prints one line `BENCH_RESULT <json>` on stdout.
 */
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createSpool } from '../../src/index.js';
import { collectGarbage, deferred, now, tempDir, type Durability } from './common.js';
import { floorSystem, openFloorDb } from './systems/floor.js';
import { systemByName } from './systems/index.js';
import { SPOOL_QUEUE } from './systems/spool.js';
import { runOne, type Metrics, type WorkloadName } from './workloads.js';

/** What the parent asks a child to do. */
export type ChildSpec =
  | { mode: 'rss'; system: 'spool' | 'floor'; template: string; depth: number; base?: string }
  | { mode: 'boot'; system: 'spool' | 'floor'; template: string; depth: number; inflight: number; base?: string }
  | {
      mode: 'profile';
      workload: WorkloadName;
      system: string;
      durability: Durability;
      n: number;
      batch: number;
      out: string;
      intervalUs: number;
      redisPort?: number;
      base?: string;
      template?: string;
      depth?: number;
      claimDrain?: number;
    };

/** Concurrency of the consumers in the RSS and boot runs (Spool's default). */
const CHILD_CONCURRENCY = 4;
const MB = 2 ** 20;

async function rss(spec: Extract<ChildSpec, { mode: 'rss' }>): Promise<Metrics> {
  const tmp = tempDir(spec.base);
  try {
    const path = join(tmp.dir, 'copy.db');
    copyFileSync(spec.template, path);
    collectGarbage();
    const before = process.memoryUsage();
    const system = systemByName(spec.system);
    const handle = await system.open({ dir: tmp.dir, durability: 'normal', concurrency: CHILD_CONCURRENCY, path });
    const gate = deferred();
    const busy = deferred();
    let started = 0;
    // Every slot holds a message, so the queue stays deep while memory is read.
    await handle.consume(async () => {
      if (++started === CHILD_CONCURRENCY) busy.resolve();
      await gate.promise;
    });
    await busy.promise;
    collectGarbage();
    const after = process.memoryUsage();
    const left = await handle.remaining();
    gate.resolve();
    await handle.close();
    if (left !== spec.depth) throw new Error(`rss: ${left} rows stored, expected ${spec.depth}`);
    return { 'RSS MB': after.rss / MB, 'Δ RSS MB': (after.rss - before.rss) / MB, 'heap MB': after.heapUsed / MB };
  } finally {
    tmp.cleanup();
  }
}

async function boot(spec: Extract<ChildSpec, { mode: 'boot' }>): Promise<Metrics> {
  const tmp = tempDir(spec.base);
  try {
    const path = join(tmp.dir, 'copy.db');
    copyFileSync(spec.template, path);
    if (spec.system === 'floor') {
      const db = openFloorDb(path, 'normal');
      db.prepare('UPDATE jobs SET claimed = 1 WHERE id <= ?').run(spec.inflight);
      db.close();
    }
    collectGarbage();
    const first = deferred<number>();
    let handled = 0;
    const handler = async () => {
      if (++handled === 1) first.resolve(now());
    };
    if (spec.system === 'floor') {
      const t0 = now();
      const db = openFloorDb(path, 'normal');
      const reset = db.prepare('UPDATE jobs SET claimed = 0 WHERE claimed = 1').run().changes;
      db.close();
      const handle = await floorSystem.open({ dir: tmp.dir, durability: 'normal', concurrency: CHILD_CONCURRENCY, path });
      const t1 = now();
      await handle.consume(handler);
      const t2 = await first.promise;
      await handle.close();
      if (reset !== spec.inflight) throw new Error(`floor boot reset ${reset} rows, expected ${spec.inflight}`);
      return { 'start ms': t1 - t0, 'first handler ms': t2 - t0, recovered: reset };
    }
    const t0 = now();
    const spool = createSpool({ path });
    let redelivered = 0;
    spool.register(SPOOL_QUEUE, (message) => {
      // A recovered row is handed out for the second time.
      if (message.deliveries > 1) redelivered += 1;
      return handler();
    });
    await spool.start();
    const t1 = now();
    const t2 = await first.promise;
    await spool.close();
    // The recovered rows carry crashes = 1 in their snapshot; those handled since are deleted.
    const db = new Database(path, { readonly: true });
    const recovered = db
      .prepare(`SELECT count(*) FROM messages WHERE state = 'pending' AND json_extract(snapshot, '$.value') = 'pending' AND json_extract(snapshot, '$.context.crashes') = 1`)
      .pluck()
      .get() as number;
    const inflight = db.prepare(`SELECT count(*) FROM messages WHERE state IN ('activating', 'processing')`).pluck().get() as number;
    db.close();
    if (inflight !== 0 || recovered + redelivered !== spec.inflight) {
      throw new Error(`spool boot: ${recovered} recovered rows pending + ${redelivered} redelivered, ${inflight} still in flight; expected ${spec.inflight}`);
    }
    return { 'start ms': t1 - t0, 'first handler ms': t2 - t0, recovered: recovered + redelivered };
  } finally {
    tmp.cleanup();
  }
}

/** Output of a child. */
export interface ChildResult {
  metrics: Metrics;
  /** The written profile (profile mode). */
  file?: string;
}

async function profile(spec: Extract<ChildSpec, { mode: 'profile' }>): Promise<ChildResult> {
  const session = new Session();
  session.connect();
  let file = '';
  const metrics = await runOne({
    workload: spec.workload,
    system: systemByName(spec.system, spec.redisPort),
    durability: spec.durability,
    n: spec.n,
    batch: spec.batch,
    ...(spec.base ? { base: spec.base } : {}),
    ...(spec.template ? { template: spec.template, depth: spec.depth!, claimDrain: spec.claimDrain! } : {}),
    hooks: {
      async begin() {
        await session.post('Profiler.enable');
        await session.post('Profiler.setSamplingInterval', { interval: spec.intervalUs });
        await session.post('Profiler.start');
      },
      async end() {
        const { profile: cpuProfile } = await session.post('Profiler.stop');
        mkdirSync(spec.out, { recursive: true });
        file = join(spec.out, `${spec.workload}-${spec.system}-${spec.durability}-n${spec.n}.cpuprofile`);
        writeFileSync(file, JSON.stringify(cpuProfile));
      },
    },
  });
  session.disconnect();
  return { metrics, file };
}

async function main() {
  const spec = JSON.parse(process.argv[2] ?? '{}') as ChildSpec;
  const result: ChildResult = spec.mode === 'rss' ? { metrics: await rss(spec) } : spec.mode === 'boot' ? { metrics: await boot(spec) } : await profile(spec);
  process.stdout.write(`BENCH_RESULT ${JSON.stringify(result)}\n`);
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
