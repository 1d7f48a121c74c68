/** Reads through a second connection, as an operator with the sqlite3 shell would see the file. */
import Database from 'better-sqlite3';

/** Runs `read` on a read-only connection of its own to `path`, closed again before it returns. */
export function readDb<T>(path: string, read: (conn: Database.Database) => T): T {
  const conn = new Database(path, { readonly: true });
  try {
    return read(conn);
  } finally {
    conn.close();
  }
}

/** Rows in the file's messages table, in any state. */
export function countRows(path: string): number {
  return readDb(path, (conn) => (conn.prepare('SELECT COUNT(*) AS n FROM messages').get() as { n: number }).n);
}

/** The stored settings overrides row, if any. */
export function overridesRow(path: string): { overrides: string; version: number } | undefined {
  return readDb(
    path,
    (conn) => conn.prepare('SELECT overrides, version FROM settings_overrides WHERE id = 1').get() as { overrides: string; version: number } | undefined,
  );
}
