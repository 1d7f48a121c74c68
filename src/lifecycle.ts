/**
 * The spool's lifecycle: start, stop and close, with one status (as XState's Actor has one).
 * - `start()` takes the owner lock, runs boot recovery and starts claiming and the sweep.
 * - `stop()` stops claiming and waits for handlers (then aborts them); sends still store.
 * - `close()` stops, then runs every cleanup step even if one throws (BullMQ's close()).
 * Concurrent callers share one promise per operation, and of start() and stop() the last call
 * wins (start(); stop(); start() ends running); a start() during close() is CLOSED.
 */
import { MAX_TIMER_MS } from './clock.js';
import { acquireOwnerLock, type OwnerLock } from './db/lock.js';
import { isBusy } from './db/transaction.js';
import { messageOf, SpoolError } from './errors.js';
import type { EventBus } from './events.js';
import type { Operations } from './operations.js';
import type { ResolvedOptions } from './options.js';
import { BUSY_GIVE_UP_MS, RETRY_DELAY_MS, toStorageError } from './runtime/committer.js';
import type { Handler } from './runtime/handler.js';
import { createSupervisor, DRAIN_GRACE_MS, type SupervisorRuntime } from './runtime/supervisor.js';
import type { SettingsRuntime } from './settings/store.js';
import type { QueueDirectory } from './queues/directory.js';
import type { Storage } from './storage.js';

/** Where a spool is in its life. */
export type SpoolStatus = 'idle' | 'starting' | 'running' | 'stopping' | 'closing' | 'closed';

/** How long stop() and close() wait for running handlers by default, ms. */
export const DEFAULT_STOP_TIMEOUT_MS = 10_000;

/** What the lifecycle needs. */
export interface LifecycleDeps {
  opts: ResolvedOptions;
  storage: Storage;
  settings: SettingsRuntime;
  bus: EventBus;
  consumers: ReadonlyMap<string, Handler>;
  operations: Operations;
  directory: QueueDirectory;
  /** A commit of this handle made a message of a queue claimable (wakes pull waiters). */
  ready(queue: string): void;
  /** Returns pull leases that ran out (the pull engine's commit). */
  expireLeases(): Promise<unknown>;
  /** The load control let a held-back queue run again (wakes pull waiters). */
  released(): void;
  /** Ends pull consumers' waits (at close). */
  closePull(): void;
}

/** Creates the lifecycle (idle: nothing opened, nothing started). */
export function createLifecycle(deps: LifecycleDeps) {
  const { opts, storage, settings, bus, operations } = deps;
  const { clock } = opts;
  let supervisor: SupervisorRuntime | undefined;
  let lock: OwnerLock | undefined;
  let status: SpoolStatus = 'idle';
  let starting: Promise<void> | undefined;
  let stopping: Promise<void> | undefined;
  let closing: Promise<void> | undefined;
  /** Set synchronously when close() is first called, before its promise exists. */
  let closeBegun = false;

  function ensureSupervisor(): SupervisorRuntime {
    const { db, repo, committer } = storage.open();
    supervisor ??= createSupervisor({
      sqlite: db.sqlite,
      repo,
      committer,
      clock,
      events: bus,
      settings,
      consumers: deps.consumers,
      inspect: opts.inspect,
      random: opts.random,
      directory: deps.directory,
      ready: deps.ready,
      expireLeases: deps.expireLeases,
      released: deps.released,
    });
    return supervisor;
  }

  /**
   * Taking ownership and boot recovery need the write lock. Another connection holding it is
   * waited out with short asynchronous retries (as the committer does), never a long blocking
   * busy wait; past BUSY_GIVE_UP_MS start() rejects with STORAGE_BUSY. Any other SQLite failure (a
   * read-only file) rejects with STORAGE_ERROR, never a raw SqliteError. A failed try changed nothing.
   */
  async function whileBusy(step: () => void) {
    const since = performance.now();
    for (let retries = 1; ; retries++) {
      try {
        return step();
      } catch (error) {
        if (!isBusy(error)) throw toStorageError(error);
        if (performance.now() - since > BUSY_GIVE_UP_MS) throw toStorageError(error);
        bus.emit({ type: 'storage.busy', retries, at: clock.now() });
        await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
        if (closeBegun) throw new SpoolError('CLOSED', 'The spool closed while start() waited for the database');
      }
    }
  }

  function start(): Promise<void> {
    if (closeBegun) return Promise.reject(new SpoolError('CLOSED', 'The spool is closed'));
    // Running, unless a stop is under way: then this start runs after it (the last call wins).
    if (supervisor?.running && !stopping) return Promise.resolve();
    if (starting) return starting;
    // While a stop runs the status says so; this start follows it.
    if (!stopping) status = 'starting';
    let mine: Promise<void> | undefined = undefined;
    const before = stopping;
    mine = (async () => {
      try {
        // The stop before this start finishes first; its failure is its own caller's to see.
        await before?.catch(() => {});
        // close() may have begun while we waited for a stop: starting now would outlive it.
        if (closeBegun) throw new SpoolError('CLOSED', 'The spool closed while start() waited for stop()');
        // A stop asked for after this start keeps saying 'stopping'.
        if (!stopping) status = 'starting';
        const { db } = storage.open();
        await whileBusy(() => {
          lock ??= acquireOwnerLock(db.path, db.sqlite, clock.now());
        });
        const sup = ensureSupervisor();
        await whileBusy(() => sup.start());
        const maintenance = operations.maintenance();
        maintenance.start();
        storage.open().committer.onCommitted(() => maintenance.committed());
      } finally {
        if (starting === mine) starting = undefined;
        // A stop asked for meanwhile waits for this start, and says 'stopping' until it is done.
        if (!closeBegun && !stopping) status = supervisor?.running ? 'running' : 'idle';
      }
    })();
    starting = mine;
    return starting;
  }

  function stopFor(timeoutMs: number): Promise<void> {
    // The stop under way answers, unless a start() was asked for after it: that start would undo
    // it, so this stop runs after that start (the last call wins).
    if (stopping && !starting) return stopping;
    if (!stopping && !closeBegun) status = 'stopping';
    let mine: Promise<void> | undefined = undefined;
    // One bound for the whole stop (README: the timeout, or DRAIN_GRACE_MS, whichever is later):
    // the supervisor's drain already waited up to it, so the last drain only gets what is left.
    const deadline = performance.now() + Math.max(DRAIN_GRACE_MS, timeoutMs);
    mine = (async () => {
      // This stop undoes the start in progress (which itself waits for any earlier stop): a
      // start() from now on must not be answered by it, but run after this stop.
      const undone = starting;
      starting = undefined;
      await undone?.catch(() => {});
      if (!closeBegun) status = 'stopping';
      operations.existingMaintenance?.stop();
      await supervisor?.stop(timeoutMs);
      await storage.opened?.committer.drain(Math.max(0, deadline - performance.now()));
    })().finally(() => {
      if (stopping === mine) stopping = undefined;
      // A start() asked for during the stop runs next.
      if (!closeBegun && !stopping) status = starting ? 'starting' : 'idle';
    });
    stopping = mine;
    return stopping;
  }

  function close(timeoutMs: number): Promise<void> {
    closeBegun = true;
    closing ??= (async () => {
      status = 'closing';
      await runAll([
        () => deps.closePull(),
        () => stopFor(timeoutMs),
        () => operations.existingMaintenance?.close(),
        () => storage.opened?.committer.close(),
        () => supervisor?.dispose(),
        () => lock?.release(),
        () => storage.close(),
        () => settings.complete(),
        () => bus.complete(),
      ]).finally(() => {
        status = 'closed';
      });
    })();
    return closing;
  }

  return {
    start,
    /** Validates the options, then stops (see the module header). */
    stop: (options: unknown) => withTimeout(options, 'stop', stopFor),
    /** Validates the options, then closes (see the module header). */
    close: (options: unknown) => withTimeout(options, 'close', close),
    ensureSupervisor,
    /** The supervisor if one was created. */
    get supervisor() {
      return supervisor;
    },
    get status() {
      return status;
    },
    /** True once close() has begun. */
    get closing() {
      return closeBegun;
    },
  };
}

/** Runs `then(timeoutMs)`, or rejects (never throws) when the options are invalid. */
function withTimeout(options: unknown, method: 'stop' | 'close', then: (timeoutMs: number) => Promise<void>): Promise<void> {
  try {
    return then(parseStopTimeout(options, method));
  } catch (error) {
    return Promise.reject(error);
  }
}

/** `timeoutMs` of stop() and close(): a number ≥ 0, or Infinity; huge values are capped. */
function parseStopTimeout(options: unknown, method: 'stop' | 'close'): number {
  if (options === undefined) return DEFAULT_STOP_TIMEOUT_MS;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new SpoolError('INVALID_ARGUMENT', `${method}() takes an options object { timeoutMs }, got ${options === null ? 'null' : typeof options}`);
  }
  const extra = Object.keys(options).filter((key) => key !== 'timeoutMs');
  if (extra.length) throw new SpoolError('INVALID_ARGUMENT', `${method}() takes only { timeoutMs }, got ${extra.join(', ')}`);
  const value = (options as { timeoutMs?: unknown }).timeoutMs;
  if (value === undefined) return DEFAULT_STOP_TIMEOUT_MS;
  if (value === Infinity) return Infinity;
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
    throw new SpoolError('INVALID_ARGUMENT', `Expected ${method}() timeoutMs to be a number of ms ≥ 0 or Infinity, got ${typeof value === 'number' ? String(value) : JSON.stringify(value) ?? typeof value}`, {
      details: { timeoutMs: typeof value === 'number' ? value : typeof value },
    });
  }
  return Math.min(value, MAX_TIMER_MS);
}

/** The lifecycle's type. */
export type Lifecycle = ReturnType<typeof createLifecycle>;

/**
 * Runs every step, in order, even when an earlier one throws (BullMQ's close()), then rethrows:
 * the one error as it is, or several as one AggregateError, so that none is lost.
 */
export async function runAll(steps: (() => unknown)[]): Promise<void> {
  const errors: unknown[] = [];
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      errors.push(error);
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new AggregateError(errors, `close() failed in ${errors.length} steps: ${errors.map((e) => messageOf(e)).join('; ')}`);
}
