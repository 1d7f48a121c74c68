/** The one helper every transaction runs through. better-sqlite3 transactions are synchronous. */
import type Database from 'better-sqlite3';
import { SpoolError } from '../errors.js';

/** `immediate` takes the write lock at BEGIN, so a read-then-write cannot race another writer. */
export type TransactionMode = 'deferred' | 'immediate';

/** Work a connection does around its transactions (the count deltas, see counts.ts). */
export interface TransactionHooks {
  /** Last writes of a top-level transaction, inside it, just before COMMIT. */
  beforeCommit(): void;
  /** A top-level transaction rolled back: forget what it recorded. */
  rolledBack(): void;
  /** What to return to if a savepoint that starts now rolls back. */
  mark(): unknown;
  /** A savepoint rolled back to `mark`. */
  restore(mark: unknown): void;
}

const hooks = new WeakMap<Database.Database, TransactionHooks>();

/** Registers the hooks of a connection (one set per connection). */
export function onTransaction(sqlite: Database.Database, transactionHooks: TransactionHooks): void {
  hooks.set(sqlite, transactionHooks);
}

/**
 * Runs `fn` in a transaction and returns its result. A callback that returns a thenable is a bug
 * (an async callback would commit at its first await and run the rest outside the transaction):
 * it is rejected, and everything it wrote before returning is rolled back.
 */
export function runTransaction<T>(sqlite: Database.Database, fn: () => T, mode: TransactionMode = 'immediate'): T {
  const runner = runnerFor(sqlite);
  if (sqlite.inTransaction) {
    // Nested: better-sqlite3 makes it a SAVEPOINT; if it rolls back, so do its hooks' records.
    const h = hooks.get(sqlite);
    const mark = h?.mark();
    try {
      return runner.deferred(fn, false) as T;
    } catch (error) {
      h?.restore(mark);
      throw error;
    }
  }
  counts.set(sqlite, (counts.get(sqlite) ?? 0) + 1);
  try {
    return (mode === 'immediate' ? runner.immediate(fn, true) : runner.deferred(fn, true)) as T;
  } catch (error) {
    hooks.get(sqlite)?.rolledBack();
    throw error;
  }
}

const counts = new WeakMap<Database.Database, number>();

/** How many top-level transactions this module has run on a connection (tests, diagnostics). */
export function transactionCount(sqlite: Database.Database): number {
  return counts.get(sqlite) ?? 0;
}

type Runner = Database.Transaction<(fn: () => unknown, top: boolean) => unknown>;
// One wrapper per connection: better-sqlite3 builds a new one (and its closures) per
// transaction() call, which the hot path would otherwise pay on every group commit.
const runners = new WeakMap<Database.Database, Runner>();

function runnerFor(sqlite: Database.Database): Runner {
  let runner = runners.get(sqlite);
  if (!runner) {
    runner = sqlite.transaction((fn: () => unknown, top: boolean) => {
      const result = fn();
      if (result !== null && typeof result === 'object' && typeof (result as { then?: unknown }).then === 'function') {
        throw new SpoolError('INVALID_ARGUMENT', 'A transaction callback returned a promise; transactions must be synchronous');
      }
      if (top) hooks.get(sqlite)?.beforeCommit();
      return result;
    });
    runners.set(sqlite, runner);
  }
  return runner;
}

/** Runs `fn` inside a savepoint of the current transaction; its writes roll back alone if it throws. */
export function runSavepoint<T>(sqlite: Database.Database, fn: () => T): T {
  return runTransaction(sqlite, fn, 'deferred');
}

/** The SQLite result code of an error (e.g. SQLITE_BUSY, SQLITE_FULL), if any. */
export function sqliteCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : undefined;
}

/** True when the error is the write lock held elsewhere. */
export function isBusy(error: unknown): boolean {
  const code = sqliteCode(error);
  return code === 'SQLITE_BUSY' || code === 'SQLITE_BUSY_SNAPSHOT' || code === 'SQLITE_LOCKED';
}

/** True when the database (or disk) is full. */
export function isFull(error: unknown): boolean {
  const code = sqliteCode(error);
  return code === 'SQLITE_FULL' || code === 'SQLITE_IOERR_WRITE';
}
