/**
 * Soak: `npm run soak -- --minutes 10`. Sends and handles at a fixed rate on one spool file, and
 * prints once per interval (a minute by default) the RSS, heap and send→handler-start latency
 * (p50/p99/max); at the end the RSS slope in MB/min after the warm-up (minute 2; half the run if
 * it is shorter than 4 minutes), fitted to the lowest RSS of each 10 s window so the GC sawtooth
 * does not pass for growth. Target: under 1 MB/min. Exits 1 if a message went missing.
 *
 * Options: --minutes M (fractional: --minutes 0.5), --rate msg/s (default 500), --interval s
 * (default 60, capped at the run length), --concurrency (default 8).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createSpool } from '../../src/index.js';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    rate: { type: 'string', default: '500' },
    interval: { type: 'string' },
    concurrency: { type: 'string', default: '8' },
  },
});

const minutes = Number(values.minutes);
const rate = Number(values.rate);
if (!(minutes > 0) || !(rate > 0)) {
  process.stderr.write('usage: soak.ts --minutes M [--rate N] [--interval S]\n');
  process.exit(2);
}
const totalMs = minutes * 60_000;
const intervalMs = Math.min(totalMs, Number(values.interval ?? 60) * 1000);
const warmupMs = totalMs >= 4 * 60_000 ? 2 * 60_000 : totalMs / 2;

const dir = mkdtempSync(join(tmpdir(), 'spool-soak-'));
const spool = createSpool({
  path: join(dir, 'spool.db'),
  config: { executor: { concurrency: Number(values.concurrency) }, processor: { pollIntervalMs: 1000, batchSize: 100 } },
});

interface SoakPayload {
  n: number;
  sentAt: number;
  pad: string;
}

let handled = 0;
let latencies: number[] = [];
spool.register('soak', async (message) => {
  const p = message.payload as SoakPayload;
  latencies.push(performance.now() - p.sentAt);
  handled += 1;
  // A little work, so the handler is not a no-op.
  if (JSON.stringify(p).length === 0) throw new Error('unreachable');
});

const mb = (bytes: number) => bytes / 1024 / 1024;
const quantile = (sorted: number[], q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : NaN);

/** Least-squares slope of y over x. */
function slope(points: { x: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return NaN;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.x - mx) * (p.y - my);
    den += (p.x - mx) ** 2;
  }
  return den === 0 ? NaN : num / den;
}

await spool.start();
const started = performance.now();
let sent = 0;
let failed = 0;
const samples: { x: number; y: number }[] = [];
process.stdout.write(`soak: ${minutes} min at ${rate} msg/s, report every ${intervalMs / 1000} s, db ${dir}\n`);

// Sends what the fixed rate owes by now, every 10 ms (drift-free: the target follows the clock).
const pad = 'x'.repeat(100);
await new Promise<void>((resolve) => {
  let nextReport = intervalMs;
  let index = 0;
  const sampler = setInterval(() => {
    samples.push({ x: (performance.now() - started) / 60_000, y: mb(process.memoryUsage().rss) });
  }, 1000);
  const tick = setInterval(() => {
    const elapsed = performance.now() - started;
    const owed = Math.min(Math.floor((rate * Math.min(elapsed, totalMs)) / 1000), Math.floor((rate * totalMs) / 1000));
    for (; sent < owed; sent++) {
      spool.send('soak', { n: sent, sentAt: performance.now(), pad } satisfies SoakPayload).catch(() => (failed += 1));
    }
    if (elapsed >= nextReport) {
      index += 1;
      const sorted = latencies.sort((a, b) => a - b);
      latencies = [];
      const mem = process.memoryUsage();
      process.stdout.write(
        `interval ${index} (${(elapsed / 60_000).toFixed(2)} min): rss=${mb(mem.rss).toFixed(1)} MB heap=${mb(mem.heapUsed).toFixed(1)} MB ` +
          `p50=${quantile(sorted, 0.5).toFixed(2)} ms p99=${quantile(sorted, 0.99).toFixed(2)} ms max=${(sorted.at(-1) ?? NaN).toFixed(2)} ms ` +
          `sent=${sent} handled=${handled}\n`,
      );
      nextReport += intervalMs;
    }
    if (elapsed >= totalMs) {
      clearInterval(tick);
      clearInterval(sampler);
      resolve();
    }
  }, 10);
});

// Let the tail finish, then account for every message.
const drainDeadline = performance.now() + 30_000;
while (handled + failed < sent && performance.now() < drainDeadline) await new Promise((r) => setTimeout(r, 20));
const stats = await spool.stats();
const q = stats.queues.soak ?? { pending: 0, activating: 0, processing: 0, dead: 0, done: 0 };
await spool.close();
rmSync(dir, { recursive: true, force: true });

const after = samples.filter((s) => s.x * 60_000 >= warmupMs);
// GC makes RSS a sawtooth; over a short window its phase alone can fake a slope. A leak lifts the
// floor, so the figure is the slope of each 10 s window's lowest RSS (the raw slope is printed too).
const floors: { x: number; y: number }[] = [];
for (let i = 0; i + 10 <= after.length; i += 10) {
  const window = after.slice(i, i + 10);
  floors.push(window.reduce((low, s) => (s.y < low.y ? s : low)));
}
const rssSlope = slope(floors);
const rawSlope = slope(after);
const lost = sent - failed - handled;
process.stdout.write(
  `soak summary: minutes=${minutes} rate=${rate}/s sent=${sent} handled=${handled} failedSends=${failed} lost=${lost} ` +
    `left=${q.pending + q.activating + q.processing} dead=${q.dead} ` +
    `rss=${after[0]?.y.toFixed(1)}→${after.at(-1)?.y.toFixed(1)} MB rssSlope=${rssSlope.toFixed(3)} MB/min ` +
    `(10 s floors after ${(warmupMs / 60_000).toFixed(2)} min; raw ${rawSlope.toFixed(3)}; target < 1: ${rssSlope < 1 ? 'met' : 'NOT met'})\n`,
);
process.exit(lost === 0 && failed === 0 ? 0 : 1);
