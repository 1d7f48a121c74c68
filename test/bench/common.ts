/** Shared pieces of the benchmark: payloads, temp files, timing, statistics. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** How commits reach the disk, as Spool names it; every system is set up to match. */
export type Durability = 'normal' | 'full';

/** The payload every system carries: ~100 bytes of JSON, `i` identifies it for latency. */
export interface Payload {
  i: number;
  user: string;
  kind: string;
  body: string;
}

const BODY = 'lorem ipsum dolor sit amet';

/** The i-th benchmark payload (about 100 bytes once serialised). */
export function payload(i: number): Payload {
  return { i, user: `user-${String(i).padStart(8, '0')}@example.com`, kind: 'bench.event', body: BODY };
}

/** Serialised size of a typical payload, for the report. */
export const PAYLOAD_BYTES = JSON.stringify(payload(123_456)).length;

/** The i..i+n-th payloads. */
export function payloads(from: number, n: number): Payload[] {
  const out: Payload[] = new Array(n);
  for (let k = 0; k < n; k++) out[k] = payload(from + k);
  return out;
}

/** A fresh directory for one run; `cleanup()` removes it with every file in it. */
export function tempDir(base: string | undefined, prefix = 'spool-bench-'): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(base ?? tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Monotonic milliseconds. */
export const now = (): number => performance.now();

/**
 * Milliseconds on the system-wide monotonic clock (CLOCK_MONOTONIC, via hrtime): comparable between
 * processes of one machine. `performance.timeOrigin + performance.now()` is not: each process fixes
 * its origin from the wall clock at start, so a wall clock that is slewed or stepped meanwhile (on
 * this VM, seconds over a bench run) shows up as a constant offset between a parent and its child.
 */
export const systemNow = (): number => Number(process.hrtime.bigint()) / 1e6;

let gcFn: (() => void) | undefined;

/**
 * A full GC between runs, so one system's garbage is not collected on the next one's clock.
 * `npm run bench` cannot pass --expose-gc, so the flag is turned on at run time.
 */
export function collectGarbage(): void {
  if (!gcFn) {
    const g = (globalThis as { gc?: () => void }).gc;
    if (g) gcFn = g;
    else {
      setFlagsFromString('--expose-gc');
      gcFn = runInNewContext('gc') as () => void;
    }
  }
  gcFn();
  gcFn();
}

/** The median of a non-empty list. */
export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The p-th percentile (0..100, nearest rank) of a non-empty list. */
export function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  const rank = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[rank]!;
}

/** A promise and its resolver. */
export function deferred<T = void>(): { promise: Promise<T>; resolve(value: T): void; reject(error: unknown): void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Resolves after `ms` (the bench paces sends with it; never used to wait for an outcome). */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Formats a number for a table: 3 significant digits, thousands separated. */
export function fmt(value: number | undefined | null): string {
  if (value === undefined || value === null || !Number.isFinite(value)) return '–';
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toFixed(3);
}
