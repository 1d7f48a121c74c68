/**
 * The owner lock: one running spool per database, whatever path reaches it, across threads and
 * processes. Two parts, each for a reason:
 * - A sidecar database (`<real path>.lock`) held in an EXCLUSIVE transaction by its own
 *   connection. The OS drops the file lock when the process dies (SIGKILL included), so a dead
 *   owner is taken over at once, with no lease to wait out. The name comes from the database's
 *   real path, so a symlink or an `a/../b` path finds the same lock file.
 * - The owner's identity in the database itself (table `owner`: host, pid, process start time,
 *   the lock file's dev and inode). If the lock file is deleted while its owner runs, a second
 *   `start()` would lock a fresh file; the row shows the first owner is alive, so it gets LOCKED.
 * `locking_mode=EXCLUSIVE` on the main file would also shut out producers and the CLI.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import Database from 'better-sqlite3';
import { SpoolError } from '../errors.js';
import { runTransaction } from './transaction.js';

/** A held owner lock. */
export interface OwnerLock {
  /** Clears the owner row (best effort) and drops the file lock. */
  release(): void;
}

/** Nonces of the spools started in this process: a row with our pid and one of these is alive. */
const liveNonces = new Set<string>();

interface OwnerRow {
  host: string;
  pid: number;
  process_start: string;
  nonce: string;
  lock_dev: string;
  lock_ino: string;
}

/**
 * Takes the owner lock of the database at `realPath` (already resolved, see connection.ts), using
 * `sqlite` (its open connection) for the owner row. Throws LOCKED if another live owner holds it,
 * or SQLITE_BUSY (raw) when the database's write lock is held: the caller retries that.
 */
export function acquireOwnerLock(realPath: string, sqlite: Database.Database, now: number): OwnerLock {
  const lockPath = `${realPath}.lock`;
  const conn = holdLockFile(realPath, lockPath);
  const nonce = randomUUID();
  try {
    const lockStat = statSync(lockPath, { bigint: true });
    const me = {
      host: hostname(),
      pid: process.pid,
      processStart: processStart(process.pid),
      lockDev: String(lockStat.dev),
      lockIno: String(lockStat.ino),
    };
    runTransaction(sqlite, () => {
      const row = sqlite.prepare('SELECT host, pid, process_start, nonce, lock_dev, lock_ino FROM owner WHERE id = 1').get() as OwnerRow | undefined;
      if (row && ownerAlive(row, me)) {
        throw new SpoolError(
          'LOCKED',
          `Another spool owns ${realPath}: pid ${row.pid} on ${row.host} is alive, though its lock file ${lockPath} was deleted or replaced; stop it first`,
          { details: { path: realPath, pid: row.pid, host: row.host } },
        );
      }
      sqlite
        .prepare(
          `INSERT INTO owner (id, host, pid, process_start, nonce, lock_dev, lock_ino, acquired_at) VALUES (1, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, process_start = excluded.process_start,
             nonce = excluded.nonce, lock_dev = excluded.lock_dev, lock_ino = excluded.lock_ino, acquired_at = excluded.acquired_at`,
        )
        .run(me.host, me.pid, me.processStart, nonce, me.lockDev, me.lockIno, now);
    });
  } catch (error) {
    release(conn);
    throw error;
  }
  liveNonces.add(nonce);
  let held = true;
  return {
    release() {
      if (!held) return;
      held = false;
      liveNonces.delete(nonce);
      try {
        if (sqlite.open) runTransaction(sqlite, () => sqlite.prepare('DELETE FROM owner WHERE id = 1 AND nonce = ?').run(nonce));
      } catch {
        // A lost, full or busy database keeps the row; the next owner sees this pid is gone.
      } finally {
        release(conn);
      }
    },
  };
}

/**
 * True when another connection holds the owner lock of the database at `realPath` now (a probe:
 * taken and let go at once). Spool 0.1.0 held the same lock file, so this finds its owners too.
 */
export function ownerRunning(realPath: string): boolean {
  let conn: Database.Database;
  try {
    conn = holdLockFile(realPath, `${realPath}.lock`);
  } catch (error) {
    if (error instanceof SpoolError && error.code === 'LOCKED') return true;
    throw error;
  }
  release(conn);
  return false;
}

/** Opens `<path>.lock` and holds it in an EXCLUSIVE transaction, or throws LOCKED. */
function holdLockFile(realPath: string, lockPath: string): Database.Database {
  let conn: Database.Database;
  try {
    conn = new Database(lockPath);
  } catch (cause) {
    throw new SpoolError('STORAGE_ERROR', `Cannot open the owner lock ${lockPath}: ${(cause as Error).message}`, { cause });
  }
  try {
    conn.pragma('busy_timeout = 0');
    conn.pragma('journal_mode = DELETE');
    conn.exec('BEGIN EXCLUSIVE');
    return conn;
  } catch (cause) {
    conn.close();
    const code = (cause as { code?: string }).code ?? '';
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
      throw new SpoolError('LOCKED', `Another spool owns ${realPath} (its lock file ${lockPath} is held); stop it first`, {
        cause,
        details: { path: realPath },
      });
    }
    throw new SpoolError('STORAGE_ERROR', `Cannot take the owner lock ${lockPath}: ${(cause as Error).message}`, { cause });
  }
}

function release(conn: Database.Database) {
  try {
    if (conn.inTransaction) conn.exec('ROLLBACK');
  } finally {
    conn.close();
  }
}

/**
 * Whether the owner in `row` still runs. We now hold the lock file: if it is the very file the
 * row's owner held, the OS dropped that owner's lock, so it is gone (dead, or closed uncleanly).
 * Otherwise the file was deleted or replaced under a possibly live owner: ask the OS about it.
 */
function ownerAlive(row: OwnerRow, me: { host: string; lockDev: string; lockIno: string }): boolean {
  if (row.lock_dev === me.lockDev && row.lock_ino === me.lockIno) return false;
  // Another host (a shared file system) cannot be asked: assume it lives rather than risk two owners.
  if (row.host !== me.host) return true;
  if (row.pid === process.pid) return liveNonces.has(row.nonce);
  try {
    process.kill(row.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    // EPERM: the process exists but belongs to someone else.
  }
  // A reused pid is another process: its start time (and the boot id) differ.
  const start = processStart(row.pid);
  return row.process_start === '' || start === '' || start === row.process_start;
}

/** `<boot id>:<start time>` of a process from /proc, or '' where that is not available. */
export function processStart(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may itself hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    return `${bootId}:${fields[19] ?? ''}`;
  } catch {
    return '';
  }
}
