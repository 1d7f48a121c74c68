/**
 * Child entry for Spool: RSS, boot, and the crash that leaves rows in flight for the boot runs.
 * Loads Spool (and better-sqlite3 to read the file back), as an application using Spool would.
 */
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { CHILD_CONCURRENCY, childMain, type ChildSpec } from '../child.js';
import { collectGarbage, deferred, now, percentile, systemNow, tempDir } from '../common.js';
import { createSpool } from '../../../dist/src/index.js';
import { openAppSpool, spoolSystem } from '../systems/spool.js';
import type { Metrics } from '../workloads.js';

/**
 * createSpool() + start() on a copy of a crashed spool (in the app setting: queue paused, events$
 * counted), then the resume to the first handler. Checks from the file that every in-flight row
 * was recovered (pending with crashes = 1) or handed out again.
 */
async function boot(spec: Extract<ChildSpec, { mode: 'boot' }>): Promise<Metrics> {
  const tmp = tempDir(spec.base);
  try {
    const path = join(tmp.dir, 'copy.db');
    copyFileSync(spec.template, path);
    collectGarbage();
    const first = deferred<number>();
    let handled = 0;
    let redelivered = 0;
    const t0 = now();
    const app = await openAppSpool({ path, durability: 'normal', concurrency: CHILD_CONCURRENCY });
    const t1 = now();
    await app.resume(async (message) => {
      // A recovered row is handed out for the second time.
      if (message.deliveries > 1) redelivered += 1;
      if (++handled === 1) first.resolve(now());
    });
    const t2 = await first.promise;
    await app.close();
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

/**
 * A real crash, so the boot template holds exactly what the current schema and runtime leave
 * behind: `inflight` handlers start (their claims committed) and never finish, then SIGKILL.
 */
async function crash(spec: Extract<ChildSpec, { mode: 'crash' }>): Promise<never> {
  copyFileSync(spec.template, spec.out);
  const app = await openAppSpool({ path: spec.out, durability: 'normal', concurrency: spec.inflight });
  const all = deferred();
  let started = 0;
  await app.resume(() => {
    if (++started === spec.inflight) all.resolve();
    return new Promise<void>(() => {});
  });
  await all.promise;
  process.kill(process.pid, 'SIGKILL');
  return new Promise<never>(() => {});
}

/**
 * Statements this process runs, counted at better-sqlite3's Statement methods (every query the
 * spool makes goes through one), by whether it reads the arrivals counters or does anything else.
 */
function countStatements(): { arrivals: number; other: number } {
  const counts = { arrivals: 0, other: 0 };
  const probe = new Database(':memory:');
  const proto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<string, (...args: unknown[]) => unknown>;
  probe.close();
  for (const method of ['run', 'get', 'all', 'iterate']) {
    const original = proto[method]!;
    proto[method] = function (this: { source: string }, ...args: unknown[]) {
      if (this.source.includes("name = 'arrivals:' || @queue")) counts.arrivals += 1;
      else counts.other += 1;
      return original.apply(this, args);
    };
  }
  return counts;
}

/**
 * A pull consumer process (see ChildSpec 'wake'): idle on queue `idle` for `idleMs` on a quiet
 * file, then as long again while the parent sends to another queue, then `sends` wake-ups on
 * queue `wake`. Statements are counted per phase; each latency is from the parent's send (epoch
 * ms with sub-ms precision in the payload) to the line after wait() resolved here.
 */
async function wake(spec: Extract<ChildSpec, { mode: 'wake' }>): Promise<Metrics> {
  const counts = countStatements();
  // Short, so that a phase holds many polls (30 in the default 3 s).
  const pollIntervalMs = 100;
  const spool = createSpool({ path: spec.path, config: { processor: { pollIntervalMs } } });
  const consumer = spool.consumer();
  // What one lease attempt costs: a wait makes one when it starts and one when its time is up.
  // Those two are the wait's, not the idle time's, and are taken out of each phase's count.
  if ((await consumer.wait('idle', { timeoutMs: 0 })) !== null) throw new Error('a message arrived on the idle queue');
  const probe = { ...counts };
  if ((await consumer.wait('idle', { timeoutMs: 0 })) !== null) throw new Error('a message arrived on the idle queue');
  const attempt = counts.other - probe.other;
  const phase = async (name: string): Promise<{ arrivals: number; other: number }> => {
    const before = { ...counts };
    process.stdout.write(`PHASE ${name}\n`);
    // Nothing arrives on `idle`: the wait runs to its timeout.
    if ((await consumer.wait('idle', { timeoutMs: spec.idleMs })) !== null) throw new Error('a message arrived on the idle queue');
    return { arrivals: counts.arrivals - before.arrivals, other: counts.other - before.other - 2 * attempt };
  };
  const quiet = await phase('quiet');
  const busy = await phase('busy');
  process.stdout.write('PHASE wake\n');
  const latencies: number[] = [];
  while (latencies.length < spec.sends) {
    const m = await consumer.wait<{ sentAt: number }>('wake', { timeoutMs: 10_000 });
    if (!m) throw new Error(`no wake-up within 10 s after ${latencies.length} of ${spec.sends}`);
    latencies.push(systemNow() - m.payload.sentAt);
  }
  await consumer.close();
  await spool.close();
  const perPoll = (n: number) => (n / spec.idleMs) * pollIntervalMs;
  return {
    'p50 ms': percentile(latencies, 50),
    'p99 ms': percentile(latencies, 99),
    'max ms': Math.max(...latencies),
    'attempt queries': attempt,
    'quiet queries/poll': perPoll(quiet.arrivals + quiet.other),
    'busy queries/poll': perPoll(busy.other),
    'busy counter reads/s': (busy.arrivals / spec.idleMs) * 1000,
  };
}

childMain({ system: spoolSystem(), boot, crash, wake });
