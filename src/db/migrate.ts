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
import { runTransaction } from './transaction.js';

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

/** Brings the schema up to date; a no-op when it already is. */
export function migrate(sqlite: Database.Database): void {
  const latest = migrations.at(-1)?.folderMillis ?? 0;
  if (appliedUpTo(sqlite) >= latest) return;
  runTransaction(sqlite, () => {
    sqlite.exec(
      'CREATE TABLE IF NOT EXISTS "__drizzle_migrations" (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric)',
    );
    const applied = appliedUpTo(sqlite);
    const insert = sqlite.prepare('INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (?, ?)');
    for (const migration of migrations) {
      if (migration.folderMillis <= applied) continue;
      for (const statement of migration.sql) if (statement.trim()) sqlite.exec(statement);
      insert.run(migration.hash, migration.folderMillis);
    }
  });
}

function appliedUpTo(sqlite: Database.Database): number {
  const table = sqlite
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'")
    .get();
  if (!table) return -1;
  const row = sqlite.prepare('SELECT MAX(created_at) AS at FROM "__drizzle_migrations"').get() as { at: number | null };
  return Number(row.at ?? -1);
}
