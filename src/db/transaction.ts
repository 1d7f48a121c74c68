/** The one helper every transaction runs through. better-sqlite3 transactions are synchronous. */
import type Database from 'better-sqlite3';
import { SpoolError } from '../errors.js';

/** `immediate` takes the write lock at BEGIN, so a read-then-write cannot race another writer. */
export type TransactionMode = 'deferred' | 'immediate';

/**
 * Runs `fn` in a transaction and returns its result. A callback that returns a thenable is a bug
 * (an async callback would commit at its first await and run the rest outside the transaction):
 * it is rejected, and everything it wrote before returning is rolled back.
 */
export function runTransaction<T>(sqlite: Database.Database, fn: () => T, mode: TransactionMode = 'immediate'): T {
  const runner = runnerFor(sqlite);
  if (!sqlite.inTransaction) counts.set(sqlite, (counts.get(sqlite) ?? 0) + 1);
  return (mode === 'immediate' ? runner.immediate(fn) : runner.deferred(fn)) as T;
}

const counts = new WeakMap<Database.Database, number>();

/** How many top-level transactions this module has run on a connection (tests, diagnostics). */
export function transactionCount(sqlite: Database.Database): number {
  return counts.get(sqlite) ?? 0;
}

type Runner = Database.Transaction<(fn: () => unknown) => unknown>;
// One wrapper per connection: better-sqlite3 builds a new one (and its closures) per
// transaction() call, which the hot path would otherwise pay on every group commit.
const runners = new WeakMap<Database.Database, Runner>();

function runnerFor(sqlite: Database.Database): Runner {
  let runner = runners.get(sqlite);
  if (!runner) {
    runner = sqlite.transaction((fn: () => unknown) => {
      const result = fn();
      if (result !== null && typeof result === 'object' && typeof (result as { then?: unknown }).then === 'function') {
        throw new SpoolError('INVALID_ARGUMENT', 'A transaction callback returned a promise; transactions must be synchronous');
      }
      return result;
    });
    runners.set(sqlite, runner);
  }
  return runner;
}

/** Runs `fn` inside a savepoint of the current transaction; its writes roll back alone if it throws. */
export function runSavepoint<T>(sqlite: Database.Database, fn: () => T): T {
  // A nested better-sqlite3 transaction is a SAVEPOINT.
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
