/** Child processes for lock and crash tests: a TypeScript script run from its JS bundle, read line by line. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { bundledEntry, NODE_CHILD_FLAGS } from './bundle.js';

/** The repository root: the children's working directory whatever the test's cwd. */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A running child: its stdout lines, waits on them, and its exit. */
export interface Child {
  readonly process: ChildProcess;
  /** Every stdout line so far. */
  readonly lines: string[];
  /** Resolves with the first line (past or future) matching `match`; rejects if the child exits first. */
  line(match: string | RegExp | ((line: string) => boolean), timeoutMs?: number): Promise<string>;
  /** Resolves with the exit code and signal once the child has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILLs the child (if still running) and waits for its exit. */
  kill(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts the TypeScript `script` (bundled to plain JS, see bundle.ts) with `args` and extra environment variables. */
export function spawnChild(script: string, args: string[], env: Record<string, string> = {}): Child {
  const child = spawn(process.execPath, [...NODE_CHILD_FLAGS, bundledEntry(script), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  let waiters: { test: (line: string) => boolean; resolve: (line: string) => void }[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(line);
    waiters = waiters.filter((w) => (w.test(line) ? (w.resolve(line), false) : true));
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  let exitedNow = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    // 'close', not 'exit': stdout and stderr are fully read by then, so no line or message is missed.
    child.on('close', (code, signal) => {
      exitedNow = true;
      resolve({ code, signal });
    });
  });
  const toTest = (match: string | RegExp | ((line: string) => boolean)) =>
    typeof match === 'function' ? match : typeof match === 'string' ? (l: string) => l === match : (l: string) => match.test(l);

  return {
    process: child,
    lines,
    line(match, timeoutMs = 20_000) {
      const test = toTest(match);
      const found = lines.find(test);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`No line matching ${String(match)} within ${timeoutMs} ms; stderr:\n${stderr}`)), timeoutMs);
        const waiter = {
          test,
          resolve: (l: string) => {
            clearTimeout(timer);
            resolve(l);
          },
        };
        waiters.push(waiter);
        void exited.then(({ code, signal }) => {
          if (!waiters.includes(waiter)) return;
          clearTimeout(timer);
          reject(new Error(`The child exited (code ${code}, signal ${signal}) before a line matching ${String(match)}; stderr:\n${stderr}`));
        });
      });
    },
    exited,
    kill() {
      if (!exitedNow) child.kill('SIGKILL');
      return exited;
    },
  };
}
