/**
 * The child side of the measurements a long-lived bench process would distort: RSS with a deep
 * queue, boot time, the crash that leaves rows in flight for the boot runs, and CPU profiles.
 * Each system has its own entry point under children/, importing only that system, so a child's
 * RSS holds what an application using that system would load, and nothing of the others.
 * The parent (child-runner.ts) passes one JSON ChildSpec as argv[2]; the child prints one line
 * `BENCH_RESULT <json ChildResult>` on stdout.
 */
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { collectGarbage, deferred, tempDir, type Durability } from './common.js';
import type { BenchSystem } from './systems/types.js';
import type { Metrics, WorkloadName } from './workloads.js';

/** What the parent asks a child to do. */
export type ChildSpec =
  | { mode: 'rss'; system: 'spool' | 'floor' | 'plainjob'; template: string; depth: number; base?: string }
  | { mode: 'boot'; system: 'spool' | 'floor'; template: string; depth: number; inflight: number; base?: string }
  /**
   * Spool only: a pull consumer on `path` (which another process sends to). It prints `PHASE
   * quiet`, `PHASE busy` (the parent sends to another queue meanwhile) and `PHASE wake` (the
   * parent sends `sends` messages to queue `wake`) on stdout as it goes.
   */
  | { mode: 'wake'; system: 'spool'; path: string; sends: number; idleMs: number }
  /** Spool only: copy `template` to `out`, put `inflight` messages in flight, then die by SIGKILL. */
  | { mode: 'crash'; system: 'spool'; template: string; out: string; inflight: number }
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

/** Output of a child. */
export interface ChildResult {
  metrics: Metrics;
  /** The written profile (profile mode). */
  file?: string;
}

/** What one child entry point can do. */
export interface ChildEntry {
  /** The system measured by `rss`. */
  system?: BenchSystem;
  boot?(spec: Extract<ChildSpec, { mode: 'boot' }>): Promise<Metrics>;
  /** Never returns: the process dies as a crash would leave it. */
  crash?(spec: Extract<ChildSpec, { mode: 'crash' }>): Promise<never>;
  profile?(spec: Extract<ChildSpec, { mode: 'profile' }>): Promise<ChildResult>;
  wake?(spec: Extract<ChildSpec, { mode: 'wake' }>): Promise<Metrics>;
}

/** Concurrency of the consumers in the RSS and boot runs (Spool's default). */
export const CHILD_CONCURRENCY = 4;
const MB = 2 ** 20;

/**
 * RSS after a full GC while every handler slot holds a message and the rest of the queue waits;
 * Δ is against the same process just before opening the queue (its modules already loaded).
 */
async function rss(system: BenchSystem, spec: Extract<ChildSpec, { mode: 'rss' }>): Promise<Metrics> {
  const tmp = tempDir(spec.base);
  try {
    const path = join(tmp.dir, 'copy.db');
    copyFileSync(spec.template, path);
    collectGarbage();
    const before = process.memoryUsage();
    const handle = await system.open({ dir: tmp.dir, durability: 'normal', concurrency: CHILD_CONCURRENCY, path });
    const gate = deferred();
    const busy = deferred();
    let started = 0;
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
    if (left !== spec.depth) throw new Error(`rss ${system.name}: ${left} rows stored, expected ${spec.depth}`);
    return { 'RSS MB': after.rss / MB, 'Δ RSS MB': (after.rss - before.rss) / MB, 'heap MB': after.heapUsed / MB };
  } finally {
    tmp.cleanup();
  }
}

/** Runs the spec given on the command line with `entry` and prints its result. */
export function childMain(entry: ChildEntry): void {
  const run = async () => {
    const spec = JSON.parse(process.argv[2] ?? '{}') as ChildSpec;
    const unsupported = () => new Error(`this child cannot run mode ${spec.mode} for ${spec.system}`);
    let result: ChildResult;
    switch (spec.mode) {
      case 'rss':
        if (!entry.system) throw unsupported();
        result = { metrics: await rss(entry.system, spec) };
        break;
      case 'boot':
        if (!entry.boot) throw unsupported();
        result = { metrics: await entry.boot(spec) };
        break;
      case 'crash':
        if (!entry.crash) throw unsupported();
        return entry.crash(spec);
      case 'profile':
        if (!entry.profile) throw unsupported();
        result = await entry.profile(spec);
        break;
      case 'wake':
        if (!entry.wake) throw unsupported();
        result = { metrics: await entry.wake(spec) };
        break;
    }
    process.stdout.write(`BENCH_RESULT ${JSON.stringify(result)}\n`);
  };
  run().catch((error) => {
    process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  });
}
