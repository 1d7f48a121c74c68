/**
 * Maintenance, from the main thread: the sweep's schedule (`maintenance.intervalMs`), `sweep()`,
 * and the maintenance worker (maintenance-worker.ts) that does the work on a thread of its own:
 * sweeps, and the WAL checkpoints that SQLite would otherwise run inside some commit.
 *
 * The worker starts on first need, not with every spool: at the first sweep, or once the spool
 * has committed CHECKPOINT_AFTER_COMMITS times (until then SQLite's own automatic checkpoint runs,
 * and a small, short-lived spool never pays for a thread). From the worker's start, the owner's
 * connection stops checkpointing by itself. If the worker cannot start or dies, checkpoints go
 * back to SQLite's automatic ones and sweeps run in this thread (the same code, sweep.ts).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Clock, TimerHandle } from '../clock.js';
import type { DbHandle } from '../db/client.js';
import type { RemovedRow } from '../db/removal.js';
import type { Repository } from '../db/repository.js';
import { messageOf, SpoolError, type SpoolErrorCode } from '../errors.js';
import type { EventBus } from '../events.js';
import type { SettingsRuntime } from '../settings/store.js';
import { toStorageError } from './committer.js';
import type { FromWorker, MaintenanceWorkerData, ToWorker } from './maintenance-worker.js';
import { runSweep, type SweepPlan, type SweepResult } from './sweep.js';
import { newWriteLockBuffer, ownerWriteLock, type CommitGuard } from './write-lock.js';

/** Commits after which a started spool hands its checkpoints to the worker. */
export const CHECKPOINT_AFTER_COMMITS = 200;
/**
 * WAL frames (pages) past which the worker drains the WAL (holds the write lock for a short
 * checkpoint pass), so that it restarts: 4,000 pages is 16 MiB, four times SQLite's own automatic
 * checkpoint.
 */
export const WAL_DRAIN_FRAMES = 4000;
/** The longest the owner's commits wait for the worker's write lock; past it they go on, to SQLite's own lock. */
export const WRITE_LOCK_WAIT_MAX_MS = 250;
/**
 * How long the owner goes without checkpoints of its own while the worker loads: past it, its
 * automatic checkpoint comes back until the worker is ready, so a worker that loads slowly (or
 * hangs) cannot leave the WAL to grow without bound.
 */
export const WORKER_LOAD_GRACE_MS = 5_000;

/** SQLite's own automatic checkpoint (its default, in WAL pages): the owner's, whenever no worker checkpoints. */
const OWNER_AUTOCHECKPOINT_PAGES = 1000;

/** The sweep's handle. */
export interface Maintenance {
  /** Sweeps every `maintenance.intervalMs`; counts commits toward starting the worker. */
  start(): void;
  /** Stops the schedule; a sweep in progress finishes. */
  stop(): void;
  /** Stops, ends a sweep in progress with CLOSED, and ends the worker (the spool is closing). */
  close(): Promise<void>;
  /** One full sweep now. */
  sweep(): Promise<SweepResult>;
  /** A group commit landed (the owner's committer calls this). */
  committed(): void;
}

/** What maintenance needs from the owner's committer. */
export interface CommitGate {
  hold(): () => void;
  guard(guard: CommitGuard | undefined): void;
}

/** Node flags that load code into every thread before its entry. */
const PRELOAD_FLAGS = new Set(['--import', '--require', '-r', '--loader', '--experimental-loader']);

/** TypeScript loaders, by package name or by a path into one (tsx, ts-node, @swc-node/register, esbuild-register). */
const TYPESCRIPT_LOADER = /^(?:tsx|ts-node|@swc-node\/register|esbuild-register)(?:\/|$)|[\\/]node_modules[\\/](?:tsx|ts-node|@swc-node[\\/]register|esbuild-register)[\\/]/;

/**
 * The worker's Node flags: the parent's without TypeScript loaders, or undefined when it has none
 * (the worker then inherits the parent's flags, as Node does by default). The worker runs Spool's
 * compiled modules, or, from sources, registers tsx itself (workerEntry), so such a loader only
 * costs it time: under `node --import tsx` it reported ready in 175–218 ms instead of 86–93 ms.
 * Every other preload stays (an APM agent, Yarn PnP's resolution hooks, which the worker may need
 * to find better-sqlite3). NODE_OPTIONS reach every thread whatever this says.
 */
export function workerExecArgv(parent: readonly string[] = process.execArgv): string[] | undefined {
  const kept: string[] = [];
  for (let i = 0; i < parent.length; i++) {
    const flag = parent[i]!;
    const eq = flag.startsWith('--') ? flag.indexOf('=') : -1;
    if (!PRELOAD_FLAGS.has(eq > 0 ? flag.slice(0, eq) : flag)) kept.push(flag);
    else if (eq > 0) {
      if (!TYPESCRIPT_LOADER.test(flag.slice(eq + 1))) kept.push(flag);
    } else {
      const value = parent[++i];
      if (value !== undefined && !TYPESCRIPT_LOADER.test(value)) kept.push(flag, value);
    }
  }
  return kept.length === parent.length ? undefined : kept;
}

/**
 * Starts a worker thread on `entry` with workerExecArgv's flags. A Worker given its flags refuses
 * the process-wide ones (`--max-old-space-size`, `--title`: ERR_WORKER_INVALID_EXEC_ARGV), which
 * an inherited set may hold; then it starts with the inherited flags, TypeScript loader and all.
 */
export function startWorker(entry: URL, workerData: unknown, parent: readonly string[] = process.execArgv): Worker {
  const execArgv = workerExecArgv(parent);
  if (execArgv !== undefined) {
    try {
      return new Worker(entry, { workerData, execArgv });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw error;
    }
  }
  return new Worker(entry, { workerData });
}

/**
 * Where the worker's code is: compiled JavaScript beside this file (the package), or, when Spool
 * runs from its TypeScript sources (tests, benchmarks), the .ts file loaded through tsx, which a
 * worker does not inherit from its parent: a small ES module registers tsx, then imports it.
 */
function workerEntry(): URL {
  if (!import.meta.url.endsWith('.ts')) return new URL('./maintenance-worker.js', import.meta.url);
  const require = createRequire(import.meta.url);
  const tsxRoot = dirname(require.resolve('tsx/package.json'));
  const exports = (JSON.parse(readFileSync(join(tsxRoot, 'package.json'), 'utf8')) as { exports: Record<string, { import: { default: string } }> }).exports;
  const api = pathToFileURL(join(tsxRoot, exports['./esm/api']!.import.default)).href;
  const target = new URL('./maintenance-worker.ts', import.meta.url).href;
  const boot = `import { register } from ${JSON.stringify(api)}; register(); await import(${JSON.stringify(target)});`;
  return new URL(`data:text/javascript,${encodeURIComponent(boot)}`);
}

/** Creates maintenance (stopped; no worker yet). */
export function createMaintenance(deps: {
  db: DbHandle;
  repo: Repository;
  clock: Clock;
  events: EventBus;
  settings: SettingsRuntime;
  /** The owner's committer, held while the WAL drains; absent for a spool that never started. */
  gate?: CommitGate;
  /** Told about every row a sweep deletes: finished and swept, or expired under a queue's retention. */
  removed?: (rows: RemovedRow[], reason: 'swept' | 'expired') => void;
  /** Queues whose messages expire, and after how long (retentionMs). */
  retentions?: () => { queue: string; retentionMs: number }[];
}): Maintenance {
  const { db, repo, clock, events, settings } = deps;
  let timer: TimerHandle | undefined;
  let running = false;
  let closed = false;
  let commits = 0;
  let sweeping: Promise<SweepResult> | undefined;
  let worker: Worker | undefined;
  let ready: Promise<boolean> | undefined;
  let nextId = 1;
  /** The write lock shared with the worker, and the owner's side of it (the committer's guard) once the worker is up. */
  const writeLock = newWriteLockBuffer();
  let ownerLock: ReturnType<typeof ownerWriteLock> | undefined;
  let loadGuard: TimerHandle | undefined;
  let lostSaid = false;
  /** Sweeps waiting on the worker (see holdOpen). */
  let sweepsWaiting = 0;
  const autoCheckpoint = (pages: number) => {
    if (db.sqlite.open && !closed) db.sqlite.pragma(`wal_autocheckpoint = ${pages}`);
  };
  const endLoadGuard = () => {
    if (loadGuard !== undefined) clock.clearTimeout(loadGuard);
    loadGuard = undefined;
  };
  const waiting = new Map<number, { resolve(result: SweepResult): void; reject(error: SpoolError): void }>();

  /** Starts the worker once; resolves false if it could not (then this thread does the work). */
  function ensureWorker(): Promise<boolean> {
    ready ??= new Promise<boolean>((resolve) => {
      try {
        const data: MaintenanceWorkerData = {
          path: db.path,
          durability: db.durability,
          identity: db.identity,
          drainFrames: deps.gate ? WAL_DRAIN_FRAMES : 0,
          writeLock,
        };
        const w = startWorker(workerEntry(), data);
        worker = w;
        // The owner's side goes on before the worker can hold the lock (its first pass may drain).
        if (deps.gate && !closed) {
          const gate = deps.gate;
          ownerLock = ownerWriteLock(writeLock, () => gate.hold(), WRITE_LOCK_WAIT_MAX_MS);
          gate.guard(ownerLock);
        }
        // Checkpoints stop in the owner's commits now, not at 'ready': the worker takes about 100
        // ms to load here (more on a busy machine), and in that window SQLite's automatic
        // checkpoint (1,000 pages) stalled the commit that ran it for 15-25 ms. The WAL grows
        // meanwhile, and the worker's first pass copies it off this thread. If the worker fails,
        // 'exit' turns them back on, and so does WORKER_LOAD_GRACE_MS without 'ready'.
        autoCheckpoint(0);
        loadGuard = clock.setTimeout(() => {
          loadGuard = undefined;
          autoCheckpoint(OWNER_AUTOCHECKPOINT_PAGES);
        }, WORKER_LOAD_GRACE_MS);
        w.on('message', (message: FromWorker) => onMessage(message, resolve));
        w.on('error', (error) => {
          events.emit({ type: 'error', code: 'STORAGE_ERROR', message: `The maintenance worker failed: ${messageOf(error)}`, at: clock.now() });
          resolve(false);
        });
        w.on('exit', () => {
          worker = undefined;
          endLoadGuard();
          releaseLock();
          // Back to SQLite's own checkpoints, and fail what the worker was doing.
          if (db.sqlite.open) db.sqlite.pragma(`wal_autocheckpoint = ${OWNER_AUTOCHECKPOINT_PAGES}`);
          for (const [id, p] of waiting) {
            waiting.delete(id);
            p.reject(new SpoolError(closed ? 'CLOSED' : 'STORAGE_ERROR', closed ? 'The spool closed during the maintenance sweep' : 'The maintenance worker stopped during a sweep'));
          }
          if (!closed) ready = undefined;
          resolve(false);
        });
        // After the listeners: a 'message' listener refs the worker's port again, and a producer
        // that swept once would then never exit on its own.
        holdOpen();
      } catch (error) {
        events.emit({ type: 'error', code: 'STORAGE_ERROR', message: `Could not start the maintenance worker: ${messageOf(error)}`, at: clock.now() });
        resolve(false);
      }
    });
    return ready;
  }

  function onMessage(message: FromWorker, ready: (ok: boolean) => void) {
    switch (message.t) {
      case 'ready':
        // The worker checkpoints from now on (the owner's commits stopped when it was made, or
        // again once the load outlasted WORKER_LOAD_GRACE_MS).
        endLoadGuard();
        autoCheckpoint(0);
        ready(true);
        return;
      case 'removed':
        deps.removed?.(message.rows as RemovedRow[], message.reason);
        return;
      case 'swept':
        waiting.get(message.id)?.resolve(message.result);
        waiting.delete(message.id);
        return;
      case 'failed':
        waiting.get(message.id)?.reject(new SpoolError(message.code as SpoolErrorCode, message.message));
        waiting.delete(message.id);
        return;
      case 'error':
        events.emit({ type: 'error', code: message.code, message: message.message, at: clock.now() });
    }
  }

  /** The worker is gone or going: the committer goes back to SQLite's lock alone, and a commit waiting on the worker goes on. */
  function releaseLock() {
    deps.gate?.guard(undefined);
    ownerLock?.dispose();
    ownerLock = undefined;
  }

  function plan(): SweepPlan {
    const { retention, history } = settings.get();
    const now = clock.now();
    // doneMs 0 deletes at completion; a row kept anyway (retention changed since) goes now.
    return {
      doneBefore: now - retention.doneMs + (retention.doneMs === 0 ? 1 : 0),
      deadBefore: retention.deadMs === null ? null : now - retention.deadMs,
      expire: (deps.retentions?.() ?? []).map(({ queue, retentionMs }) => ({ queue, before: now - retentionMs })),
      historyBefore: now - history.retentionMs,
      dedupeAt: now,
    };
  }

  async function sweepOnce(): Promise<SweepResult> {
    // A deleted or replaced file: nothing to sweep, and a worker started now would make a new
    // empty file at the path, which the next start would open as an empty spool.
    if (!db.intact()) throw new SpoolError('STORAGE_LOST', 'The database file was deleted or replaced while the spool ran; nothing is swept');
    const p = plan();
    sweepsWaiting += 1;
    holdOpen();
    try {
      const result = (await ensureWorker()) && worker ? await sweepInWorker(worker, p) : await sweepHere(p);
      events.emit({ type: 'maintenance.swept', ...result, at: clock.now() });
      return result;
    } finally {
      sweepsWaiting -= 1;
      holdOpen();
    }
  }

  /**
   * The worker keeps the process alive only while a sweep waits on it: an awaited `sweep()` must
   * finish, and an idle worker (checkpoints only) must not keep a producer's process from exiting.
   */
  function holdOpen() {
    if (sweepsWaiting > 0) worker?.ref();
    else worker?.unref();
  }

  function sweepInWorker(w: Worker, p: SweepPlan): Promise<SweepResult> {
    return new Promise((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, { resolve, reject });
      w.postMessage({ t: 'sweep', id, plan: p } satisfies ToWorker);
    });
  }

  function sweepHere(p: SweepPlan): Promise<SweepResult> {
    return runSweep(repo, db.sqlite, p, {
      async pause() {
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (closed) throw new SpoolError('CLOSED', 'The spool closed during the maintenance sweep');
      },
      removed: (rows, reason) => deps.removed?.(rows, reason),
      checkpointSteps: true,
    });
  }

  function schedule() {
    // A sweep still running from before a stop() and start() must not add a second chain.
    if (timer !== undefined) return;
    timer = clock.setTimeout(() => {
      timer = undefined;
      if (!running) return;
      sweep()
        .catch((error: SpoolError) => {
          // A lost file is said once, not at every interval.
          if (closed || (error.code === 'STORAGE_LOST' && lostSaid)) return;
          lostSaid ||= error.code === 'STORAGE_LOST';
          events.emit({ type: 'error', code: error.code, message: `Maintenance sweep failed: ${error.message}`, at: clock.now() });
        })
        .finally(() => {
          if (running) schedule();
        });
    }, settings.get().maintenance.intervalMs);
  }

  function sweep(): Promise<SweepResult> {
    if (closed) return Promise.reject(new SpoolError('CLOSED', 'The spool is closed'));
    sweeping ??= sweepOnce()
      .catch((error: unknown) => {
        throw closed ? new SpoolError('CLOSED', 'The spool closed during the maintenance sweep', { cause: error }) : toStorageError(error);
      })
      .finally(() => {
        sweeping = undefined;
      });
    return sweeping;
  }

  let fresh: Promise<SweepResult> | undefined;
  /**
   * `spool.sweep()`: a sweep that starts now. One already under way planned its cut-off times
   * when it began, so this one runs after it with a plan of its own (callers meanwhile share it).
   */
  function sweepNow(): Promise<SweepResult> {
    if (closed || !sweeping) return sweep();
    fresh ??= sweeping
      .catch(() => undefined)
      .then(() => {
        fresh = undefined;
        return sweep();
      });
    return fresh;
  }

  return {
    start() {
      if (running) return;
      running = true;
      schedule();
    },
    stop() {
      running = false;
      if (timer !== undefined) clock.clearTimeout(timer);
      timer = undefined;
      // A stopped spool keeps no timer: a worker still loading then finds checkpoints off until
      // it is ready, as before the guard existed.
      endLoadGuard();
    },
    async close() {
      this.stop();
      closed = true;
      releaseLock();
      const w = worker;
      if (w) {
        const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
        w.postMessage({ t: 'stop' } satisfies ToWorker);
        // A worker that does not stop within a second is ended.
        const timeout = setTimeout(() => void w.terminate(), 1000);
        await exited;
        clearTimeout(timeout);
      }
      await sweeping?.catch(() => {});
    },
    sweep: sweepNow,
    committed() {
      if (running && ++commits === CHECKPOINT_AFTER_COMMITS) void ensureWorker();
    },
  };
}
