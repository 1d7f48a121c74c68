/**
 * The sqs tier: every workload of workloads.ts against each system, each system's server in a
 * child process of its own (the clients run here), medians over repetitions.
 *
 *   node --import tsx test/bench/sqs/run.ts [--systems stub,wire,fauxqs,spool] [--n 10000] [--raw-n 20000]
 *                                           [--latency-n 1000] [--clients 8] [--reps 3] [--out file.json]
 */
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { fmt, median } from '../common.js';
import type { SqsSystem } from './servers.js';
import { measureSqs, SQS_SYSTEMS, type SqsFigures } from './tier.js';

const { values } = parseArgs({
  options: {
    systems: { type: 'string', default: SQS_SYSTEMS.join(',') },
    n: { type: 'string', default: '10000' },
    'raw-n': { type: 'string', default: '20000' },
    'latency-n': { type: 'string', default: '1000' },
    clients: { type: 'string', default: '8' },
    reps: { type: 'string', default: '3' },
    out: { type: 'string' },
  },
});
const systems = String(values.systems).split(',') as SqsSystem[];
const n = Number(values.n);
const rawN = Number(values['raw-n']);
const latencyN = Number(values['latency-n']);
const clients = Number(values.clients);
const reps = Number(values.reps);

async function main(): Promise<void> {
  const runs: Record<string, SqsFigures[]> = {};
  for (let rep = 0; rep < reps; rep++) {
    // Each repetition starts with another system, so a change in machine load does not favour one.
    for (const system of [...systems.slice(rep % systems.length), ...systems.slice(0, rep % systems.length)]) {
      const figures = await measureSqs(system, rep, { n, rawN, latencyN, clients });
      (runs[system] ??= []).push(figures);
      console.error(`rep ${rep + 1}/${reps} ${system}: ${JSON.stringify(Object.fromEntries(Object.entries(figures).map(([k, v]) => [k, Number(v.toFixed(3))])))}`);
    }
  }
  const med = (system: string, key: keyof SqsFigures) => median((runs[system] ?? []).map((f) => f[key]));
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const lines = [
    `sqs tier — ${cpus().length} × ${cpu}, Node ${process.version}; medians of ${reps}; N = ${n} (raw ${rawN}), ${clients} clients, latency over ${latencyN} pairs`,
    '',
    `| workload | ${systems.join(' | ')} |`,
    `|---|${systems.map(() => '---:').join('|')}|`,
    `| SDK SendMessageBatch of 10, ${clients} clients (msg/s) | ${systems.map((s) => fmt(med(s, 'sendBatch'))).join(' | ')} |`,
    `| SDK ReceiveMessage 10 + DeleteMessageBatch, ${clients} clients (msg/s) | ${systems.map((s) => fmt(med(s, 'drain'))).join(' | ')} |`,
    `| SDK receive → delete latency p50 / p99 (ms) | ${systems.map((s) => `${fmt(med(s, 'latencyP50'))} / ${fmt(med(s, 'latencyP99'))}`).join(' | ')} |`,
    `| raw keep-alive Receive 10 + DeleteBatch, ${clients} sockets (pairs/s) | ${systems.map((s) => fmt(med(s, 'rawPairs'))).join(' | ')} |`,
    `| server CPU per message, SDK drain / raw pairs (µs) | ${systems.map((s) => `${fmt(med(s, 'drainCpuUs'))} / ${fmt(med(s, 'rawCpuUs'))}`).join(' | ')} |`,
  ];
  console.log(lines.join('\n'));
  if (values.out) writeFileSync(values.out, `${JSON.stringify({ systems, n, rawN, latencyN, clients, reps, cpu, node: process.version, runs }, null, 2)}\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
