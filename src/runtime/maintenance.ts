/**
 * The maintenance sweep (the CQS "purge" concern): deletes expired history and old dead letters in
 * small batches, yielding between them so claims never wait long, then returns free pages to the
 * OS with incremental_vacuum steps and truncates the WAL. Never a blocking full VACUUM.
 */
import type Database from 'better-sqlite3';
import type { Clock, TimerHandle } from '../clock.js';
import type { RemovedRow, Repository } from '../db/repository.js';
import { SpoolError } from '../errors.js';
import { runTransaction } from '../db/transaction.js';
import { toStorageError } from './committer.js';
import type { EventBus } from '../events.js';
import type { SettingsRuntime } from '../settings/store.js';

/** Rows deleted per transaction: small enough to keep each pause short. */
export const SWEEP_BATCH = 200;
const VACUUM_STEP_PAGES = 128;

/** The sweep's handle. */
export interface Maintenance {
  /** Sweeps every `maintenance.intervalMs`. */
  start(): void;
  /** Stops the schedule; a sweep in progress finishes. */
  stop(): void;
  /** Stops, and ends a sweep in progress at its next step with CLOSED (the spool is closing). */
  close(): Promise<void>;
  /** One full sweep now. */
  sweep(): Promise<{ deleted: number; freedPages: number; longestBatchMs: number }>;
}


/** Creates the maintenance sweep (stopped). */
export function createMaintenance(deps: {
  repo: Repository;
  sqlite: Database.Database;
  clock: Clock;
  events: EventBus;
  settings: SettingsRuntime;
  /** Told about every row a sweep deletes. */
  removed?: (rows: RemovedRow[]) => void;
}): Maintenance {
  const { repo, sqlite, clock, events, settings } = deps;
  let timer: TimerHandle | undefined;
  let running = false;
  let closed = false;
  let sweeping: Promise<{ deleted: number; freedPages: number; longestBatchMs: number }> | undefined;

  /** Yields to the event loop between steps; a close() meanwhile ends the sweep. */
  async function tick(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (closed) throw new SpoolError('CLOSED', 'The spool closed during the maintenance sweep');
  }

  function checkpointStep(): number {
    const started = performance.now();
    repo.checkpointPassive();
    return performance.now() - started;
  }

  async function batches(work: () => RemovedRow[]): Promise<{ total: number; longest: number }> {
    let total = 0;
    let longest = 0;
    for (;;) {
      const started = performance.now();
      const rows = runTransaction(sqlite, work);
      longest = Math.max(longest, performance.now() - started);
      total += rows.length;
      if (rows.length === 0) break;
      deps.removed?.(rows);
      await tick();
      // Checkpoint each batch's few pages as a step of its own. Otherwise SQLite's automatic
      // checkpoint copies ~1000 pages inside some later commit: one long pause for the claims.
      longest = Math.max(longest, checkpointStep());
      await tick();
    }
    return { total, longest };
  }

  async function sweepOnce() {
    const { retention } = settings.get();
    const now = clock.now();
    let deleted = 0;
    let longest = 0;
    const done = await batches(() => repo.sweepBatch('done', now - retention.doneMs + (retention.doneMs === 0 ? 1 : 0), SWEEP_BATCH));
    deleted += done.total;
    longest = Math.max(longest, done.longest);
    if (retention.deadMs !== null) {
      const deadMs = retention.deadMs;
      const dead = await batches(() => repo.sweepBatch('dead', now - deadMs, SWEEP_BATCH));
      deleted += dead.total;
      longest = Math.max(longest, dead.longest);
    }
    let freedPages = 0;
    for (let free = repo.freePages(); free > 0; free = repo.freePages()) {
      const started = performance.now();
      repo.incrementalVacuum(Math.min(free, VACUUM_STEP_PAGES));
      longest = Math.max(longest, performance.now() - started);
      freedPages += Math.min(free, VACUUM_STEP_PAGES);
      await tick();
      longest = Math.max(longest, checkpointStep());
      await tick();
    }
    if (freedPages > 0 || deleted > 0) repo.checkpointTruncate();
    const result = { deleted, freedPages, longestBatchMs: Math.round(longest * 100) / 100 };
    events.emit({ type: 'maintenance.swept', ...result, at: clock.now() });
    return result;
  }

  function schedule() {
    // A sweep still running from before a stop() and start() must not add a second chain.
    if (timer !== undefined) return;
    timer = clock.setTimeout(() => {
      timer = undefined;
      if (!running) return;
      sweep()
        .catch((error: SpoolError) => {
          if (!closed) events.emit({ type: 'error', code: error.code, message: `Maintenance sweep failed: ${error.message}`, at: clock.now() });
        })
        .finally(() => {
          if (running) schedule();
        });
    }, settings.get().maintenance.intervalMs);
  }

  function sweep() {
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
    },
    async close() {
      this.stop();
      closed = true;
      await sweeping?.catch(() => {});
    },
    sweep,
  };
}
