/**
 * What the crash child, the loop and the checker agree on: file names in a run directory, the
 * shape of each log line, the workload's config, a seeded PRNG and the payload hash.
 *
 * Every log is JSON lines appended with O_APPEND + fs.writeSync, one write per line, so a SIGKILL
 * can lose at most the line being written (readers skip a torn last line).
 */
import { createHash } from 'node:crypto';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

/** File names inside a run directory. */
export const FILES = {
  db: 'spool.db',
  /** Intent before each send, ack after it resolves, reject if it rejects. */
  sends: 'sends.log',
  /** Handler start/end lines. */
  handled: 'handled.log',
  /** Committed events seen on events$ (settles, recoveries, stale settles, errors). */
  events: 'events.log',
  /** One line per child process: how it was started and how it ended (written by the parent). */
  runs: 'runs.log',
  /** Store checks after each child exit (integrity, I7, I8), written by the parent. */
  checks: 'checks.log',
  /** Handler starts of the schedule's tick messages. */
  ticks: 'ticks.log',
} as const;

/** Paths of the files of a run directory. */
export function filesIn(dir: string): Record<keyof typeof FILES, string> {
  return Object.fromEntries(Object.entries(FILES).map(([k, v]) => [k, join(dir, v)])) as Record<keyof typeof FILES, string>;
}

/** What a message's payload tells its handler to do. */
export type Kind = 'ok' | 'poison' | 'flaky' | 'slow';

/** A workload payload. `key` is unique per run directory and links logs to rows. */
export interface Payload {
  key: string;
  kind: Kind;
  /** flaky: throw while attempt ≤ failTimes. */
  failTimes: number;
  /** Handler work, ms (slow: longer than the queue's timeout on attempt 1). */
  workMs: number;
  text: string;
  num: number;
  nested: { list: (number | string | boolean | null)[]; flag: boolean };
}

/** sends.log lines. */
export type SendLine =
  | { r: number; t: 'i'; key: string; q: string; h: string; kind: Kind; far: boolean }
  | { r: number; t: 'a'; key: string; id: string }
  | { r: number; t: 'x'; key: string; code: string; msg: string };

/** handled.log lines: phase s(tart) / e(nd); o = outcome of the attempt as the handler saw it. */
export interface HandledLine {
  r: number;
  p: 's' | 'e';
  id: string;
  key: string;
  a: number;
  d: number;
  h?: string;
  o?: 'ok' | 'throw';
}

/** events.log lines. `rec`: a boot-recovery transition, not a settle by a handler of this run. */
export type EventLine =
  | { r: number; e: 'state'; id: string; from: string | null; to: string; a: number; rec: boolean }
  | { r: number; e: 'stale'; id: string; a: number }
  | { r: number; e: 'recovered'; pending: number; dead: number }
  | { r: number; e: 'error'; code: string; msg: string };

/** ticks.log lines: a tick message's handler started (id, the tick it was sent for). */
export interface TickLine {
  r: number;
  id: string;
  at: number;
}

/** runs.log lines. */
export interface RunLine {
  r: number;
  mode: string;
  seed: number;
  crashPoint: string | null;
  killAfterMs: number | null;
  code: number | null;
  signal: string | null;
  /** The parent's SIGKILL ended it (as opposed to a crash point or its own exit). */
  killedByParent: boolean;
  ms: number;
}

/** checks.log lines. */
export interface CheckLine {
  r: number;
  integrity: string;
  /** Rows whose state column disagrees with their snapshot (I8). */
  i8: string[];
  /** done/dead events whose row the database does not show in that state (I7). */
  i7: string[];
}

/**
 * The schedule every child upserts (the same spec each time, so the anchor and cursor stay): a tick
 * every second into its own queue, missed ticks backfilled, so that across any kills every tick
 * from the first to the last is sent exactly once (I9).
 */
export const TICKS = { schedule: 'heartbeat', queue: 'tick', everyMs: 1000 } as const;

/** Queues of the workload: two share the default pool, two have their own executor. */
export const QUEUES = ['email', 'audit', 'image', 'report'] as const;
/** The report queue's handler timeout, ms: slow messages overrun it on attempt 1. */
export const REPORT_TIMEOUT_MS = 100;
/** How far a far-delayed message is delayed: it must still be pending (delayed) after the drain. */
export const FAR_DELAY_MS = 3_600_000;
/** Max attempts per message (poison messages reach dead after this many). */
export const MAX_ATTEMPTS = 5;

/**
 * The spool config of every child. `keepDone` keeps done rows as history instead of deleting them.
 * `stall` (handlers that never settle) drops the report queue's timeout: it would put a stalled
 * row back to pending after 100 ms, so a slow child could reach its Nth handler start with fewer
 * than N rows in flight.
 */
export function workloadConfig(keepDone: boolean, stall = false) {
  return {
    executor: { concurrency: 4 },
    processor: { pollIntervalMs: 100, batchSize: 50 },
    queueDefaults: {
      maxAttempts: MAX_ATTEMPTS,
      backoff: { type: 'fixed', delayMs: 10, maxDelayMs: 10, jitter: false },
      // High on purpose: a rapid kill loop can catch one message in flight many times, and
      // CRASH_LOOP is covered elsewhere. Here a dead letter must mean a poison message.
      maxCrashes: 1_000_000,
    },
    queues: {
      image: { executor: { concurrency: 3 } },
      report: { executor: { concurrency: 2 }, ...(stall ? {} : { timeoutMs: REPORT_TIMEOUT_MS }) },
    },
    retention: { doneMs: keepDone ? 86_400_000 : 0 },
    // Frequent sweeps, so kills also land in retention deletes, incremental vacuum and checkpoints.
    maintenance: { intervalMs: 300 },
  };
}

// The seeded PRNG is a shared test helper; the harness's modules import it from here.
export { between, createRng } from '../../helpers/random.js';

/** Hash of a payload's serialised bytes (what send() stored and what the handler must see). */
export function payloadHash(json: string): string {
  return createHash('sha1').update(json, 'utf8').digest('base64url');
}

/** Parses a JSON-lines file. A line cut by SIGKILL mid-write is skipped and counted in `torn`. */
export function readLines<T>(path: string, torn?: { count: number }): T[] {
  if (!existsSync(path)) return [];
  const out: T[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line === '') continue;
    try {
      out.push(JSON.parse(line) as T);
    } catch {
      if (torn) torn.count += 1;
    }
  }
  return out;
}
