/**
 * `npm run bench`: Spool side by side with the raw SQLite floor, plainjob and BullMQ (over a
 * redis-server the bench finds and starts), in one run. Spool is measured as an application uses
 * it (systems/spool.ts). Prints a table per workload (median of --reps repetitions, each system's
 * ratio to the floor measured in the same repetition), issue #10's targets as met or missed,
 * checks that Spool ran every message's lifecycle, and writes test/bench/results/latest.{json,md}
 * (partial.{json,md} when --only, --systems or --durability narrowed the run).
 *
 *   npm run bench -- [--n 10000] [--full-n N] [--reps 3] [--only send,concurrent,batch,drain,drain-c8-ratelimit,drain-c8-nohistory,latency,pull,wake,claim,claim-groups,rss,boot,disk,check,sqs]
 *                    [--systems floor,spool,plainjob,bullmq] [--durability normal,full] [--big]
 *                    [--batch 1000] [--dir /path/for/temp/files] [--out test/bench/results] [--redis-port P]
 *   npm run bench -- --cpu-prof --only drain-c8 [--systems spool] [--n 50000] [--prof-interval 200]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runChild } from './child-runner.js';
import { collectGarbage, fmt, now, PAYLOAD_BYTES, tempDir, type Durability } from './common.js';
import { measureDisk, type BtreeBytes } from './disk.js';
import { machineInfo } from './machine.js';
import { formatSummary, summarizeFile } from './profile-summary.js';
import { existingRedis, findRedis, REDIS_INSTALL, REDIS_LOCATIONS, startRedis, type RedisServer } from './redis.js';
import { renderCheck, renderMarkdown, renderTables, renderTargetsText } from './report.js';
import { summarise, type Sample } from './results.js';
import { SYSTEM_NAMES, systemByName, systemFor } from './systems/index.js';
import type { BenchSystem } from './systems/types.js';
import { checkTargets, TARGET_DEPTH } from './targets.js';
import { fillTemplate, makeBootTemplate } from './templates.js';
import { verifySpool, type SpoolCheck } from './verify.js';
import { fillGroupsTemplate, runPull, runWake, type PullWorkload } from './pull.js';
import { runOne, type Metrics, type WorkloadName } from './workloads.js';
import { measureSqs, SQS_SYSTEMS, sqsSamples } from './sqs/tier.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));

// ---- options ------------------------------------------------------------------------------------

// The pull workloads (issue 12: pull-c8, receive-10, wake, claim-groups) are Spool's alone: see pull.ts.
const ALL_WORKLOADS = ['send', 'concurrent', 'batch', 'drain-c1', 'drain-c8', 'drain-c8-ratelimit', 'drain-c8-nohistory', 'latency', 'pull-c8', 'receive-10', 'wake', 'claim', 'claim-groups', 'rss', 'boot', 'disk', 'check', 'sqs'] as const;
/** The pull drains, per durability, beside drain-c8. */
const PULLS = ['pull-c8', 'receive-10'] as const satisfies readonly PullWorkload[];
/** Messages per group in the claim-groups templates (issue 12: "10k groups × 100 messages" at 1M). */
const PER_GROUP = 100;
type Part = (typeof ALL_WORKLOADS)[number];
/** Workloads 1–5: in process, under both durabilities, every system (the drain-c8 variants: those that have the feature). */
const QUICK = ['send', 'concurrent', 'batch', 'drain-c1', 'drain-c8', 'drain-c8-ratelimit', 'drain-c8-nohistory', 'latency'] as const satisfies readonly WorkloadName[];
/** Systems of a drain-c8 variant: Spool with the setting, and the floor as the ratio's baseline. */
const VARIANT_SYSTEMS = ['floor', 'spool'];

interface Options {
  n: number;
  /** N under durability full (fsync-bound runs can take long on a slow disk). */
  fullN: number;
  reps: number;
  only: Set<Part>;
  systems: Set<string>;
  durability: Durability[];
  big: boolean;
  batch: number;
  dir: string | undefined;
  out: string;
  cpuProf: boolean;
  profInterval: number;
  systemsGiven: boolean;
  /** A redis-server already running on 127.0.0.1 at this port, used instead of starting one. */
  redisPort: number | undefined;
  /** --only, --systems or --durability narrowed the run: results go to partial.*, not latest.*. */
  partial: boolean;
}

function parseArgs(argv: string[]): Options {
  const value = (name: string): string | undefined => {
    const i = argv.indexOf(`--${name}`);
    if (i < 0) return undefined;
    const v = argv[i + 1];
    if (v === undefined || v.startsWith('--')) throw new Error(`--${name} needs a value`);
    return v;
  };
  const list = (name: string) => value(name)?.split(',').map((s) => s.trim()).filter(Boolean);
  const int = (name: string, fallback: number) => {
    const v = value(name);
    if (v === undefined) return fallback;
    const n = Number(v.replace(/_/g, ''));
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got ${v}`);
    return n;
  };
  const only = new Set<Part>();
  for (const w of list('only') ?? ALL_WORKLOADS) {
    if (w === 'drain') only.add('drain-c1').add('drain-c8').add('drain-c8-ratelimit').add('drain-c8-nohistory');
    else if (w === 'pull') only.add('pull-c8').add('receive-10');
    else if ((ALL_WORKLOADS as readonly string[]).includes(w)) only.add(w as Part);
    else throw new Error(`Unknown workload "${w}" (expected ${ALL_WORKLOADS.join(', ')}, drain or pull)`);
  }
  const systemsGiven = value('systems') !== undefined;
  const systems = new Set(list('systems') ?? SYSTEM_NAMES);
  for (const s of systems) if (!(SYSTEM_NAMES as readonly string[]).includes(s)) throw new Error(`Unknown system "${s}" (expected ${SYSTEM_NAMES.join(', ')})`);
  const durability = (list('durability') ?? ['normal', 'full']) as Durability[];
  for (const d of durability) if (d !== 'normal' && d !== 'full') throw new Error(`--durability takes normal and/or full, got ${d}`);
  const known = new Set(['n', 'full-n', 'reps', 'only', 'systems', 'durability', 'batch', 'dir', 'out', 'prof-interval', 'redis-port', 'big', 'cpu-prof']);
  for (const a of argv) if (a.startsWith('--') && !known.has(a.slice(2))) throw new Error(`Unknown option ${a}`);
  const n = int('n', 10_000);
  return {
    n,
    fullN: int('full-n', n),
    reps: int('reps', 3),
    only,
    systems,
    durability,
    big: argv.includes('--big'),
    batch: int('batch', 1000),
    dir: value('dir'),
    out: value('out') ?? join(HERE, 'results'),
    cpuProf: argv.includes('--cpu-prof'),
    profInterval: int('prof-interval', 200),
    systemsGiven,
    redisPort: value('redis-port') === undefined ? undefined : int('redis-port', 6379),
    partial: ['only', 'systems', 'durability'].some((name) => value(name) !== undefined),
  };
}

// ---- main ---------------------------------------------------------------------------------------

const samples: Sample[] = [];
const failures: string[] = [];

function log(message: string) {
  process.stdout.write(`${message}\n`);
}

function short(m: Metrics): string {
  return Object.entries(m)
    .map(([k, v]) => `${fmt(v)} ${k}`)
    .join(', ');
}

const USAGE = `npm run bench -- [options]
  --n N              messages per run of workloads 1–4 (default 10000)
  --full-n N         N under durability full (default: --n); fsync-bound runs are slow on a slow disk
  --reps R           repetitions; tables show medians (default 3)
  --only LIST        send,concurrent,batch,drain (= drain-c1,drain-c8,drain-c8-ratelimit,drain-c8-nohistory),latency,
                     pull (= pull-c8,receive-10),wake,claim,claim-groups,rss,boot,disk,check,
                     sqs (the SQS endpoint through the AWS SDK, beside fauxqs, a stub and the bare wire layer)
  --systems LIST     floor,spool,plainjob,bullmq
  --durability LIST  normal,full (default both; workloads 1–5)
  --big              add 1M-deep runs to claim, rss and boot (default sizes: 10k and 100k)
  --batch B          sendBatch size, and the disk workload's fill batch (default 1000)
  --dir PATH         where temp databases go (default the OS temp dir)
  --out PATH         results directory (default test/bench/results)
  --redis-port P     use the redis-server already running on 127.0.0.1:P for BullMQ instead of
                     starting one (default: find redis-server and start a private one)
  --cpu-prof         profile the --only workloads (default system spool) in child processes,
                     over the measured section only; writes <out>/profiles/*.cpuprofile
  --prof-interval US sampling interval for --cpu-prof, µs (default 200)`;

/** Finds or starts the redis-server BullMQ runs on; says why not when there is none. */
async function bringUpRedis(o: Options): Promise<{ redis?: RedisServer; text: string; missing?: string }> {
  if (!o.systems.has('bullmq')) return { text: 'not in this run (--systems)', missing: 'not in this run (--systems)' };
  try {
    if (o.redisPort !== undefined) {
      const redis = await existingRedis(o.redisPort);
      return { redis, text: `${redis.version}; its persistence settings are its own` };
    }
    const binary = findRedis();
    if (!binary) {
      const missing = `redis-server is missing (not on the PATH, nor at ${REDIS_LOCATIONS.join(', ')}); install it with \`${REDIS_INSTALL}\``;
      return { text: `NOT MEASURED: ${missing}`, missing };
    }
    const redis = await startRedis(binary);
    return { redis, text: `${redis.version.split(' ').slice(0, 3).join(' ')} (${binary}) started on 127.0.0.1:${redis.port}, --save '' --appendonly no (in memory: no durability setting, normal only)` };
  } catch (error) {
    const missing = `redis-server unavailable: ${(error as Error).message}`;
    return { text: `NOT MEASURED: ${missing}`, missing };
  }
}

async function main() {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    log(USAGE);
    return;
  }
  let o: Options;
  try {
    o = parseArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  const started = now();
  const machine = machineInfo(o.dir);
  log(`Spool benchmark — CPU ${machine.cpu}, ${machine.cores} cores; Node ${machine.node}, SQLite ${machine.sqlite}, ${machine.os}`);
  log(`Temp files: ${machine.tempDir} (${machine.fileSystem}); fsync ${machine.fsyncUs} µs. ${machine.diskNote}.`);
  log(`N = ${o.n.toLocaleString('en-US')}${o.fullN === o.n ? '' : ` (${o.fullN.toLocaleString('en-US')} under full)`}, ${o.reps} repetition(s), payload ${PAYLOAD_BYTES} bytes of JSON, load average ${machine.loadAverage.join(' ')}.`);

  const bull = await bringUpRedis(o);
  const redis = bull.redis;
  log(`BullMQ: ${bull.text}`);
  try {
    if (o.cpuProf) return await profiles(o, redis);

    const notes = new Map<string, string>();
    const build = (name: string) => {
      const s = systemByName(name, redis?.port);
      notes.set(s.name, s.note);
      return s;
    };
    const base: BenchSystem[] = ['floor', 'spool', 'plainjob', 'bullmq'].filter((s) => o.systems.has(s) && (s !== 'bullmq' || redis)).map(build);
    const latencySystems: BenchSystem[] = ['floor', 'spool', 'plainjob', 'plainjob-10ms', 'bullmq']
      .filter((s) => o.systems.has(s === 'plainjob-10ms' ? 'plainjob' : s) && (s !== 'bullmq' || redis))
      .map(build);
    const rateLimited: BenchSystem[] = VARIANT_SYSTEMS.filter((s) => o.systems.has(s)).map((s) => systemFor('drain-c8-ratelimit', s));
    const noHistory: BenchSystem[] = VARIANT_SYSTEMS.filter((s) => o.systems.has(s)).map((s) => systemFor('drain-c8-nohistory', s));
    const quick = QUICK.filter((w) => o.only.has(w));

    // Pull workloads: Spool only, run in each repetition right after the quick workloads, so that
    // the ratio to that repetition's drain-c8 compares runs made minutes apart at most, in the
    // same process state (run after all three repetitions, they met a grown heap and another load).
    const pulls = PULLS.filter((w) => o.only.has(w));
    const runPulls = async (rep: number, durability: Durability) => {
      if (!pulls.length || !o.systems.has('spool')) return;
      const parts: string[] = [];
      for (const workload of pulls) {
        collectGarbage();
        try {
          const metrics = await runPull(workload, durability === 'full' ? o.fullN : o.n, durability, o.batch, o.dir);
          samples.push({ workload, system: 'spool', durability, rep, metrics });
          parts.push(`${workload} ${short(metrics)}`);
        } catch (error) {
          failures.push(`${workload} spool ${durability} rep ${rep}: ${(error as Error).message}`);
        }
      }
      log(`rep ${rep}/${o.reps} ${durability.padEnd(6)} pull       spool ${parts.join(' | ')}`);
    };

    // Workloads 1–5: repetition outermost, so every repetition has its own floor to compare with.
    for (let rep = 1; rep <= o.reps && quick.length; rep++) {
      for (const durability of o.durability) {
        for (const workload of quick) {
          const systems = workload === 'latency' ? latencySystems : workload === 'drain-c8-ratelimit' ? rateLimited : workload === 'drain-c8-nohistory' ? noHistory : base;
          const parts: string[] = [];
          for (const system of systems) {
            if (system.name === 'bullmq' && durability === 'full') continue;
            collectGarbage();
            try {
              const metrics = await runOne({ workload, system, durability, n: durability === 'full' ? o.fullN : o.n, batch: o.batch, ...(o.dir ? { base: o.dir } : {}) });
              samples.push({ workload, system: system.name, durability, rep, metrics });
              parts.push(`${system.name} ${short(metrics)}`);
            } catch (error) {
              failures.push(`${workload} ${system.name} ${durability} rep ${rep}: ${(error as Error).message}`);
              parts.push(`${system.name} FAILED`);
            }
          }
          log(`rep ${rep}/${o.reps} ${durability.padEnd(6)} ${workload.padEnd(10)} ${parts.join(' | ')}`);
        }
        await runPulls(rep, durability);
      }
    }
    // --only naming pull workloads and no quick ones: the pulls still run, once per repetition.
    for (let rep = 1; rep <= o.reps && !quick.length; rep++) for (const durability of o.durability) await runPulls(rep, durability);

    for (let rep = 1; rep <= o.reps && o.only.has('wake') && o.systems.has('spool'); rep++) {
      try {
        const metrics = await runWake(o.dir);
        samples.push({ workload: 'wake', system: 'spool', durability: 'normal', rep, metrics });
        log(`rep ${rep}/${o.reps} wake (another process sends, a consumer process waits): ${short(metrics)}`);
      } catch (error) {
        failures.push(`wake spool rep ${rep}: ${(error as Error).message}`);
      }
    }

    // The sqs tier (issue 13): the SQS endpoint through the AWS SDK over HTTP, beside fauxqs and the ceilings.
    for (let rep = 1; rep <= o.reps && o.only.has('sqs') && o.systems.has('spool'); rep++) {
      // Each repetition starts with another system, so a change in machine load does not favour one.
      const order = [...SQS_SYSTEMS.slice(rep % SQS_SYSTEMS.length), ...SQS_SYSTEMS.slice(0, rep % SQS_SYSTEMS.length)];
      const parts: string[] = [];
      for (const system of order) {
        collectGarbage();
        try {
          const figures = await measureSqs(system, rep, { n: o.n, rawN: 2 * o.n, latencyN: 1000, clients: 8, ...(o.dir ? { dir: o.dir } : {}) });
          for (const [workload, metrics] of sqsSamples(figures)) samples.push({ workload, system, durability: 'normal', rep, metrics });
          parts.push(`${system} drain ${fmt(figures.drain)} msg/s, raw ${fmt(figures.rawPairs)} pairs/s`);
        } catch (error) {
          failures.push(`sqs ${system} rep ${rep}: ${(error as Error).message}`);
        }
      }
      log(`rep ${rep}/${o.reps} sqs    ${parts.join(' | ')}`);
    }

    const btrees = new Map<string, BtreeBytes[]>();
    const templates = tempDir(o.dir, 'spool-bench-templates-');
    try {
      const depths = o.big ? [10_000, TARGET_DEPTH, 1_000_000] : [10_000, TARGET_DEPTH];
      if (!o.big && (o.only.has('claim') || o.only.has('rss') || o.only.has('boot'))) {
        log('Deep-queue workloads at 10k and 100k only; add --big for 1M (fills take ~1 min and ~2 GB of temp disk).');
      }
      const templateOf = new Map<string, string>();
      const template = async (system: BenchSystem, depth: number) => {
        const key = `${system.name}-${depth}`;
        let path = templateOf.get(key);
        if (!path) {
          path = join(templates.dir, `${key}.db`);
          const ms = await fillTemplate(system, path, depth);
          log(`filled ${system.name} with ${depth.toLocaleString('en-US')} pending in ${fmt(ms)} ms`);
          templateOf.set(key, path);
        }
        return path;
      };
      const sqliteSystems = base.filter((s) => s.name !== 'bullmq');

      if (o.only.has('claim')) {
        const k = 5000;
        for (const depth of depths) {
          for (const system of sqliteSystems) await template(system, depth);
          for (let rep = 1; rep <= o.reps; rep++) {
            const parts: string[] = [];
            for (const system of sqliteSystems) {
              collectGarbage();
              try {
                const metrics = await runOne({ workload: 'claim', system, durability: 'normal', n: o.n, batch: o.batch, template: templateOf.get(`${system.name}-${depth}`)!, depth, claimDrain: Math.min(k, depth), ...(o.dir ? { base: o.dir } : {}) });
                samples.push({ workload: 'claim', system: system.name, durability: 'normal', depth, rep, metrics });
                parts.push(`${system.name} ${short(metrics)}`);
              } catch (error) {
                failures.push(`claim ${system.name} depth ${depth} rep ${rep}: ${(error as Error).message}`);
              }
            }
            log(`rep ${rep}/${o.reps} claim depth ${depth.toLocaleString('en-US')}: ${parts.join(' | ')}`);
          }
        }
      }

      if (o.only.has('claim-groups') && o.systems.has('spool')) {
        // The claim on a queue spread over message groups, against the plain claim at the same depth.
        const k = 5000;
        const spool = build('spool');
        for (const depth of depths) {
          const plain = await template(spool, depth);
          const grouped = join(templates.dir, `spool-groups-${depth}.db`);
          const groups = depth / PER_GROUP;
          const ms = await fillGroupsTemplate(grouped, depth, groups);
          log(`filled spool with ${depth.toLocaleString('en-US')} pending over ${groups.toLocaleString('en-US')} groups in ${fmt(ms)} ms`);
          for (let rep = 1; rep <= o.reps; rep++) {
            const parts: string[] = [];
            for (const [name, path] of [['spool', plain], ['spool-groups', grouped]] as const) {
              collectGarbage();
              try {
                const metrics = await runOne({ workload: 'claim', system: spool, durability: 'normal', n: o.n, batch: o.batch, template: path, depth, claimDrain: Math.min(k, depth), ...(o.dir ? { base: o.dir } : {}) });
                samples.push({ workload: 'claim-groups', system: name, durability: 'normal', depth, rep, metrics });
                parts.push(`${name} ${short(metrics)}`);
              } catch (error) {
                failures.push(`claim-groups ${name} depth ${depth} rep ${rep}: ${(error as Error).message}`);
              }
            }
            log(`rep ${rep}/${o.reps} claim-groups depth ${depth.toLocaleString('en-US')}: ${parts.join(' | ')}`);
          }
        }
      }

      if (o.only.has('rss')) {
        const rssSystems = (['floor', 'spool', 'plainjob'] as const).filter((s) => o.systems.has(s));
        for (const depth of depths) {
          for (const name of rssSystems) await template(build(name), depth);
          for (let rep = 1; rep <= o.reps; rep++) {
            const parts: string[] = [];
            for (const name of rssSystems) {
              try {
                const { metrics } = await runChild({ mode: 'rss', system: name, template: templateOf.get(`${name}-${depth}`)!, depth, ...(o.dir ? { base: o.dir } : {}) });
                samples.push({ workload: 'rss', system: name, durability: 'normal', depth, rep, metrics });
                parts.push(`${name} ${short(metrics)}`);
              } catch (error) {
                failures.push(`rss ${name} depth ${depth} rep ${rep}: ${(error as Error).message}`);
              }
            }
            log(`rep ${rep}/${o.reps} rss depth ${depth.toLocaleString('en-US')}: ${parts.join(' | ')}`);
          }
        }
      }

      if (o.only.has('boot')) {
        const bootSystems = (['floor', 'spool'] as const).filter((s) => o.systems.has(s));
        const depth = depths.at(-1)!;
        const inflight = 10_000;
        const bootPaths = new Map<string, string>();
        for (const name of bootSystems) {
          const pending = await template(build(name), depth);
          if (name === 'spool') {
            const path = join(templates.dir, `spool-boot-${depth}.db`);
            const t0 = now();
            await makeBootTemplate(pending, path, inflight);
            log(`crashed a spool with ${inflight.toLocaleString('en-US')} handlers running, for the boot template, in ${fmt(now() - t0)} ms`);
            bootPaths.set(name, path);
          } else bootPaths.set(name, pending);
        }
        for (let rep = 1; rep <= o.reps; rep++) {
          const parts: string[] = [];
          for (const name of bootSystems) {
            try {
              const { metrics } = await runChild({ mode: 'boot', system: name, template: bootPaths.get(name)!, depth, inflight, ...(o.dir ? { base: o.dir } : {}) });
              samples.push({ workload: 'boot', system: name, durability: 'normal', depth, rep, metrics });
              parts.push(`${name} ${short(metrics)}`);
            } catch (error) {
              failures.push(`boot ${name} rep ${rep}: ${(error as Error).message}`);
            }
          }
          log(`rep ${rep}/${o.reps} boot ${depth.toLocaleString('en-US')} pending (${inflight.toLocaleString('en-US')} of them in flight): ${parts.join(' | ')}`);
        }
      }
    } finally {
      templates.cleanup();
    }

    if (o.only.has('disk')) {
      // BullMQ keeps its queue in Redis's memory: it has no file to measure.
      for (let rep = 1; rep <= o.reps; rep++) {
        const parts: string[] = [];
        for (const system of base.filter((s) => s.name !== 'bullmq')) {
          try {
            const { metrics, btrees: where } = await measureDisk(system, TARGET_DEPTH, o.batch, o.dir);
            samples.push({ workload: 'disk', system: system.name, durability: 'normal', depth: TARGET_DEPTH, rep, metrics });
            if (rep === 1) btrees.set(system.name, where);
            parts.push(`${system.name} ${short(metrics)}`);
          } catch (error) {
            failures.push(`disk ${system.name} rep ${rep}: ${(error as Error).message}`);
          }
        }
        log(`rep ${rep}/${o.reps} disk ${TARGET_DEPTH.toLocaleString('en-US')} pending: ${parts.join(' | ')}`);
      }
    }

    let check: SpoolCheck | undefined;
    if (o.only.has('check') && o.systems.has('spool')) {
      check = await verifySpool(o.n, 'normal', o.dir);
    }

    machine.loadAverageEnd = loadavg().map((l) => Math.round(l * 100) / 100);
    const rows = summarise(samples);
    const tables = renderTables(o, rows, notes, btrees);
    const targets = o.systems.has('spool') ? checkTargets(rows, samples, { batch: o.batch, ...(bull.missing ? { bullmqMissing: bull.missing } : {}) }) : [];
    const checkText = check ? renderCheck(check) : undefined;
    const elapsed = (now() - started) / 1000;
    log(tables.text);
    if (checkText) log(`\n${checkText}`);
    if (failures.length) log(`\nFailures:\n${failures.map((f) => `  ${f}`).join('\n')}`);
    if (bull.missing) log(`\nBullMQ NOT MEASURED: ${bull.missing}.`);
    if (targets.length) log(`\n${renderTargetsText(machine, o.reps, targets)}`);
    log(`\nTook ${elapsed.toFixed(0)} s.`);

    mkdirSync(o.out, { recursive: true });
    // A filtered run must not replace the last complete table.
    const stem = o.partial ? 'partial' : 'latest';
    const settings = { n: o.n, fullN: o.fullN, reps: o.reps, batch: o.batch, big: o.big, payloadBytes: PAYLOAD_BYTES, workloads: [...o.only], systems: [...o.systems], durability: o.durability, redis: redis ? redis.version : null };
    writeFileSync(
      join(o.out, `${stem}.json`),
      JSON.stringify({ takenAt: new Date().toISOString(), elapsedSeconds: Math.round(elapsed), machine, settings, bullmq: bull.text, rows, samples, targets, diskBtrees: Object.fromEntries(btrees), check: check ?? null, failures }, null, 2) + '\n',
    );
    writeFileSync(join(o.out, `${stem}.md`), renderMarkdown({ machine, settings, reps: o.reps, tables: tables.markdown, targets, check: checkText, bullmq: bull.text, failures, elapsed }));
    log(`Results: ${relative(process.cwd(), join(o.out, `${stem}.md`))}, ${relative(process.cwd(), join(o.out, `${stem}.json`))}`);
    if (failures.length || (check && !check.ok)) process.exitCode = 1;
  } finally {
    await redis?.stop();
  }
}

/** --cpu-prof: each selected workload in its own child, profiled over the measured section only. */
async function profiles(o: Options, redis: RedisServer | undefined) {
  const out = join(o.out, 'profiles');
  const systems = o.systemsGiven ? [...o.systems].filter((s) => s !== 'bullmq' || redis) : ['spool'];
  const workloads = QUICK.filter((w) => o.only.has(w));
  if (!workloads.length) throw new Error('--cpu-prof profiles workloads 1–5: pass e.g. --only drain-c8');
  for (const durability of o.durability) {
    for (const workload of workloads) {
      for (const system of systems) {
        if (system === 'bullmq' && durability === 'full') continue;
        const { metrics, file } = await runChild({
          mode: 'profile',
          workload,
          system,
          durability,
          n: durability === 'full' ? o.fullN : o.n,
          batch: o.batch,
          out,
          intervalUs: o.profInterval,
          ...(redis ? { redisPort: redis.port } : {}),
          ...(o.dir ? { base: o.dir } : {}),
        });
        log(`\n${workload} ${system} ${durability}: ${short(metrics)} (profiled; sampling slows it)`);
        const { summary } = summarizeFile(file!, 15);
        log(formatSummary(summary, relative(process.cwd(), file!)));
      }
    }
  }
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
