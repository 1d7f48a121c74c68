/** A throwaway redis-server for BullMQ: 127.0.0.1, a free port, no persistence, stopped by PID. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { sleep } from './common.js';

/** A running redis-server. */
export interface RedisServer {
  port: number;
  pid: number;
  version: string;
  stop(): Promise<void>;
}

/** Where redis-server is looked for when it is not on the PATH (Debian's package, a local build, Homebrew). */
export const REDIS_LOCATIONS = ['/usr/bin/redis-server', '/usr/sbin/redis-server', '/usr/local/bin/redis-server', '/opt/homebrew/bin/redis-server'];

/** How to get redis-server, for the results when it is missing. */
export const REDIS_INSTALL = 'apt-get install -y redis-server';

/** The redis-server on the PATH or in one of REDIS_LOCATIONS, or undefined when there is none. */
export function findRedis(): string | undefined {
  const found = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  const path = found.stdout.trim();
  if (found.status === 0 && path) return path;
  return REDIS_LOCATIONS.find((p) => existsSync(p));
}

/** A redis-server someone else runs on 127.0.0.1:`port` (--redis-port); never stopped by the bench. */
export async function existingRedis(port: number): Promise<RedisServer> {
  if (!(await canConnect(port))) throw new Error(`no redis-server accepts connections on 127.0.0.1:${port}`);
  return { port, pid: 0, version: `redis on 127.0.0.1:${port} (not started by the bench)`, async stop() {} };
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
