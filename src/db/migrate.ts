/**
 * Applies drizzle-kit's generated migrations from `drizzle/`, located from this module's URL so it
 * works from any working directory, from the sources and from the built package alike. Runs inside
 * one IMMEDIATE transaction, so two processes opening a new file at once cannot both apply the same
 * migration. Uses drizzle's own bookkeeping table.
 */
import type Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import { SpoolError } from '../errors.js';
import { BUSY_TIMEOUT_MS } from './connection.js';
import { isBusy, runTransaction } from './transaction.js';

/** Where the generated migrations live: `drizzle/` in the package root. */
export const MIGRATIONS_FOLDER = findMigrationsFolder(dirname(fileURLToPath(import.meta.url)));

// The nearest ancestor with drizzle's journal: this module runs from src/db/ (tsx, tests),
// dist/src/db/ (the built package) or a test bundle, each at a different depth below the root.
function findMigrationsFolder(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const folder = join(dir, 'drizzle');
    if (existsSync(join(folder, 'meta', '_journal.json'))) return folder;
    if (dirname(dir) === dir) throw new SpoolError('STORAGE_ERROR', `No drizzle/meta/_journal.json in any folder above ${from}`);
  }
}

const migrations = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER });

/**
 * How long a migration waits for the write lock, ms: another process may be migrating the same
 * file (a big one takes seconds), and this open then applies nothing once it gets the lock. The
 * wait is synchronous, once per open; the committer's own busy limit is the same.
 */
export const MIGRATION_BUSY_MS = 30_000;

/** What a migration must know of the world outside the connection. */
export interface MigrateGuard {
  /** True when another process owns the file (holds its owner lock) now. */
  ownerRunning(): boolean;
}

/**
 * Brings the schema up to date; a no-op when it already is. Refuses a file written by a newer
 * Spool (NEWER_SCHEMA), and an upgrade of a file that another process owns (LOCKED): that owner
 * runs an older Spool, and a changed schema under it would fail its every write.
 */
export function migrate(sqlite: Database.Database, guard?: MigrateGuard): void {
  const latest = migrations.at(-1)?.folderMillis ?? 0;
  const found = appliedUpTo(sqlite);
  if (found > latest) {
    throw new SpoolError('NEWER_SCHEMA', `The database was written by a newer Spool: its schema has a migration of ${found}, this Spool knows none after ${latest}; upgrade Spool to open it`, {
      details: { applied: found, known: latest },
    });
  }
  if (found === latest) return;
  // Read again after a positive probe: a process of this version may have migrated the file and
  // taken its lock in between, and is no reason to refuse.
  if (found >= 0 && guard?.ownerRunning() && appliedUpTo(sqlite) < latest) {
    throw new SpoolError('LOCKED', 'Another process owns this database and its schema is older than this Spool\'s: it runs an older Spool, whose writes would fail on a changed schema. Stop it, then open the file with this version to upgrade it', {
      details: { applied: found, known: latest },
    });
  }
  sqlite.pragma(`busy_timeout = ${MIGRATION_BUSY_MS}`);
  try {
    runTransaction(sqlite, () => {
      sqlite.exec(
        'CREATE TABLE IF NOT EXISTS "__drizzle_migrations" (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric)',
      );
      // Read again under the write lock: a process that migrated meanwhile left nothing to do.
      const applied = appliedUpTo(sqlite);
      const insert = sqlite.prepare('INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (?, ?)');
      for (const migration of migrations) {
        if (migration.folderMillis <= applied) continue;
        for (const statement of migration.sql) if (statement.trim()) sqlite.exec(statement);
        insert.run(migration.hash, migration.folderMillis);
      }
    });
  } catch (error) {
    if (isBusy(error)) throw new SpoolError('STORAGE_BUSY', `The database stayed locked by another connection for over ${MIGRATION_BUSY_MS} ms while its schema was to be upgraded`, { cause: error });
    throw error;
  } finally {
    sqlite.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  }
}

/** The hash of Spool's first migration: every Spool database's migrations table has it (0000_init never changed). */
export const FIRST_MIGRATION_HASH = migrations[0]!.hash;

/**
 * Refuses (INVALID_OPTIONS) a database that is not a spool's: one whose migrations are another
 * application's (see foreignMigrations), or one with tables but no migrations table at all.
 */
export function refuseForeign(sqlite: Database.Database): void {
  if (foreignMigrations(sqlite)) {
    throw new SpoolError('INVALID_OPTIONS', 'The database holds another drizzle-orm application\'s migrations (a __drizzle_migrations table without Spool\'s first migration): Spool needs a database file of its own, and would have written its migrations into that table', {
      details: { table: '__drizzle_migrations' },
    });
  }
  // Spool's tables and its migrations table appear in one transaction, so tables without the
  // latter are another program's: migrating would add Spool's tables beside them (or fail on a
  // name both use) and the pragmas after this check would switch the file to WAL, as the CLI refuses.
  const tables = foreignTables(sqlite);
  if (tables.length > 0) {
    throw new SpoolError('INVALID_OPTIONS', `The database is another program's (it has tables, ${tables.slice(0, 5).map((t) => JSON.stringify(t)).join(', ')}${tables.length > 5 ? ', …' : ''}, but none of Spool's migrations); Spool needs a database file of its own, and left this one as it was`, {
      details: { tables: tables.slice(0, 20) },
    });
  }
}

/** The tables of a database without drizzle's migrations table (SQLite's own left out); none on a spool's or an empty file. */
function foreignTables(sqlite: Database.Database): string[] {
  const tables = sqlite.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name").pluck().all() as string[];
  return tables.includes('__drizzle_migrations') ? [] : tables;
}

/**
 * True when the database has drizzle's migrations table but not Spool's first migration in it: it
 * belongs to another application that uses drizzle-orm (the table name is drizzle's default).
 */
export function foreignMigrations(sqlite: Database.Database): boolean {
  if (!sqlite.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'").get()) return false;
  return !sqlite.prepare('SELECT 1 FROM "__drizzle_migrations" WHERE hash = ?').get(FIRST_MIGRATION_HASH);
}

function appliedUpTo(sqlite: Database.Database): number {
  const table = sqlite
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'")
    .get();
  if (!table) return -1;
  const row = sqlite.prepare('SELECT MAX(created_at) AS at FROM "__drizzle_migrations"').get() as { at: number | null };
  return Number(row.at ?? -1);
}
