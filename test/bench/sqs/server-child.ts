/**
 * One SQS server in a process of its own, so that its CPU is not the client's:
 * `node --import tsx test/bench/sqs/server-child.ts <stub|wire|fauxqs|spool> [dir]`, forked with IPC.
 * `wire` is createSqsServer over a zero-work backend: the wire layer's own cost.
 * It sends `{ port }` once listening and exits cleanly on 'stop' (or SIGTERM).
 */
import { join } from 'node:path';
import { startStubServer } from './stub-server.js';

type Stop = () => Promise<void>;

async function startFauxqs(): Promise<{ port: number; stop: Stop }> {
  const { buildApp } = await import('fauxqs');
  // fauxqs' own startFauxqs listens on 0.0.0.0; the bench keeps every server on 127.0.0.1.
  const app = buildApp({ logger: false });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  return { port: Number(new URL(address).port), stop: () => app.close() };
}

async function startSpool(dir: string): Promise<{ port: number; stop: Stop }> {
  const { createSpool } = await import('../../../src/index.js');
  const { createSqsServer } = await import('../../../src/sqs/server.js');
  const spool = createSpool({ path: join(dir, 'spool.db') });
  await spool.start();
  const sqs = createSqsServer(spool, { port: 0 });
  const { port } = await sqs.listen();
  return {
    port,
    stop: async () => {
      await sqs.close();
      await spool.close();
    },
  };
}

async function main(): Promise<void> {
  const [system, dir] = process.argv.slice(2);
  let started: { port: number; stop: Stop };
  if (system === 'stub') {
    const { server, port } = await startStubServer();
    started = {
      port,
      stop: () =>
        new Promise((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    };
  } else if (system === 'fauxqs') started = await startFauxqs();
  else if (system === 'spool') started = await startSpool(dir ?? process.cwd());
  else if (system === 'wire') {
    const { createZeroBackend } = await import('./zero-backend.js');
    const { createSqsServer } = await import('../../../src/sqs/server.js');
    const sqs = createSqsServer(createZeroBackend(), { port: 0 });
    const { port } = await sqs.listen();
    started = { port, stop: () => sqs.close() };
  }
  else throw new Error(`unknown system ${system}`);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await started.stop();
    process.disconnect?.();
  };
  process.on('message', (message) => {
    if (message === 'stop') void stop();
    if (message === 'cpu') process.send?.({ cpu: process.cpuUsage() });
  });
  process.once('SIGTERM', () => void stop());
  process.send?.({ port: started.port });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
