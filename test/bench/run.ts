/**
 * `npm run bench`: Spool side by side with the raw SQLite floor, plainjob and (when redis-server
 * is on the PATH) BullMQ, in one run. Prints a table per workload (median of --reps repetitions,
 * each system's ratio to the floor measured in the same repetition), checks that Spool ran every
 * message's lifecycle, and writes test/bench/results/latest.{json,md} (partial.{json,md} when
 * --only, --systems or --durability narrowed the run).
 *
 *   npm run bench -- [--n 10000] [--full-n N] [--reps 3] [--only send,concurrent,batch,drain,latency,claim,rss,boot,check]
 *                    [--systems floor,spool,plainjob,bullmq] [--durability normal,full] [--big]
 *                    [--batch 1000] [--dir /path/for/temp/files] [--out test/bench/results]
 *   npm run bench -- --cpu-prof --only drain-c8 [--systems spool] [--n 50000] [--prof-interval 200]
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundledEntry, NODE_CHILD_FLAGS } from '../helpers/bundle.js';
import type { ChildResult, ChildSpec } from './child.js';
import { collectGarbage, fmt, median, now, PAYLOAD_BYTES, tempDir, type Durability } from './common.js';
import { machineInfo, type MachineInfo } from './machine.js';
import { formatSummary, summarizeFile } from './profile-summary.js';
import { findRedis, startRedis, type RedisServer } from './redis.js';
import { SYSTEM_NAMES, systemByName } from './systems/index.js';
import type { BenchSystem } from './systems/types.js';
import { fillTemplate, makeBootTemplate, realInflightShape } from './templates.js';
import { verifySpool, type SpoolCheck } from './verify.js';
import { CLAIM_CONCURRENCY, CONCURRENT_SENDS, LATENCY, runOne, type Metrics, type WorkloadName } from './workloads.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');

// ---- options ------------------------------------------------------------------------------------

const ALL_WORKLOADS = ['send', 'concurrent', 'batch', 'drain-c1', 'drain-c8', 'latency', 'claim', 'rss', 'boot', 'check'] as const;
type Part = (typeof ALL_WORKLOADS)[number];

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
    if (w === 'drain') only.add('drain-c1').add('drain-c8');
    else if ((ALL_WORKLOADS as readonly string[]).includes(w)) only.add(w as Part);
    else throw new Error(`Unknown workload "${w}" (expected ${ALL_WORKLOADS.join(', ')}, or drain)`);
  }
  const systemsGiven = value('systems') !== undefined;
  const systems = new Set(list('systems') ?? SYSTEM_NAMES);
  for (const s of systems) if (!(SYSTEM_NAMES as readonly string[]).includes(s)) throw new Error(`Unknown system "${s}" (expected ${SYSTEM_NAMES.join(', ')})`);
  const durability = (list('durability') ?? ['normal', 'full']) as Durability[];
  for (const d of durability) if (d !== 'normal' && d !== 'full') throw new Error(`--durability takes normal and/or full, got ${d}`);
  const known = new Set(['n', 'full-n', 'reps', 'only', 'systems', 'durability', 'batch', 'dir', 'out', 'prof-interval', 'big', 'cpu-prof']);
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
    partial: ['only', 'systems', 'durability'].some((name) => value(name) !== undefined),
  };
}

// ---- results ------------------------------------------------------------------------------------

interface Sample {
  workload: string;
  system: string;
  durability: Durability;
  depth?: number;
  rep: number;
  metrics: Metrics;
}

interface Row {
  workload: string;
  system: string;
  durability: Durability;
  depth?: number;
  reps: number;
  median: Metrics;
  /** Median over repetitions of (this system ÷ the floor of the same repetition). */
  ratio: Metrics;
  values: Metrics[];
}

interface TableSpec {
  workload: string;
  title: string;
  metrics: { key: string; label: string }[];
  /** Metrics whose ratio to the floor is shown. */
  ratios: string[];
  better: 'higher' | 'lower';
  note: string;
}

const samples: Sample[] = [];
const failures: string[] = [];

function record(sample: Sample) {
  samples.push(sample);
}

function summarise(): Row[] {
  const groups = new Map<string, Sample[]>();
  for (const s of samples) {
    const key = [s.workload, s.depth ?? '', s.durability, s.system].join('|');
    let g = groups.get(key);
    if (!g) groups.set(key, (g = []));
    g.push(s);
  }
  const rows: Row[] = [];
  for (const g of groups.values()) {
    const first = g[0]!;
    const keys = Object.keys(first.metrics);
    const med: Metrics = {};
    const ratio: Metrics = {};
    for (const k of keys) {
      med[k] = median(g.map((s) => s.metrics[k]!));
      const ratios = g
        .map((s) => {
          const floor = samples.find((f) => f.system === 'floor' && f.workload === s.workload && f.durability === s.durability && f.depth === s.depth && f.rep === s.rep);
          return floor && floor.metrics[k] ? s.metrics[k]! / floor.metrics[k]! : undefined;
        })
        .filter((r): r is number => r !== undefined);
      if (ratios.length) ratio[k] = median(ratios);
    }
    rows.push({ workload: first.workload, system: first.system, durability: first.durability, ...(first.depth !== undefined ? { depth: first.depth } : {}), reps: g.length, median: med, ratio, values: g.map((s) => s.metrics) });
  }
  return rows;
}

function tableSpecs(o: Options): TableSpec[] {
  const n = o.fullN === o.n ? o.n.toLocaleString('en-US') : `${o.n.toLocaleString('en-US')}; ${o.fullN.toLocaleString('en-US')} under full`;
  const tput = [{ key: 'msg/s', label: 'msg/s' }];
  return [
    { workload: 'send', title: `1. One-by-one send(), each awaited (${n} messages)`, metrics: tput, ratios: ['msg/s'], better: 'higher', note: 'Consumers not started.' },
    { workload: 'concurrent', title: `2. Concurrent send(), ${CONCURRENT_SENDS.toLocaleString('en-US')} in flight (${n} messages)`, metrics: tput, ratios: ['msg/s'], better: 'higher', note: 'A sliding window: 1,000 lanes, each awaiting its send before the next. plainjob\'s add() and the floor\'s insert are synchronous, so for them this equals one-by-one.' },
    { workload: 'batch', title: `3. sendBatch, ${o.batch.toLocaleString('en-US')} per batch (${n} messages)`, metrics: tput, ratios: ['msg/s'], better: 'higher', note: 'Floor: one transaction of single-row INSERTs per batch; plainjob: addMany; BullMQ: addBulk.' },
    { workload: 'drain-c1', title: `4a. Drain ${n} pending, concurrency 1`, metrics: tput, ratios: ['msg/s'], better: 'higher', note: 'Pre-sent before the consumer starts; timed from start to the last completion stored (Spool: stop() resolved, rows deleted; plainjob: every job status done, rows kept).' },
    { workload: 'drain-c8', title: `4b. Drain ${n} pending, concurrency 8`, metrics: tput, ratios: ['msg/s'], better: 'higher', note: 'As 4a with 8 handlers at once.' },
    {
      workload: 'latency',
      title: `5. Latency: ${LATENCY.sends.toLocaleString('en-US')} sends ${LATENCY.spacingMs} ms apart to an idle running queue (ms, send() call → handler start)`,
      metrics: [
        { key: 'p50', label: 'p50 ms' },
        { key: 'p99', label: 'p99 ms' },
        { key: 'max', label: 'max ms' },
      ],
      ratios: ['p50', 'p99'],
      better: 'lower',
      note: `After ${LATENCY.warmup} untimed warm-up sends. Consumer concurrency ${LATENCY.concurrency} (plainjob: one worker, its default).`,
    },
    {
      workload: 'claim',
      title: `7. Claim cost by queue depth (concurrency ${CLAIM_CONCURRENCY}, normal)`,
      metrics: [
        { key: 'µs/msg', label: 'µs/msg' },
        { key: 'first ms', label: 'start→1st handler ms' },
      ],
      ratios: ['µs/msg'],
      better: 'lower',
      note: 'µs/msg: wall time per message from the first handler start to the completion of the first K messages stored (claims, handler, settle: the per-message cost at that depth). start→1st handler: consume()/start() call to the first handler (Spool: open, recovery scan, first claim transaction).',
    },
    {
      workload: 'rss',
      title: '6a. Memory with N pending (fresh process per size, after GC, 4 handlers blocked)',
      metrics: [
        { key: 'RSS MB', label: 'RSS MB' },
        { key: 'Δ RSS MB', label: 'Δ RSS MB (vs before open)' },
        { key: 'heap MB', label: 'heap used MB' },
      ],
      ratios: [],
      better: 'lower',
      note: 'RSS of the whole process, read after a full GC while 4 handlers hold messages and the rest wait; Δ is against the same process just before opening the queue (modules already loaded); the RSS target compares Δ, since whole-process RSS varies by a few MB between fresh processes.',
    },
    {
      workload: 'boot',
      title: '6b. Boot with N pending + in-flight rows left by a crash (fresh process)',
      metrics: [
        { key: 'start ms', label: 'start() ms' },
        { key: 'first handler ms', label: '→ 1st handler ms' },
        { key: 'recovered', label: 'rows reset' },
      ],
      ratios: ['start ms'],
      better: 'lower',
      note: 'Spool: createSpool()+start() (open, migrate check, owner lock, recovery of every in-flight row to pending in one transaction). Floor: open + UPDATE jobs SET claimed=0 WHERE claimed=1.',
    },
  ];
}

function ratioText(r: number | undefined): string {
  if (r === undefined) return '–';
  return `${r >= 10 ? r.toFixed(0) : r >= 1 ? r.toFixed(2) : r.toFixed(3)}×`;
}

function renderTables(o: Options, rows: Row[], systemsNotes: Map<string, string>): { text: string; markdown: string } {
  const text: string[] = [];
  const md: string[] = [];
  for (const spec of tableSpecs(o)) {
    const mine = rows.filter((r) => r.workload === spec.workload);
    if (!mine.length) continue;
    const depthCol = mine.some((r) => r.depth !== undefined);
    const head = ['system', ...(depthCol ? ['depth'] : []), 'durability', ...spec.metrics.map((m) => m.label), ...spec.ratios.map((k) => `${k} ÷ floor`), 'reps'];
    const body = mine
      .sort((a, b) => (a.depth ?? 0) - (b.depth ?? 0) || b.durability.localeCompare(a.durability) || sysOrder(a.system) - sysOrder(b.system))
      .map((r) => [
        r.system,
        ...(depthCol ? [r.depth?.toLocaleString('en-US') ?? ''] : []),
        r.durability,
        ...spec.metrics.map((m) => fmt(r.median[m.key])),
        ...spec.ratios.map((k) => (r.system === 'floor' ? '1×' : ratioText(r.ratio[k]))),
        r.values.map((v) => fmt(v[spec.metrics[0]!.key])).join(' / '),
      ]);
    const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
    const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
    text.push(`\n${spec.title} — ${spec.better} is better`, line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line), `  ${spec.note}`);
    md.push(`\n### ${spec.title}\n`, `| ${head.join(' | ')} |`, `|${head.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`, ...body.map((b) => `| ${b.join(' | ')} |`), '', `${spec.note} ${spec.better === 'higher' ? 'Higher' : 'Lower'} is better; ratios are medians of per-repetition ratios to the floor; "reps" lists each repetition's first figure.`);
  }
  const notes = [...systemsNotes.entries()].map(([name, note]) => `- ${name}: ${note}`);
  if (notes.length) {
    text.push('\nSystems:', ...notes);
    md.push('\n**Systems**\n', ...notes);
  }
  return { text: text.join('\n'), markdown: md.join('\n') };
}

function sysOrder(name: string): number {
  return ['floor', 'spool', 'plainjob', 'plainjob (10 ms poll)', 'bullmq'].indexOf(name);
}

// ---- targets ------------------------------------------------------------------------------------

interface TargetCheck {
  target: string;
  measured: string;
  status: 'met' | 'missed' | 'not measured';
}

function checkTargets(rows: Row[]): TargetCheck[] {
  const find = (workload: string, durability: Durability, system = 'spool', depth?: number) =>
    rows.find((r) => r.workload === workload && r.durability === durability && r.system === system && r.depth === depth);
  const out: TargetCheck[] = [];
  const ratioTarget = (target: string, row: Row | undefined, key: string, ok: (v: number) => boolean) => {
    const v = row?.ratio[key];
    const floor = row && find(row.workload, row.durability, 'floor', row.depth);
    out.push({
      target,
      measured: v === undefined ? '–' : `${ratioText(v)} floor (${fmt(row!.median[key])} vs ${fmt(floor?.median[key])} ${key})`,
      status: v === undefined ? 'not measured' : ok(v) ? 'met' : 'missed',
    });
  };
  ratioTarget('drain c8, normal: ≥ 0.75× floor', find('drain-c8', 'normal'), 'msg/s', (v) => v >= 0.75);
  ratioTarget('drain c8, full: ≥ 5× floor', find('drain-c8', 'full'), 'msg/s', (v) => v >= 5);
  ratioTarget('one-by-one send, normal: ≥ 0.7× floor', find('send', 'normal'), 'msg/s', (v) => v >= 0.7);
  ratioTarget('one-by-one send, full: ≥ 0.7× floor', find('send', 'full'), 'msg/s', (v) => v >= 0.7);
  const lat = find('latency', 'normal');
  for (const [key, limit] of [['p50', 0.3], ['p99', 2]] as const) {
    const v = lat?.median[key];
    out.push({ target: `latency ${key}, normal: ≤ ${limit} ms`, measured: v === undefined ? '–' : `${fmt(v)} ms`, status: v === undefined ? 'not measured' : v <= limit ? 'met' : 'missed' });
  }
  const rssRows = rows.filter((r) => r.workload === 'rss' && r.system === 'spool').sort((a, b) => a.depth! - b.depth!);
  const rssLow = rssRows.find((r) => r.depth === 10_000);
  const rssHigh = rssRows.at(-1);
  if (rssLow && rssHigh && rssHigh !== rssLow) {
    // Δ RSS (against the same process before opening) is compared: whole-process RSS varies by
    // a few MB from one fresh process to the next.
    const d = rssHigh.median['Δ RSS MB']! - rssLow.median['Δ RSS MB']!;
    const full = rssHigh.depth === 1_000_000;
    out.push({
      target: 'RSS with 1M pending: within 20 MB of 10k',
      measured: `Δ RSS ${fmt(d)} MB more at ${rssHigh.depth!.toLocaleString('en-US')} than at 10,000${full ? '' : ' (1M needs --big)'}`,
      status: full ? (d <= 20 ? 'met' : 'missed') : 'not measured',
    });
  } else out.push({ target: 'RSS with 1M pending: within 20 MB of 10k', measured: '–', status: 'not measured' });
  const claims = rows.filter((r) => r.workload === 'claim' && r.system === 'spool').sort((a, b) => a.depth! - b.depth!);
  const cLow = claims.find((r) => r.depth === 10_000);
  const cHigh = claims.at(-1);
  if (cLow && cHigh && cHigh !== cLow) {
    const r = cHigh.median['µs/msg']! / cLow.median['µs/msg']!;
    const full = cHigh.depth === 1_000_000;
    out.push({
      target: 'claim cost at 1M: ≤ 1.5× cost at 10k',
      measured: `${r.toFixed(2)}× (${fmt(cHigh.median['µs/msg'])} vs ${fmt(cLow.median['µs/msg'])} µs/msg at ${cHigh.depth!.toLocaleString('en-US')})${full ? '' : ' (1M needs --big)'}`,
      status: full ? (r <= 1.5 ? 'met' : 'missed') : 'not measured',
    });
  } else out.push({ target: 'claim cost at 1M: ≤ 1.5× cost at 10k', measured: '–', status: 'not measured' });
  const boot = rows.filter((r) => r.workload === 'boot' && r.system === 'spool').sort((a, b) => a.depth! - b.depth!).at(-1);
  out.push({
    target: 'boot with 1M rows: start() < 2 s',
    measured: boot ? `${fmt(boot.median['start ms'])} ms at ${boot.depth!.toLocaleString('en-US')} pending${boot.depth === 1_000_000 ? '' : ' (1M needs --big)'}` : '–',
    status: !boot || boot.depth !== 1_000_000 ? 'not measured' : boot.median['start ms']! < 2000 ? 'met' : 'missed',
  });
  return out;
}

// ---- children -----------------------------------------------------------------------------------

function runChild(spec: ChildSpec): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    // From a JS bundle, as an app runs (no loader in its RSS or boot time); profiles keep tsx,
    // because their summary attributes time per source file and a bundle is a single file.
    const entry = spec.mode === 'profile' ? ['--import', 'tsx', join(HERE, 'child.ts')] : [...NODE_CHILD_FLAGS, bundledEntry(join(HERE, 'child.ts'))];
    const child = spawn(process.execPath, ['--expose-gc', ...entry, JSON.stringify(spec)], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.once('error', reject);
    child.once('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('BENCH_RESULT '));
      if (code !== 0 || !line) return reject(new Error(`child ${spec.mode} exited with ${code}`));
      resolve(JSON.parse(line.slice('BENCH_RESULT '.length)) as ChildResult);
    });
  });
}

// ---- main ---------------------------------------------------------------------------------------

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
  --only LIST        send,concurrent,batch,drain (= drain-c1,drain-c8),latency,claim,rss,boot,check
  --systems LIST     floor,spool,plainjob,bullmq (bullmq only when redis-server is on the PATH)
  --durability LIST  normal,full (default both; workloads 1–5)
  --big              add 1M-deep runs to claim, rss and boot (default sizes: 10k and 100k)
  --batch B          sendBatch size and prefill chunk (default 1000)
  --dir PATH         where temp databases go (default the OS temp dir)
  --out PATH         results directory (default test/bench/results)
  --cpu-prof         profile the --only workloads (default system spool) in child processes,
                     over the measured section only; writes <out>/profiles/*.cpuprofile
  --prof-interval US sampling interval for --cpu-prof, µs (default 200)`;

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
  log(`Spool benchmark — ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}, SQLite ${machine.sqlite}, ${machine.os}`);
  log(`Temp files: ${machine.tempDir} (${machine.fileSystem}); fsync ${machine.fsyncUs} µs. ${machine.diskNote}.`);
  log(`N = ${o.n.toLocaleString('en-US')}${o.fullN === o.n ? '' : ` (${o.fullN.toLocaleString('en-US')} under full)`}, ${o.reps} repetition(s), payload ${PAYLOAD_BYTES} bytes of JSON, load average ${machine.loadAverage.join(' ')}.`);

  let redis: RedisServer | undefined;
  const wantBull = o.systems.has('bullmq');
  const redisBinary = wantBull ? findRedis() : undefined;
  if (wantBull && !redisBinary) log('BullMQ skipped: no redis-server on the PATH.');
  try {
    if (redisBinary) {
      redis = await startRedis(redisBinary);
      log(`BullMQ: ${redis.version.split(' ').slice(0, 3).join(' ')} on 127.0.0.1:${redis.port} (pid ${redis.pid}), --save '' --appendonly no.`);
    }
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
    const quick: WorkloadName[] = (['send', 'concurrent', 'batch', 'drain-c1', 'drain-c8', 'latency'] as const).filter((w) => o.only.has(w));

    // Workloads 1–5: repetition outermost, so every repetition has its own floor to compare with.
    for (let rep = 1; rep <= o.reps && quick.length; rep++) {
      for (const durability of o.durability) {
        for (const workload of quick) {
          const systems = workload === 'latency' ? latencySystems : base;
          const parts: string[] = [];
          for (const system of systems) {
            if (system.name === 'bullmq' && durability === 'full') continue;
            collectGarbage();
            try {
              const metrics = await runOne({ workload, system, durability, n: durability === 'full' ? o.fullN : o.n, batch: o.batch, ...(o.dir ? { base: o.dir } : {}) });
              record({ workload, system: system.name, durability, rep, metrics });
              parts.push(`${system.name} ${short(metrics)}`);
            } catch (error) {
              failures.push(`${workload} ${system.name} ${durability} rep ${rep}: ${(error as Error).message}`);
              parts.push(`${system.name} FAILED`);
            }
          }
          log(`rep ${rep}/${o.reps} ${durability.padEnd(6)} ${workload.padEnd(10)} ${parts.join(' | ')}`);
        }
      }
    }

    const templates = tempDir(o.dir, 'spool-bench-templates-');
    try {
      const depths = o.big ? [10_000, 100_000, 1_000_000] : [10_000, 100_000];
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

      if (o.only.has('claim')) {
        const claimSystems = base.filter((s) => s.name !== 'bullmq');
        const k = 5000;
        for (const depth of depths) {
          for (const system of claimSystems) await template(system, depth);
          for (let rep = 1; rep <= o.reps; rep++) {
            const parts: string[] = [];
            for (const system of claimSystems) {
              collectGarbage();
              try {
                const metrics = await runOne({ workload: 'claim', system, durability: 'normal', n: o.n, batch: o.batch, template: templateOf.get(`${system.name}-${depth}`)!, depth, claimDrain: Math.min(k, depth), ...(o.dir ? { base: o.dir } : {}) });
                record({ workload: 'claim', system: system.name, durability: 'normal', depth, rep, metrics });
                parts.push(`${system.name} ${short(metrics)}`);
              } catch (error) {
                failures.push(`claim ${system.name} depth ${depth} rep ${rep}: ${(error as Error).message}`);
              }
            }
            log(`rep ${rep}/${o.reps} claim depth ${depth.toLocaleString('en-US')}: ${parts.join(' | ')}`);
          }
        }
      }

      const deepSystems = (['floor', 'spool'] as const).filter((s) => o.systems.has(s));
      if (o.only.has('rss')) {
        for (const depth of depths) {
          for (const name of deepSystems) await template(build(name), depth);
          for (let rep = 1; rep <= o.reps; rep++) {
            const parts: string[] = [];
            for (const name of deepSystems) {
              try {
                const { metrics } = await runChild({ mode: 'rss', system: name, template: templateOf.get(`${name}-${depth}`)!, depth, ...(o.dir ? { base: o.dir } : {}) });
                record({ workload: 'rss', system: name, durability: 'normal', depth, rep, metrics });
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
        const depth = depths.at(-1)!;
        const inflight = 10_000;
        const bootPaths = new Map<string, string>();
        for (const name of deepSystems) {
          const pending = await template(build(name), depth);
          if (name === 'spool') {
            const path = join(templates.dir, `spool-boot-${depth}.db`);
            makeBootTemplate(pending, path, inflight, await realInflightShape(o.dir));
            bootPaths.set(name, path);
          } else bootPaths.set(name, pending);
        }
        for (let rep = 1; rep <= o.reps; rep++) {
          const parts: string[] = [];
          for (const name of deepSystems) {
            try {
              const { metrics } = await runChild({ mode: 'boot', system: name, template: bootPaths.get(name)!, depth, inflight, ...(o.dir ? { base: o.dir } : {}) });
              record({ workload: 'boot', system: name, durability: 'normal', depth, rep, metrics });
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

    let check: SpoolCheck | undefined;
    if (o.only.has('check') && o.systems.has('spool')) {
      check = await verifySpool(o.n, 'normal', o.dir);
    }

    const rows = summarise();
    const tables = renderTables(o, rows, notes);
    // Targets with nothing measured in this run (a narrowed run) are left out.
    const targets = o.systems.has('spool') ? checkTargets(rows).filter((t) => t.measured !== '–') : [];
    const checkText = check ? renderCheck(check) : undefined;
    const elapsed = (now() - started) / 1000;
    log(tables.text);
    if (targets.length) {
      log('\nSpool targets (issue #6):');
      for (const t of targets) log(`  [${t.status === 'met' ? 'met' : t.status === 'missed' ? 'MISSED' : 'n/a'}] ${t.target}: ${t.measured}`);
    }
    if (checkText) log(`\n${checkText}`);
    if (failures.length) log(`\nFailures:\n${failures.map((f) => `  ${f}`).join('\n')}`);
    log(`\nTook ${elapsed.toFixed(0)} s.`);

    mkdirSync(o.out, { recursive: true });
    // A filtered run must not replace the last complete table.
    const stem = o.partial ? 'partial' : 'latest';
    const settings = { n: o.n, fullN: o.fullN, reps: o.reps, batch: o.batch, big: o.big, payloadBytes: PAYLOAD_BYTES, workloads: [...o.only], systems: [...o.systems], durability: o.durability, redis: redis ? redis.version : null };
    writeFileSync(join(o.out, `${stem}.json`), JSON.stringify({ takenAt: new Date().toISOString(), elapsedSeconds: Math.round(elapsed), machine, settings, rows, samples, targets, check: check ?? null, failures }, null, 2) + '\n');
    writeFileSync(join(o.out, `${stem}.md`), renderMarkdown(machine, settings, tables.markdown, targets, checkText, elapsed));
    log(`Results: ${relative(process.cwd(), join(o.out, `${stem}.md`))}, ${relative(process.cwd(), join(o.out, `${stem}.json`))}`);
    if (failures.length || (check && !check.ok)) process.exitCode = 1;
  } finally {
    await redis?.stop();
  }
}

function renderCheck(c: SpoolCheck): string {
  const t = c.transitions;
  return [
    `Spool check (${c.ok ? 'PASSED' : 'FAILED'}): drain of ${c.n.toLocaleString('en-US')} at concurrency 8, ${c.durability}, with inspection and events on (untimed)`,
    `  message actors started ${c.actorsStarted.toLocaleString('en-US')}, reached final state ${c.actorsDone.toLocaleString('en-US')}`,
    `  message.state → pending ${t.pending ?? 0}, → activating ${t.activating ?? 0}, → processing ${t.processing ?? 0}, → done ${t.done ?? 0}`,
    `  snapshots in the db: ${c.pendingSnapshotsBefore.toLocaleString('en-US')} pending rows with $.value = pending before start; ${c.sampled} in-flight rows read inside handlers, ${c.sampleMismatches} wrong (state, $.value, attempt, deliveries, lease token); ${c.rowsAfter} rows after the drain`,
  ].join('\n');
}

function renderMarkdown(machine: MachineInfo, settings: Record<string, unknown>, tables: string, targets: TargetCheck[], check: string | undefined, elapsed: number): string {
  const lines = [
    '# Spool benchmark results',
    '',
    `Taken ${new Date().toISOString()} with \`npm run bench\` (${elapsed.toFixed(0)} s).`,
    '',
    `- Machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGb} GB, ${machine.os}; load average at start ${machine.loadAverage.join(' ')}`,
    `- Node ${machine.node}, SQLite ${machine.sqlite} (better-sqlite3)`,
    `- Disk: temp files in ${machine.tempDir}, ${machine.fileSystem}; 4 KiB write+fdatasync ${machine.fsyncUs} µs. ${machine.diskNote}.`,
    `- Settings: ${JSON.stringify(settings)}`,
    tables,
  ];
  if (targets.length) {
    lines.push('\n### Spool targets (issue #6)\n', '| target | measured | status |', '| --- | --- | --- |', ...targets.map((t) => `| ${t.target} | ${t.measured} | ${t.status} |`));
  }
  if (check) lines.push('\n### Spool check\n', '```', check, '```');
  if (failures.length) lines.push('\n### Failures\n', ...failures.map((f) => `- ${f}`));
  return lines.join('\n') + '\n';
}

/** --cpu-prof: each selected workload in its own child, profiled over the measured section only. */
async function profiles(o: Options, redis: RedisServer | undefined) {
  const out = join(o.out, 'profiles');
  const systems = o.systemsGiven ? [...o.systems].filter((s) => s !== 'bullmq' || redis) : ['spool'];
  const workloads = (['send', 'concurrent', 'batch', 'drain-c1', 'drain-c8', 'latency'] as const).filter((w) => o.only.has(w));
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
