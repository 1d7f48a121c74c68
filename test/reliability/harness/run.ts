/**
 * The kill loop: start a crash child on a run directory, SIGKILL it at a seeded random moment,
 * check the store, restart, K times; then drain with a clean child and run the checker.
 *
 * A seed fixes the kill schedule (every delay), every child's payload seed and which runs keep
 * done rows; what the children manage to do before each kill still depends on timing.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundledEntry, NODE_CHILD_FLAGS } from '../../helpers/bundle.js';
import type { ChildOptions } from './child.js';
import { check, checkAfterExit, readEventsSince, type CheckResult } from './checker.js';
import { between, createRng, filesIn, type CheckLine, type RunLine } from './protocol.js';

const CHILD = join(dirname(fileURLToPath(import.meta.url)), 'child.ts');

/** How a child ended. */
export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  killedByParent: boolean;
  ms: number;
  stdout: string;
  stderr: string;
}

/** A fresh run directory under the OS temp dir. */
export function createRunDir(prefix = 'spool-crash-'): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Runs one child to its end. `killAfterMs` sends SIGKILL that long after the child reports it
 * booted (its modules loaded, before the spool opens), so the schedule does not drift with how
 * long module loading takes on a loaded machine;
 * `crashPoint` sets SPOOL_CRASH_POINT (otherwise it is removed from the child's environment);
 * `timeoutMs` kills a child that outlives it (reported as killedByParent with no killAfterMs).
 */
export function runChild(
  options: ChildOptions,
  control: { killAfterMs?: number; crashPoint?: string; timeoutMs?: number } = {},
): Promise<ChildExit> {
  const env = { ...process.env };
  delete env.SPOOL_CRASH_POINT;
  if (control.crashPoint) env.SPOOL_CRASH_POINT = control.crashPoint;
  const started = performance.now();
  // From its JS bundle, not through tsx: a kill loop starts hundreds of children.
  const child = spawn(process.execPath, [...NODE_CHILD_FLAGS, bundledEntry(CHILD), JSON.stringify(options)], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let killedByParent = false;
  const kill = () => {
    killedByParent = true;
    child.kill('SIGKILL');
  };
  const timers = [setTimeout(kill, control.timeoutMs ?? 120_000)];
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    if (control.killAfterMs !== undefined && timers.length === 1 && (stdout + chunk).includes('child run=')) {
      timers.push(setTimeout(kill, control.killAfterMs));
    }
    stdout = (stdout + chunk).slice(-8000);
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-8000)));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      for (const t of timers) clearTimeout(t);
      resolve({ code, signal, killedByParent, ms: Math.round(performance.now() - started), stdout, stderr });
    });
  });
}

/** Remembers how far the parent has read events.log, so each exit checks only its own run. */
export function createRunRecorder(dir: string) {
  const files = filesIn(dir);
  let offset = 0;
  return {
    /** Logs the run's end to runs.log and checks the store (I6, I7, I8) right after it. */
    record(options: ChildOptions, exit: ChildExit, extra: { crashPoint?: string; killAfterMs?: number }): CheckLine {
      const line: RunLine = {
        r: options.run,
        mode: options.mode,
        seed: options.seed,
        crashPoint: extra.crashPoint ?? null,
        killAfterMs: extra.killAfterMs ?? null,
        code: exit.code,
        signal: exit.signal,
        killedByParent: exit.killedByParent,
        ms: exit.ms,
      };
      appendFileSync(files.runs, `${JSON.stringify(line)}\n`);
      const events = readEventsSince(files.events, offset);
      offset = events.offset;
      return checkAfterExit(dir, options.run, events.lines);
    },
  };
}

/** Options of the kill loop. */
export interface KillLoopOptions {
  dir: string;
  seed: number;
  kills: number;
  /** Messages each produce+consume child sends. */
  messages: number;
  /** Each kill lands uniformly in [min, max] ms after the child booted (see runChild). */
  killDelayMs: [number, number];
  /** Called after each run (progress output). */
  onRun?: (run: number, exit: ChildExit, check: CheckLine) => void;
}

/** Ends that are not the planned SIGKILL: a child that crashed or exited by itself. */
function unexpected(exit: ChildExit, expectKill: boolean): string | undefined {
  if (expectKill && exit.signal === 'SIGKILL') return undefined;
  if (!expectKill && exit.code === 0) return undefined;
  return `exit code=${exit.code} signal=${exit.signal} killedByParent=${exit.killedByParent}\n${exit.stderr || exit.stdout}`;
}

/** Runs the whole loop: K seeded kills, a clean drain, the checker. */
export async function runKillLoop(o: KillLoopOptions): Promise<CheckResult & { problems: string[] }> {
  const random = createRng(o.seed);
  const recorder = createRunRecorder(o.dir);
  const problems: string[] = [];
  for (let run = 0; run < o.kills; run++) {
    const killAfterMs = between(random, o.killDelayMs[0], o.killDelayMs[1]);
    const options: ChildOptions = {
      dir: o.dir,
      run,
      mode: 'produce+consume',
      seed: Math.floor(random() * 2 ** 31),
      messages: o.messages,
      keepDone: random() < 0.5,
    };
    const exit = await runChild(options, { killAfterMs });
    const checked = recorder.record(options, exit, { killAfterMs });
    const bad = unexpected(exit, true);
    if (bad) problems.push(`run ${run} (seed ${o.seed}): ${bad}`);
    o.onRun?.(run, exit, checked);
  }
  const drain = await drainAndCheck(o.dir, o.kills, Math.floor(random() * 2 ** 31), recorder);
  return { ...drain, problems: problems.concat(drain.problems) };
}

/** Drains with a clean child (no crash point), then checks the directory. */
export async function drainAndCheck(
  dir: string,
  run: number,
  seed: number,
  recorder = createRunRecorder(dir),
): Promise<CheckResult & { problems: string[] }> {
  const options: ChildOptions = { dir, run, mode: 'drain', seed, messages: 0, keepDone: true, maxLifeMs: 90_000 };
  const exit = await runChild(options, { timeoutMs: 100_000 });
  recorder.record(options, exit, {});
  const bad = unexpected(exit, false);
  const result = check(dir);
  return { ...result, problems: bad ? [`drain: ${bad}`] : [] };
}
