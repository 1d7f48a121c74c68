/**
 * One repetition of the sqs tier against one system: every workload of workloads.ts, the server
 * in a child process of its own (the clients run in this process), with the server's CPU per
 * message. Used by `npm run bench:sqs` (sqs/run.ts) and by `npm run bench` (its `sqs` part).
 */
import { startServer, type SqsSystem } from './servers.js';
import { createQueue, createRawClient, drain, latency, preload, rawPairs, sendBatch } from './workloads.js';

/** The systems, in the order tables show them: the stub and wire ceilings, the peer, Spool. */
export const SQS_SYSTEMS: readonly SqsSystem[] = ['stub', 'wire', 'fauxqs', 'spool'];

/** Sizes of one repetition. */
export interface SqsTierOptions {
  /** Messages of the SDK send and drain workloads. */
  n: number;
  /** Messages drained by the raw pairs workload. */
  rawN: number;
  /** Timed receive → delete pairs. */
  latencyN: number;
  /** Concurrent clients (SDK clients or raw sockets). */
  clients: number;
  /** Parent folder of the server's temp files. */
  dir?: string;
}

/** What one repetition measured. */
export interface SqsFigures {
  sendBatch: number;
  drain: number;
  latencyP50: number;
  latencyP99: number;
  rawPairs: number;
  rawMsg: number;
  /** Server CPU per message drained, µs: SDK drain and raw pairs. */
  drainCpuUs: number;
  rawCpuUs: number;
}

/** Runs every sqs workload once against `system`; `rep` keeps queue names apart. */
export async function measureSqs(system: SqsSystem, rep: number, o: SqsTierOptions): Promise<SqsFigures> {
  const server = await startServer(system, o.dir);
  const raw = createRawClient(server.endpoint, o.clients);
  try {
    const sendUrl = await createQueue(server.endpoint, `send-${rep}`);
    const send = await sendBatch(server.endpoint, sendUrl, o.n, o.clients);

    const drainUrl = await createQueue(server.endpoint, `drain-${rep}`);
    await preload(raw, drainUrl, o.n);
    let cpu = await server.cpu();
    const drained = await drain(server.endpoint, drainUrl, o.n, o.clients);
    const drainCpuUs = ((await server.cpu()) - cpu) / o.n;

    const latencyUrl = await createQueue(server.endpoint, `latency-${rep}`);
    await preload(raw, latencyUrl, o.latencyN + 60);
    const lat = await latency(server.endpoint, latencyUrl, o.latencyN);

    const rawUrl = await createQueue(server.endpoint, `raw-${rep}`);
    await preload(raw, rawUrl, o.rawN);
    cpu = await server.cpu();
    const pairs = await rawPairs(raw, rawUrl, o.rawN, o.clients);
    const rawCpuUs = ((await server.cpu()) - cpu) / o.rawN;

    return {
      sendBatch: send.msgPerSec,
      drain: drained.msgPerSec,
      latencyP50: lat.p50,
      latencyP99: lat.p99,
      rawPairs: pairs.pairsPerSec,
      rawMsg: pairs.msgPerSec,
      drainCpuUs,
      rawCpuUs,
    };
  } finally {
    raw.close();
    await server.stop();
  }
}

/** One repetition's figures as the main bench's samples: workload name → metrics. */
export function sqsSamples(f: SqsFigures): [workload: string, metrics: Record<string, number>][] {
  return [
    ['sqs-send-batch', { 'msg/s': f.sendBatch }],
    ['sqs-drain', { 'msg/s': f.drain, 'server µs/msg': f.drainCpuUs }],
    ['sqs-latency', { p50: f.latencyP50, p99: f.latencyP99 }],
    ['sqs-raw', { 'pairs/s': f.rawPairs, 'msg/s': f.rawMsg, 'server µs/msg': f.rawCpuUs }],
  ];
}
