/** How a run is shown: a table per workload (printed and in markdown), the targets, the check. */
import { fmt } from './common.js';
import type { BtreeBytes } from './disk.js';
import type { MachineInfo } from './machine.js';
import type { Row } from './results.js';
import { ratioText, targetLine, TARGET_DEPTH, type TargetCheck } from './targets.js';
import type { SpoolCheck } from './verify.js';
import { CLAIM_CONCURRENCY, CONCURRENT_SENDS, LATENCY } from './workloads.js';

/** What the tables need to know about the run. */
export interface ReportOptions {
  n: number;
  fullN: number;
  batch: number;
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

const SQS_NOTE =
  "Each server runs in a child process of its own, the clients in the bench process. stub: canned replies (the client's ceiling); wire: Spool's SQS handler over a zero-work backend (the HTTP layer's cost); fauxqs 1.9.2: in-memory SQS emulator; spool: `spool serve`'s server on a SQLite file, durability normal.";
const SPOOL_SETTING = 'Spool: start()ed at open with the queue paused, an events$ counter attached.';

function tableSpecs(o: ReportOptions): TableSpec[] {
  const n = o.fullN === o.n ? o.n.toLocaleString('en-US') : `${o.n.toLocaleString('en-US')}; ${o.fullN.toLocaleString('en-US')} under full`;
  const tput = [{ key: 'msg/s', label: 'msg/s' }];
  return [
    { workload: 'send', title: `1. One-by-one send(), each awaited (${n} messages)`, metrics: tput, ratios: ['msg/s'], better: 'higher', note: `No consumer. ${SPOOL_SETTING}` },
    { workload: 'concurrent', title: `2. Concurrent send(), ${CONCURRENT_SENDS.toLocaleString('en-US')} in flight (${n} messages)`, metrics: tput, ratios: ['msg/s'], better: 'higher', note: `A sliding window: 1,000 lanes, each awaiting its send before the next. plainjob's add() and the floor's insert are synchronous, so for them this equals one-by-one. ${SPOOL_SETTING}` },
    { workload: 'batch', title: `3. sendBatch, ${o.batch.toLocaleString('en-US')} per batch (${n} messages)`, metrics: tput, ratios: ['msg/s'], better: 'higher', note: `Floor: one transaction of single-row INSERTs per batch; plainjob: addMany; BullMQ: addBulk. ${SPOOL_SETTING}` },
    {
      workload: 'drain-c1',
      title: `4a. Drain ${n} pending, concurrency 1`,
      metrics: tput,
      ratios: ['msg/s'],
      better: 'higher',
      note: 'Sent before the consumer starts; timed from consume() to the last completion stored. Spool: consume() registers the handler and un-pauses the queue with settings.update; the end is the N-th message.state → done event, announced after its commit (rows deleted). plainjob: every job status done, rows kept.',
    },
    { workload: 'drain-c8', title: `4b. Drain ${n} pending, concurrency 8`, metrics: tput, ratios: ['msg/s'], better: 'higher', note: 'As 4a with 8 handlers at once.' },
    {
      workload: 'drain-c8-ratelimit',
      title: `4c. Drain ${n} pending, concurrency 8, under a rate limit far above the drain rate`,
      metrics: tput,
      ratios: ['msg/s'],
      better: 'higher',
      note: 'As 4b, with queues.bench.rateLimit = { max: 1,000,000, perMs: 1,000 } in Spool\'s config layer: every start is counted and none is held back, so the difference to 4b is the limiter\'s cost. The floor has no limiter and runs 4b again, as the ratio\'s baseline; plainjob and BullMQ are not run.',
    },
    {
      workload: 'drain-c8-nohistory',
      title: `4d. Drain ${n} pending, concurrency 8, message history off`,
      metrics: tput,
      ratios: ['msg/s'],
      better: 'higher',
      note: 'As 4b, with history.enabled = false in Spool\'s config layer. 4b runs with the defaults as they ship (history on), so 4b against 4d is the history\'s cost. The floor has no history and runs 4b again, as the ratio\'s baseline; plainjob and BullMQ are not run.',
    },
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
      note: `After ${LATENCY.warmup} untimed warm-up sends. Consumer concurrency ${LATENCY.concurrency} (plainjob: one worker, its default). Spool's queue was resumed by settings.update before the warm-up.`,
    },
    {
      workload: 'pull-c8',
      title: `5b. Pull: ${n} pending drained by 8 owner-mode consumers (Spool only)`,
      metrics: tput,
      ratios: [],
      better: 'higher',
      note: "Each consumer loops on wait(queue, { timeoutMs: 0 }), which ends the message it owns and takes the next in one commit, on a queue that queues.create made (push handlers leave it alone). The target compares it with 4b's Spool figure of the same repetition.",
    },
    {
      workload: 'receive-10',
      title: `5c. SQS shape: ${n} pending drained by 8 receivers, receive({ max: 10 }) then deleteMessage each (Spool only)`,
      metrics: tput,
      ratios: [],
      better: 'higher',
      note: 'Deletes are sent concurrently and share group commits. The target compares it with 4b.',
    },
    {
      workload: 'sqs-send-batch',
      title: `9a. SQS endpoint: ${n} messages by SendMessageBatch of 10 from 8 AWS SDK clients over HTTP`,
      metrics: tput,
      ratios: [],
      better: 'higher',
      note: `${SQS_NOTE}`,
    },
    {
      workload: 'sqs-drain',
      title: `9b. SQS endpoint: ${n} preloaded messages drained by 8 AWS SDK clients, ReceiveMessage 10 + DeleteMessageBatch`,
      metrics: [...tput, { key: 'server µs/msg', label: 'server CPU µs/msg' }],
      ratios: [],
      better: 'higher',
      note: `The SDK client's own CPU caps this on 2 cores: the stub shows that cap. ${SQS_NOTE}`,
    },
    {
      workload: 'sqs-latency',
      title: '9c. SQS endpoint: ReceiveMessage 1 → DeleteMessage by one SDK client, 1,000 timed pairs (ms)',
      metrics: [
        { key: 'p50', label: 'p50 ms' },
        { key: 'p99', label: 'p99 ms' },
      ],
      ratios: [],
      better: 'lower',
      note: SQS_NOTE,
    },
    {
      workload: 'sqs-raw',
      title: `9d. SQS endpoint's own capacity: Receive 10 + DeleteBatch pairs over 8 keep-alive sockets, raw JSON (no SDK)`,
      metrics: [{ key: 'pairs/s', label: 'pairs/s' }, ...tput, { key: 'server µs/msg', label: 'server CPU µs/msg' }],
      ratios: [],
      better: 'higher',
      note: `A light client, so the server is the limit. ${SQS_NOTE}`,
    },
    {
      workload: 'wake',
      title: '5d. Pull wake-up across processes: one process sends, a consumer process waits (Spool only)',
      metrics: [
        { key: 'p50 ms', label: 'p50 ms' },
        { key: 'p99 ms', label: 'p99 ms' },
        { key: 'max ms', label: 'max ms' },
        { key: 'quiet queries/poll', label: 'idle stmts/poll (quiet)' },
        { key: 'busy queries/poll', label: 'idle stmts/poll (other queue busy)' },
        { key: 'busy counter reads/s', label: 'counter reads/s (other queue busy)' },
      ],
      ratios: [],
      better: 'lower',
      note: 'Latency from just before send() in the producer to the line after wait() resolved in the consumer (file watch, 2 ms debounce, arrivals check, lease). Idle statements: counted at better-sqlite3 in the consumer while it waits on a queue that gets nothing, with a 100 ms poll interval, first on a quiet file, then while the producer sends to another queue every 10 ms; the lease attempts at the start and end of the wait are taken out.',
    },
    {
      workload: 'claim-groups',
      title: '7b. Claim cost with message groups of 100 messages each (depth ÷ 100 groups), against no groups',
      metrics: [
        { key: 'µs/msg', label: 'µs/msg' },
        { key: 'first ms', label: 'consume→1st handler ms' },
      ],
      ratios: [],
      better: 'lower',
      note: 'As 7, on two Spool files of the same depth: spool-groups sent each group with one sendBatch, so only each group\'s head is claimable at a time.',
    },
    {
      workload: 'rss',
      title: '6a. Memory with N pending (fresh process per system and size, after GC, 4 handlers blocked)',
      metrics: [
        { key: 'RSS MB', label: 'RSS MB' },
        { key: 'Δ RSS MB', label: 'Δ RSS MB (vs before open)' },
        { key: 'heap MB', label: 'heap used MB' },
      ],
      ratios: ['RSS MB'],
      better: 'lower',
      note: `Each child runs bundled plain JS and loads only the system it measures, as an application would. RSS of the whole process, read after a full GC while 4 handlers hold messages and the rest wait; Δ is against the same process just before opening the queue (its modules already loaded). The ${TARGET_DEPTH.toLocaleString('en-US')} target (Spool ≤ plainjob) compares whole-process RSS; the 1M target compares Δ, which does not vary with process start-up.`,
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
      note: 'Spool: createSpool() + start() (open, migrate check, owner lock, recovery of every in-flight row) on a copy of a file a real spool left by SIGKILL with that many handlers running; → 1st handler adds register + settings.update (un-pause). Floor: open + UPDATE jobs SET claimed=0 WHERE claimed=1.',
    },
    {
      workload: 'claim',
      title: `7. Claim cost by queue depth (concurrency ${CLAIM_CONCURRENCY}, normal)`,
      metrics: [
        { key: 'µs/msg', label: 'µs/msg' },
        { key: 'first ms', label: 'consume→1st handler ms' },
      ],
      ratios: ['µs/msg'],
      better: 'lower',
      note: 'µs/msg: wall time per message from the first handler start to the completion of the first K messages stored (claims, handler, settle: the per-message cost at that depth). consume→1st handler: Spool is already started (paused) on the copied file; this is register + settings.update to the first handler (the first claim transaction). Floor and plainjob: their consumer start to the first handler.',
    },
    {
      workload: 'disk',
      title: `8. Disk per pending message (${TARGET_DEPTH.toLocaleString('en-US')} pending, ~100-byte payloads)`,
      metrics: [
        { key: 'B/msg', label: 'bytes/msg' },
        { key: 'MB', label: 'file+WAL MB' },
        { key: 'free MB', label: 'free pages MB' },
      ],
      ratios: ['B/msg'],
      better: 'lower',
      note: `A fresh database filled by sendBatch of ${o.batch.toLocaleString('en-US')} (plainjob: addMany), nothing consumed; closed, then PRAGMA wal_checkpoint(TRUNCATE) from a new connection, and the database file plus its WAL measured (free pages included). Spool's .lock sidecar (a few KB, constant) is not counted.`,
    },
  ];
}

function sysOrder(name: string): number {
  return ['floor', 'spool', 'plainjob', 'plainjob (10 ms poll)', 'bullmq', 'stub', 'wire', 'fauxqs'].indexOf(name);
}

/** The tables of every workload the run measured, printed and as markdown. */
export function renderTables(o: ReportOptions, rows: Row[], systemsNotes: Map<string, string>, btrees: Map<string, BtreeBytes[]>): { text: string; markdown: string } {
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
    md.push(
      `\n### ${spec.title}\n`,
      `| ${head.join(' | ')} |`,
      `|${head.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`,
      ...body.map((b) => `| ${b.join(' | ')} |`),
      '',
      `${spec.note} ${spec.better === 'higher' ? 'Higher' : 'Lower'} is better; ratios are medians of per-repetition ratios to the floor; "reps" lists each repetition's first figure.`,
    );
    if (spec.workload === 'disk' && btrees.size) {
      const where = [...btrees.entries()].map(([system, list]) => `- ${system}: ${list.map((b) => `${b.name} ${fmt(b.bytes / 2 ** 20)} MB`).join(', ')}`);
      text.push('  Bytes by B-tree (dbstat, first repetition):', ...where.map((w) => `  ${w}`));
      md.push('\nBytes by B-tree (dbstat, first repetition):\n', ...where);
    }
  }
  const notes = [...systemsNotes.entries()].map(([name, note]) => `- ${name}: ${note}`);
  if (notes.length) {
    text.push('\nSystems:', ...notes);
    md.push('\n**Systems**\n', ...notes);
  }
  return { text: text.join('\n'), markdown: md.join('\n') };
}

/** The heading of the targets section: what the figures are and where they were taken. */
export function targetsHeading(machine: MachineInfo, reps: number): string {
  return `Targets (issue #10): medians of ${reps} repetition(s), ratios per repetition, on ${machine.cpu}, ${machine.cores} cores; load average ${machine.loadAverage.join(' ')} at start, ${machine.loadAverageEnd?.join(' ') ?? '–'} at the end`;
}

/** The targets, printed. */
export function renderTargetsText(machine: MachineInfo, reps: number, targets: TargetCheck[]): string {
  const met = targets.filter((t) => t.status === 'met').length;
  const missed = targets.filter((t) => t.status === 'missed').length;
  return [`${targetsHeading(machine, reps)}:`, ...targets.map((t) => `  ${targetLine(t)}`), `  ${met} met, ${missed} missed, ${targets.length - met - missed} not measured.`].join('\n');
}

/** The Spool check, printed and in the markdown. */
export function renderCheck(c: SpoolCheck): string {
  const t = c.transitions;
  return [
    `Spool check (${c.ok ? 'PASSED' : 'FAILED'}): ${c.n.toLocaleString('en-US')} one-by-one sends to a started spool (queue paused), then a drain at concurrency 8 resumed by settings.update, ${c.durability}, with inspection and events$ on (untimed)`,
    `  message actors started ${c.actorsStarted.toLocaleString('en-US')}, reached final state ${c.actorsDone.toLocaleString('en-US')}`,
    `  message.state → pending ${t.pending ?? 0}, → activating ${t.activating ?? 0}, → processing ${t.processing ?? 0}, → done ${t.done ?? 0}`,
    `  snapshots in the db: ${c.pendingSnapshotsBefore.toLocaleString('en-US')} pending rows with $.value = pending before the resume; ${c.sampled} in-flight rows read inside handlers, ${c.sampleMismatches} wrong (state, $.value, attempt, deliveries, lease token); ${c.rowsAfter} rows after the drain; ${c.badIds} ids not decimal strings`,
  ].join('\n');
}

/** latest.md / partial.md. */
export function renderMarkdown(args: {
  machine: MachineInfo;
  settings: Record<string, unknown>;
  reps: number;
  tables: string;
  targets: TargetCheck[];
  check: string | undefined;
  bullmq: string;
  failures: string[];
  elapsed: number;
}): string {
  const { machine } = args;
  const lines = [
    '# Spool benchmark results',
    '',
    `Taken ${new Date().toISOString()} with \`npm run bench\` (${args.elapsed.toFixed(0)} s).`,
    '',
    `- CPU: ${machine.cpu}, ${machine.cores} cores; ${machine.memoryGb} GB; ${machine.os}`,
    `- Load average: ${machine.loadAverage.join(' ')} at the start, ${machine.loadAverageEnd?.join(' ') ?? '–'} at the end (1, 5, 15 min)`,
    `- Node ${machine.node}, SQLite ${machine.sqlite} (better-sqlite3)`,
    `- Disk: temp files in ${machine.tempDir}, ${machine.fileSystem}; 4 KiB write+fdatasync ${machine.fsyncUs} µs. ${machine.diskNote}.`,
    `- BullMQ: ${args.bullmq}`,
    `- Settings: ${JSON.stringify(args.settings)}`,
  ];
  if (args.targets.length) {
    lines.push(
      `\n### ${targetsHeading(machine, args.reps)}\n`,
      '| target | measured | status |',
      '| --- | --- | --- |',
      ...args.targets.map((t) => `| ${t.target} | ${t.measured} | ${t.status} |`),
    );
  }
  lines.push(args.tables);
  if (args.check) lines.push('\n### Spool check\n', '```', args.check, '```');
  if (args.failures.length) lines.push('\n### Failures\n', ...args.failures.map((f) => `- ${f}`));
  return lines.join('\n') + '\n';
}
