/**
 * The owner lock: one running spool per database file, across threads and processes. A sidecar
 * database (`<path>.lock`) is held in an EXCLUSIVE transaction by its own connection. The OS drops
 * the file lock when the process dies (SIGKILL included), so a dead owner's lock is taken over at
 * once. `locking_mode=EXCLUSIVE` on the main file would also shut out producers and the CLI.
 */
import Database from 'better-sqlite3';
import { SpoolError } from '../errors.js';

/** A held owner lock. */
export interface OwnerLock {
  release(): void;
}

/** Takes the owner lock for `path`, or throws LOCKED if another live owner holds it. */
export function acquireOwnerLock(path: string): OwnerLock {
  const lockPath = `${path}.lock`;
  const conn = new Database(lockPath);
  try {
    conn.pragma('busy_timeout = 0');
    conn.pragma('journal_mode = DELETE');
    conn.exec('BEGIN EXCLUSIVE');
  } catch (cause) {
    conn.close();
    const code = (cause as { code?: string }).code ?? '';
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
      throw new SpoolError('LOCKED', `Another spool owns ${path} (its lock file ${lockPath} is held); stop it first`, {
        cause,
        details: { path },
      });
    }
    throw new SpoolError('STORAGE_ERROR', `Cannot take the owner lock ${lockPath}: ${(cause as Error).message}`, { cause });
  }
  let held = true;
  return {
    release() {
      if (!held) return;
      held = false;
      try {
        conn.exec('ROLLBACK');
      } finally {
        conn.close();
      }
    },
  };
}
