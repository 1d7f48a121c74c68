/** Runs the built `spool` command (node bin/spool.mjs, which runs dist/) as a child process. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { ROOT } from './build.js';

/** What one run of the command did. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Generous: CI machines are slow, and some tests run several at once. */
export const CLI_TIMEOUT_MS = 25_000;

/**
 * Runs `node bin/spool.mjs ...args` from the project root with stdout and stderr piped. With
 * `tty`, runs it under util-linux `script`, so stdin, stdout and stderr are one pseudo-terminal:
 * everything it writes then arrives (with CRLF line ends) in `stdout`. With `closeStdout`, the
 * read end of its stdout is closed before it writes anything. With `stdin`, those bytes are its
 * standard input (else it has none).
 */
export function runBin(args: string[], options: { tty?: boolean; closeStdout?: boolean; stdin?: Buffer } = {}): Promise<CliRun> {
  const env = { ...process.env };
  delete env.SPOOL_CRASH_POINT;
  const argv = [process.execPath, 'bin/spool.mjs', ...args];
  const [command, commandArgs] = options.tty
    ? ['script', ['--quiet', '--return', '--flush', '--command', argv.map(shellQuote).join(' '), '/dev/null']]
    : [argv[0]!, argv.slice(1)];
  return new Promise((resolve, reject) => {
    const child = spawn(command, commandArgs as string[], { cwd: ROOT, env, stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'], timeout: CLI_TIMEOUT_MS });
    if (options.stdin) {
      // A command that refuses before reading leaves the pipe unread: not this helper's failure.
      child.stdin!.on('error', () => {});
      child.stdin!.end(options.stdin);
    }
    let stdout = '';
    let stderr = '';
    // A reader that went away at once (`spool … | head -c 0`): the command's writes meet EPIPE.
    if (options.closeStdout) child.stdout!.destroy();
    else child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function shellQuote(arg: string): string {
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

/** A digest of a database file and its WAL, to show that a command changed neither. */
export function fileDigest(path: string): string {
  const hash = createHash('sha256');
  for (const file of [path, `${path}-wal`]) hash.update(existsSync(file) ? readFileSync(file) : 'absent').update('\0');
  return hash.digest('hex');
}

/** A long-running `spool` command (e.g. serve): its stdout lines as they come, stderr, and its exit. */
export interface RunningBin {
  readonly process: ChildProcess;
  /** Resolves with the first stdout line (past or future) matching `match`; rejects if the command exits first. */
  line(match: RegExp): Promise<string>;
  /** Everything written to stderr so far. */
  readonly stderr: string;
  /** Resolves once the command has exited and its output is read. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `node bin/spool.mjs ...args` from the project root and leaves it running (killed after CLI_TIMEOUT_MS). */
export function startBin(args: string[]): RunningBin {
  const env = { ...process.env };
  delete env.SPOOL_CRASH_POINT;
  const child = spawn(process.execPath, ['bin/spool.mjs', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], timeout: CLI_TIMEOUT_MS });
  const lines: string[] = [];
  let stderr = '';
  let waiters: { match: RegExp; resolve: (line: string) => void }[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    waiters = waiters.filter((w) => (w.match.test(line) ? (w.resolve(line), false) : true));
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  return {
    process: child,
    get stderr() {
      return stderr;
    },
    exited,
    line(match) {
      const found = lines.find((l) => match.test(l));
      if (found !== undefined) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const waiter = { match, resolve };
        waiters.push(waiter);
        void exited.then(({ code, signal }) => {
          if (waiters.includes(waiter)) reject(new Error(`spool ${args[0]} exited (code ${code}, signal ${signal}) before a line matching ${match}; stderr:\n${stderr}`));
        });
      });
    },
  };
}
