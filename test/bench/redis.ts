/** A throwaway redis-server for BullMQ: 127.0.0.1, a free port, no persistence, stopped by PID. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createConnection, createServer } from 'node:net';
import { sleep } from './common.js';

/** A running redis-server. */
export interface RedisServer {
  port: number;
  pid: number;
  version: string;
  stop(): Promise<void>;
}

/** The redis-server on the PATH, or undefined when there is none. */
export function findRedis(): string | undefined {
  const found = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  const path = found.stdout.trim();
  return found.status === 0 && path ? path : undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Starts redis-server; rejects if it does not accept connections within 10 s. */
export async function startRedis(binary: string): Promise<RedisServer> {
  const port = await freePort();
  const version = spawnSync(binary, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const child: ChildProcess = spawn(
    binary,
    ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no', '--protected-mode', 'yes', '--loglevel', 'warning'],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 10_000;
  // Polling the port is the only readiness signal redis-server gives without a config file.
  while (!(await canConnect(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`redis-server did not start on port ${port}`);
    }
    await sleep(20);
  }
  return {
    port,
    pid: child.pid!,
    version,
    async stop() {
      if (child.exitCode === null) process.kill(child.pid!, 'SIGTERM');
      await exited;
    },
  };
}
