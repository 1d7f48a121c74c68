/** Opening the database: pragmas first (auto_vacuum must precede the first table), then migrations. */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import * as schema from './schema.js';
import { migrate } from './migrate.js';
import { SpoolError } from '../errors.js';

/** An open database: the raw connection for prepared statements, drizzle for typed queries. */
export interface DbHandle {
  readonly sqlite: Database.Database;
  readonly orm: BetterSQLite3Database<typeof schema>;
  close(): void;
}

/** How commits reach the disk. */
export type Durability = 'normal' | 'full';

/**
 * A short busy timeout keeps the event loop responsive when another connection holds the write
 * lock; the committer retries asynchronously instead of blocking for seconds.
 */
export const BUSY_TIMEOUT_MS = 20;

/** Opens (creating if needed) and migrates the database at `path`. */
export function openDatabase(path: string, durability: Durability): DbHandle {
  let sqlite: Database.Database;
  try {
    // `path: 'data/spool.db'` should just work on a fresh checkout.
    mkdirSync(dirname(path), { recursive: true });
    sqlite = new Database(path);
  } catch (cause) {
    throw new SpoolError('STORAGE_ERROR', `Cannot open the database at ${path}: ${(cause as Error).message}`, { cause });
  }
  try {
    sqlite.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    // Only effective before the first table exists; later it needs a full VACUUM, which we avoid.
    // Set only when not already so: setting it writes the header, which fails while another
    // connection holds the write lock (SQLITE_BUSY at open).
    if (sqlite.pragma('auto_vacuum', { simple: true }) !== 2) sqlite.pragma('auto_vacuum = INCREMENTAL');
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma(`synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}`);
    // Bounds the WAL file left after a checkpoint, so a large purge's WAL does not linger.
    sqlite.pragma(`journal_size_limit = ${64 * 1024 * 1024}`);
    sqlite.pragma('temp_store = MEMORY');
    migrate(sqlite);
  } catch (cause) {
    sqlite.close();
    if (cause instanceof SpoolError) throw cause;
    throw new SpoolError('STORAGE_ERROR', `Cannot prepare the database at ${path}: ${(cause as Error).message}`, { cause });
  }
  const orm = drizzle(sqlite, { schema });
  return {
    sqlite,
    orm,
    close: () => {
      if (sqlite.open) sqlite.close();
    },
  };
}
