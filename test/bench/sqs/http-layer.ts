/**
 * How much an HTTP framework costs the SQS endpoint: the same handler work (read the body, parse
 * its JSON, dispatch on X-Amz-Target, serialise a canned ReceiveMessage reply of 10 messages) on
 * bare node:http, fastify and Hono (@hono/node-server), each in a process of its own, driven by
 * the raw keep-alive client. The rule from issue 13: a framework is welcome if it costs < 10%.
 *
 *   node --import tsx test/bench/sqs/http-layer.ts [--requests 20000] [--sockets 8] [--reps 3]
 */
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { fmt, median, now } from '../common.js';
import { BENCH_BODY, BENCH_MD5, ENTRY_IDS } from './canned.js';
import { createRawClient } from './raw-client.js';

type Layer = 'node:http' | 'fastify' | 'hono';
const LAYERS: Layer[] = ['node:http', 'fastify', 'hono'];

/** The shared handler work: parse, dispatch, serialise. */
function work(target: string, body: string): string {
  const input = JSON.parse(body) as { QueueUrl?: string };
  if (target !== 'AmazonSQS.ReceiveMessage' || typeof input.QueueUrl !== 'string') return JSON.stringify({ __type: 'com.amazonaws.sqs#InvalidAction' });
  return JSON.stringify({ Messages: ENTRY_IDS.map((i) => ({ MessageId: `m-${i}`, ReceiptHandle: `r-${i}`, MD5OfBody: BENCH_MD5, Body: BENCH_BODY })) });
}
const HEADERS = { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'bench' };

async function serve(layer: Layer): Promise<number> {
  if (layer === 'node:http') {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const out = Buffer.from(work(String(req.headers['x-amz-target']), Buffer.concat(chunks).toString('utf8')));
        res.writeHead(200, { ...HEADERS, 'content-length': out.length }).end(out);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  }
  if (layer === 'fastify') {
    const { default: Fastify } = await import('fastify');
    const app = Fastify({ logger: false });
    app.addContentTypeParser('application/x-amz-json-1.0', { parseAs: 'string' }, (_req, body, done) => done(null, body));
    app.post('/*', async (request, reply) => {
      reply.headers(HEADERS);
      return reply.send(work(String(request.headers['x-amz-target']), request.body as string));
    });
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    return Number(new URL(address).port);
  }
  const { Hono } = await import('hono');
  const { serve: serveHono } = await import('@hono/node-server');
  const app = new Hono();
  app.post('*', async (c) => c.body(work(c.req.header('x-amz-target') ?? '', await c.req.text()), 200, HEADERS));
  return new Promise((resolve) => {
    serveHono({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info) => resolve(info.port));
  });
}

/** The child's CPU time so far (user + system), in µs, asked over IPC. */
function cpuOf(child: ReturnType<typeof fork>): Promise<number> {
  return new Promise((resolve) => {
    child.once('message', (m) => {
      const { user, system } = (m as { cpu: NodeJS.CpuUsage }).cpu;
      resolve(user + system);
    });
    child.send('cpu');
  });
}

async function measure(layer: Layer, requests: number, sockets: number): Promise<{ rate: number; cpuUs: number }> {
  const child = fork(fileURLToPath(import.meta.url), ['serve', layer], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve) => child.once('message', (m) => resolve((m as { port: number }).port)));
  const raw = createRawClient(`http://127.0.0.1:${port}`, sockets);
  const body = { QueueUrl: 'http://127.0.0.1/000000000000/bench', MaxNumberOfMessages: 10 };
  try {
    for (let k = 0; k < 2000; k++) await raw.call('ReceiveMessage', body); // warm-up, untimed
    let sent = 0;
    const cpuBefore = await cpuOf(child);
    const start = now();
    await Promise.all(
      Array.from({ length: sockets }, async () => {
        while (sent < requests) {
          sent++;
          await raw.call('ReceiveMessage', body);
        }
      }),
    );
    const elapsed = now() - start;
    const cpuUs = (await cpuOf(child)) - cpuBefore;
    return { rate: requests / (elapsed / 1000), cpuUs: cpuUs / requests };
  } finally {
    raw.close();
    child.kill('SIGTERM');
    await exited;
  }
}

async function main(): Promise<void> {
  if (process.argv[2] === 'serve') {
    const port = await serve(process.argv[3] as Layer);
    process.send?.({ port });
    process.on('message', (m) => {
      if (m === 'cpu') process.send?.({ cpu: process.cpuUsage() });
    });
    process.once('SIGTERM', () => process.exit(0));
    return;
  }
  const { values } = parseArgs({ options: { requests: { type: 'string', default: '20000' }, sockets: { type: 'string', default: '8' }, reps: { type: 'string', default: '3' } } });
  const requests = Number(values.requests);
  const sockets = Number(values.sockets);
  const reps = Number(values.reps);
  const runs: Record<Layer, { rate: number; cpuUs: number }[]> = { 'node:http': [], fastify: [], hono: [] };
  for (let rep = 0; rep < reps; rep++) {
    // Each repetition starts with another layer, so a change in machine load does not favour one.
    for (const layer of [...LAYERS.slice(rep % LAYERS.length), ...LAYERS.slice(0, rep % LAYERS.length)]) {
      const figures = await measure(layer, requests, sockets);
      runs[layer].push(figures);
      console.error(`rep ${rep + 1}/${reps} ${layer}: ${fmt(figures.rate)} req/s, server CPU ${fmt(figures.cpuUs)} µs/request`);
    }
  }
  const rate = (layer: Layer) => median(runs[layer].map((f) => f.rate));
  const cpu = (layer: Layer) => median(runs[layer].map((f) => f.cpuUs));
  // Server CPU per request is the figure to decide on: wall-clock rates on a shared 2-core machine
  // move with whatever else runs, and the client costs as much CPU as the server here.
  console.log(`HTTP layer: ${requests} ReceiveMessage-shaped requests over ${sockets} keep-alive sockets, medians of ${reps}\n`);
  console.log('| layer | server CPU µs/request | cost vs node:http | req/s (wall clock) |\n|---|---:|---:|---:|');
  for (const layer of LAYERS) {
    const cost = layer === 'node:http' ? '—' : `${((cpu(layer) / cpu('node:http') - 1) * 100).toFixed(1)}%`;
    console.log(`| ${layer} | ${fmt(cpu(layer))} | ${cost} | ${fmt(rate(layer))} |`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
