/**
 * The timed workloads, written once over the common QueueHandle so every system runs the same
 * code path. Each run uses a fresh directory, checks its outcome from storage, and cleans up.
 */
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { collectGarbage, deferred, now, payload, payloads, percentile, sleep, tempDir, type Durability, type Payload } from './common.js';
import type { BenchSystem, QueueHandle } from './systems/types.js';

/**
 * Workloads 1–5 and 7 (6 runs in child processes: see child.ts; 8, `disk`, in disk.ts), and
 * `drain-c8-ratelimit` (issue 11): drain-c8 with a queue rate limit set far above the drain rate
 * (RATE_LIMIT_CONFIG), so it measures the limiter's cost, not the limit. Spool gets the setting
 * through `spoolSystem(config)`; the floor runs it as plain drain-c8, as the ratio's baseline.
 * `drain-c8-nohistory` (issue 14) is drain-c8 with the message history off (NO_HISTORY_CONFIG):
 * drain-c8 itself runs with the defaults as they ship, history on, so the two give its cost.
 *
 * Room for the workloads later issues add (not implemented yet). Each one gets a name here, a
 * CONCURRENCY entry, a case in run(), a table in report.ts, a target line in targets.ts, and runs
 * for every system that has the feature (the others show "–"):
 * - `pull-c8`: 8 in-process pull consumers, each in a loop of wait for a message, then end it.
 *   Issue #10's target `pull-c8 ≥ drain c8` is already listed in targets.ts as not measured.
 * - `receive-10`: receives of up to 10 messages at a time.
 * - a cross-process wake-up latency: an idle consumer process, a producer in another process;
 *   from just before send() to the handler's first line (a child_process pair, as the rss and
 *   boot runs use; see child-runner.ts).
 */
export type WorkloadName = 'send' | 'concurrent' | 'batch' | 'drain-c1' | 'drain-c8' | 'drain-c8-ratelimit' | 'drain-c8-nohistory' | 'latency' | 'claim';

/** The config layer of `drain-c8-nohistory`: the message history off (it is on by default). */
export const NO_HISTORY_CONFIG = { history: { enabled: false } };

/**
 * The config layer of `drain-c8-ratelimit`: a million starts per second, about 100× what a drain
 * at concurrency 8 reaches here, so the limiter counts every start and never holds one back.
 */
export const RATE_LIMIT_CONFIG = { queues: { bench: { rateLimit: { max: 1_000_000, perMs: 1000 } } } };

/** Named figures of one run (units in the name's table spec). */
export type Metrics = Record<string, number>;

/** Brackets the measured section (the profiler starts and stops here). */
export interface MeasureHooks {
  begin(): Promise<void>;
  end(): Promise<void>;
}

/** One run of one workload on one system. */
export interface RunSpec {
  workload: WorkloadName;
  system: BenchSystem;
  durability: Durability;
  /** Messages (workloads 1–4). */
  n: number;
  /** Base directory for temp files (default the OS temp dir). */
  base?: string;
  /** sendBatch size (workload 3) and prefill chunk size. */
  batch: number;
  /** Claim workload: the template database to copy, its depth, and how many to drain. */
  template?: string;
  depth?: number;
  claimDrain?: number;
  hooks?: MeasureHooks;
}

/** Messages in flight at once in the concurrent-send workload. */
export const CONCURRENT_SENDS = 1000;
/** Latency workload: sends, their spacing, the untimed warm-up before them, the consumer concurrency. */
export const LATENCY = { sends: 1000, spacingMs: 2, warmup: 50, concurrency: 4 };
/** Claim workload: consumer concurrency. */
export const CLAIM_CONCURRENCY = 8;

/** Handlers at once, per workload (the send workloads start no consumer). */
const CONCURRENCY: Record<WorkloadName, number> = {
  send: 1,
  concurrent: 1,
  batch: 1,
  'drain-c1': 1,
  'drain-c8': 8,
  'drain-c8-ratelimit': 8,
  'drain-c8-nohistory': 8,
  latency: LATENCY.concurrency,
  claim: CLAIM_CONCURRENCY,
};

const noopHooks: MeasureHooks = { begin: async () => {}, end: async () => {} };
const noop = async (): Promise<void> => {};

/** Runs one workload once and returns its figures. Throws if the outcome in storage is wrong. */
export async function runOne(spec: RunSpec): Promise<Metrics> {
  const tmp = tempDir(spec.base);
  let handle: QueueHandle | undefined;
  try {
    const hooks = spec.hooks ?? noopHooks;
    const concurrency = CONCURRENCY[spec.workload];
    let path: string | undefined;
    if (spec.workload === 'claim') {
      path = join(tmp.dir, 'copy.db');
      copyFileSync(spec.template!, path);
    }
    handle = await spec.system.open({ dir: tmp.dir, durability: spec.durability, concurrency, ...(path ? { path } : {}) });
    const metrics = await run(spec, handle, hooks);
    await handle.close();
    handle = undefined;
    return metrics;
  } finally {
    await handle?.close().catch(() => {});
    tmp.cleanup();
  }
}

async function run(spec: RunSpec, h: QueueHandle, hooks: MeasureHooks): Promise<Metrics> {
  const { n } = spec;
  switch (spec.workload) {
    case 'send':
    case 'concurrent':
    case 'batch': {
      collectGarbage();
      await hooks.begin();
      const t0 = now();
      if (spec.workload === 'send') {
        for (let i = 0; i < n; i++) await h.send(payload(i));
      } else if (spec.workload === 'concurrent') {
        let next = 0;
        const lane = async () => {
          while (next < n) await h.send(payload(next++));
        };
        await Promise.all(Array.from({ length: Math.min(CONCURRENT_SENDS, n) }, lane));
      } else {
        for (let i = 0; i < n; i += spec.batch) await h.sendBatch(payloads(i, Math.min(spec.batch, n - i)));
      }
      const ms = now() - t0;
      await hooks.end();
      await expectRemaining(h, n, spec);
      return { 'msg/s': (n / ms) * 1000 };
    }
    case 'drain-c1':
    case 'drain-c8':
    case 'drain-c8-ratelimit':
    case 'drain-c8-nohistory': {
      for (let i = 0; i < n; i += spec.batch) await h.sendBatch(payloads(i, Math.min(spec.batch, n - i)));
      collectGarbage();
      const finished = h.untilDone(n);
      await hooks.begin();
      const t0 = now();
      await h.consume(noop);
      await finished;
      const ms = now() - t0;
      await hooks.end();
      await expectRemaining(h, 0, spec);
      return { 'msg/s': (n / ms) * 1000 };
    }
    case 'latency':
      return latency(h, hooks);
    case 'claim': {
      const k = spec.claimDrain!;
      let first = 0;
      const finished = h.untilDone(k);
      collectGarbage();
      await hooks.begin();
      const t0 = now();
      await h.consume(() => {
        if (first === 0) first = now();
      });
      await finished;
      const t1 = now();
      await hooks.end();
      const left = await h.remaining();
      if (left > spec.depth! - k) throw new Error(`${spec.system.name}: ${left} rows left after draining ${k} of ${spec.depth}`);
      return { 'first ms': first - t0, 'µs/msg': ((t1 - first) * 1000) / k };
    }
  }
}

async function expectRemaining(h: QueueHandle, expected: number, spec: RunSpec) {
  const left = await h.remaining();
  if (left !== expected) throw new Error(`${spec.system.name} ${spec.workload}: expected ${expected} unfinished rows in storage, found ${left}`);
}

/**
 * An idle running queue gets sends spaced LATENCY.spacingMs apart; each latency is from just
 * before send() to the handler's first line. The warm-up sends are not counted.
 */
async function latency(h: QueueHandle, hooks: MeasureHooks): Promise<Metrics> {
  const total = LATENCY.warmup + LATENCY.sends;
  const sentAt = new Float64Array(total);
  const startedAt = new Float64Array(total);
  let handled = 0;
  const warm = deferred();
  const all = deferred();
  await h.consume((p: Payload) => {
    startedAt[p.i] = now();
    if (++handled === LATENCY.warmup) warm.resolve();
    if (handled === total) all.resolve();
  });
  const failed = (error: unknown) => {
    warm.reject(error);
    all.reject(error);
  };
  const pace = async (from: number, to: number) => {
    const t0 = now();
    for (let k = from; k < to; k++) {
      const wait = t0 + (k - from) * LATENCY.spacingMs - now();
      // Always yield between sends, as separate requests would: a sender that is behind schedule
      // must not starve the consumer of the event loop.
      if (wait >= 1) await sleep(wait);
      else await new Promise((resolve) => setImmediate(resolve));
      sentAt[k] = now();
      h.send(payload(k)).catch(failed);
    }
  };
  await pace(0, LATENCY.warmup);
  // The timed sends start only once the queue is idle again.
  await warm.promise;
  collectGarbage();
  await hooks.begin();
  await pace(LATENCY.warmup, total);
  await all.promise;
  await hooks.end();
  const lat: number[] = [];
  for (let k = LATENCY.warmup; k < total; k++) lat.push(startedAt[k]! - sentAt[k]!);
  return { p50: percentile(lat, 50), p99: percentile(lat, 99), max: Math.max(...lat) };
}
