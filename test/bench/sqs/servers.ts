/** Starts each SQS system under test in a child process and stops it again. */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../common.js';

/** The systems of the sqs tier (`wire`: the SQS handler over a zero-work backend). */
export type SqsSystem = 'stub' | 'fauxqs' | 'spool' | 'wire';

/** A running server child. */
export interface RunningServer {
  system: SqsSystem;
  endpoint: string;
  /** The server process's CPU time so far (user + system), in µs. */
  cpu(): Promise<number>;
  stop(): Promise<void>;
}

const CHILD = fileURLToPath(new URL('./server-child.ts', import.meta.url));

/** Forks `server-child.ts` for `system` and waits until it listens on 127.0.0.1. */
export async function startServer(system: SqsSystem, baseDir?: string): Promise<RunningServer> {
  const dir = tempDir(baseDir, 'spool-bench-sqs-');
  // SPOOL_BENCH_SERVER_PROF=<dir> writes a V8 CPU profile of each server child there.
  const prof = process.env.SPOOL_BENCH_SERVER_PROF;
  const execArgv = ['--import', 'tsx', ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [])];
  const child = fork(CHILD, [system, dir.dir], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message) => resolve((message as { port: number }).port));
    child.once('exit', (code) => reject(new Error(`${system} server exited with code ${String(code)} before listening`)));
  });
  return {
    system,
    endpoint: `http://127.0.0.1:${port}`,
    cpu: () =>
      new Promise((resolve) => {
        child.once('message', (message) => {
          const { user, system: sys } = (message as { cpu: NodeJS.CpuUsage }).cpu;
          resolve(user + sys);
        });
        child.send('cpu');
      }),
    async stop() {
      child.send('stop');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
      dir.cleanup();
    },
  };
}
