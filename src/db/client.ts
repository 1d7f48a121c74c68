/** Opening the database: a connection with its pragmas (connection.ts), then migrations and drizzle. */
import type Database from 'better-sqlite3';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import * as schema from './schema.js';
import { ownerRunning } from './lock.js';
import { migrate, refuseForeign } from './migrate.js';
import { openConnection, type Connection } from './connection.js';
import { refuseUnaddressableSeqs } from './seq-limit.js';

export { BUSY_TIMEOUT_MS, realPath, type Durability } from './connection.js';

/** An open database: the raw connection for prepared statements, drizzle for typed queries. */
export interface DbHandle extends Connection {
  readonly orm: BetterSQLite3Database<typeof schema>;
}

/** Opens (creating if needed) and migrates the database at `path`. */
export function openDatabase(path: string, durability: Connection['durability']): DbHandle {
  const connection = openConnection(path, durability, {
    check: refuseForeign,
    prepare: (sqlite: Database.Database, real: string) => {
      migrate(sqlite, { ownerRunning: () => ownerRunning(real) });
      refuseUnaddressableSeqs(sqlite);
    },
  });
  return { ...connection, orm: drizzle(connection.sqlite, { schema }) };
}
