/**
 * One connection to a Spool database, without drizzle: the pragmas every connection needs, the
 * file-identity check, and nothing else. The maintenance worker opens its connection with this
 * alone, so its thread loads better-sqlite3 and a few small modules, not drizzle-orm (about 400
 * module files); see maintenance-worker.ts.
 */
import { mkdirSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { SpoolError } from '../errors.js';

/** An open connection: the raw handle for prepared statements, and what it was opened as. */
export interface Connection {
  readonly sqlite: Database.Database;
  /** The database's real path (symlinks and `..` resolved): what the lock file is named after. */
  readonly path: string;
  /** How commits reach the disk (another connection, e.g. the maintenance worker's, matches it). */
  readonly durability: Durability;
  /**
   * False once the file at `path` is no longer the file this connection holds (deleted or
   * replaced): commits then land in an unlinked file and would be lost at close. A stat, ~1 µs.
   */
  intact(): boolean;
  /** The file's device and inode at open: a second connection (the maintenance worker's) opens only this file. */
  readonly identity: FileIdentity;
  close(): void;
}

/** Which file a path named when a connection opened it. */
export interface FileIdentity {
  dev: number;
  ino: number;
}

/** How commits reach the disk. */
export type Durability = 'normal' | 'full';

/**
 * A short busy timeout keeps the event loop responsive when another connection holds the write
 * lock; the committer retries asynchronously instead of blocking for seconds.
 */
export const BUSY_TIMEOUT_MS = 20;

/** journal_size_limit: the WAL file a restart leaves behind, at most (see openConnection). */
const WAL_SIZE_LIMIT_BYTES = 24 * 1024 * 1024;

/**
 * Opens (creating if needed) the database at `path` with Spool's pragmas, then runs `prepare` on it
 * (the owner's migrations); its failures are reported as the open's. `check` runs before the
 * pragmas, which write the file: a file it refuses is left as it was. With `sameAs`, it opens only
 * the file another connection holds: never creates one, and a file deleted or replaced since is
 * STORAGE_LOST (a second connection to a new empty file would work on a spool no one runs).
 */
export function openConnection(
  path: string,
  durability: Durability,
  hooks: { check?: (sqlite: Database.Database) => void; prepare?: (sqlite: Database.Database, realPath: string) => void } = {},
  sameAs?: FileIdentity,
): Connection {
  let sqlite: Database.Database;
  let real: string;
  try {
    // `path: 'data/spool.db'` should just work on a fresh checkout.
    if (!sameAs) mkdirSync(dirname(path), { recursive: true });
    real = realPath(path);
    sqlite = new Database(real, { fileMustExist: sameAs !== undefined });
  } catch (cause) {
    if (sameAs) throw lost(path, cause);
    throw new SpoolError('STORAGE_ERROR', `Cannot open the database at ${path}: ${(cause as Error).message}`, { cause });
  }
  let identity: FileIdentity;
  try {
    const stat = statSync(real);
    // SQLite names its -wal and -shm files after the path it was given: two names for one file
    // would give two WALs, and writes through one would corrupt the other's view.
    if (stat.nlink > 1) {
      throw new SpoolError('HARD_LINKED', `The database ${real} has ${stat.nlink} hard links; SQLite's WAL files are named after the path, so a hard-linked database would be corrupted. Use one path (a symlink is fine)`, {
        details: { path: real, links: stat.nlink },
      });
    }
    identity = { dev: stat.dev, ino: stat.ino };
    if (sameAs && (sameAs.dev !== identity.dev || sameAs.ino !== identity.ino)) throw lost(path);
  } catch (cause) {
    sqlite.close();
    if (cause instanceof SpoolError) throw cause;
    throw new SpoolError('STORAGE_ERROR', `Cannot read the database file ${real}: ${(cause as Error).message}`, { cause });
  }
  try {
    sqlite.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    hooks.check?.(sqlite);
    // Only effective before the first table exists; later it needs a full VACUUM, which we avoid.
    // Set only when not already so: setting it writes the header, which fails while another
    // connection holds the write lock (SQLITE_BUSY at open).
    if (sqlite.pragma('auto_vacuum', { simple: true }) !== 2) sqlite.pragma('auto_vacuum = INCREMENTAL');
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma(`synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}`);
    // Bounds the WAL file left after a checkpoint, so a large purge's WAL does not linger: each
    // restart trims it to this. Above the 16 MiB a drain lets the WAL reach (maintenance.ts), so
    // steady drains trim nothing; small enough that truncating the rest, which excludes writers
    // while the file system frees its blocks (about 0.35 ms per MB here), stays brief.
    sqlite.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
    sqlite.pragma('temp_store = MEMORY');
    hooks.prepare?.(sqlite, real);
  } catch (cause) {
    sqlite.close();
    if (cause instanceof SpoolError) throw cause;
    // SQLite's own words name neither the cause nor the fix: a spool writes -wal and -shm files
    // beside the database, even to read it, so its directory must be writable too.
    const code = String((cause as { code?: unknown }).code ?? '');
    const readOnly = code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_CANTOPEN');
    const hint = readOnly ? ` (Spool needs write access to the file and to its directory ${dirname(real)}, where SQLite keeps the -wal and -shm files, even to read)` : '';
    throw new SpoolError('STORAGE_ERROR', `Cannot prepare the database at ${path}: ${(cause as Error).message}${hint}`, { cause });
  }
  return {
    sqlite,
    path: real,
    durability,
    identity,
    intact() {
      const now = statSync(real, { throwIfNoEntry: false });
      return now !== undefined && now.dev === identity.dev && now.ino === identity.ino;
    },
    close: () => {
      if (sqlite.open) sqlite.close();
    },
  };
}

/** The error of a second connection whose file is gone. */
function lost(path: string, cause?: unknown): SpoolError {
  return new SpoolError('STORAGE_LOST', `The database file ${path} was deleted or replaced since the spool opened it`, cause === undefined ? {} : { cause });
}

/**
 * The real path of a database file: symlinks and `..` resolved, so every way of naming one file
 * gives one lock file. A file not yet created resolves through its directory.
 */
export function realPath(path: string): string {
  try {
    return realpathSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    return join(realpathSync(resolve(dirname(path))), basename(path));
  }
}
