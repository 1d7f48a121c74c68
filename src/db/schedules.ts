/**
 * All SQL over the `schedules` table. Every "now" is a bound parameter from the injected clock.
 * The runner's only write is `advance`: a compare-and-set of the cursor (the last tick sent) and
 * the next tick, made in the same transaction as the tick's message insert.
 */
import type Database from 'better-sqlite3';

/** A schedule row as stored. */
export interface ScheduleRow {
  name: string;
  /** JSON of the stored spec (see schedules/spec.ts). */
  spec: string;
  enabled: 0 | 1;
  anchor: number;
  /** The last tick sent (epoch ms), or null before the first. */
  cursor: number | null;
  /** The next tick to send (epoch ms); null when disabled or when the cron never fires again. */
  nextAt: number | null;
  createdAt: number;
  updatedAt: number;
}

const COLUMNS = `name, spec, enabled, anchor, cursor, next_at AS nextAt, created_at AS createdAt, updated_at AS updatedAt`;

/** Creates the statements over an open connection. */
export function createScheduleStore(sqlite: Database.Database) {
  const byName = sqlite.prepare(`SELECT ${COLUMNS} FROM schedules WHERE name = ?`);
  const all = sqlite.prepare(`SELECT ${COLUMNS} FROM schedules ORDER BY name`);
  const insert = sqlite.prepare(
    `INSERT INTO schedules (name, spec, enabled, anchor, cursor, next_at, created_at, updated_at) VALUES (?, ?, ?, ?, NULL, ?, ?, ?)`,
  );
  const update = sqlite.prepare(`UPDATE schedules SET spec = ?, enabled = ?, anchor = ?, next_at = ?, updated_at = ? WHERE name = ?`);
  const remove = sqlite.prepare('DELETE FROM schedules WHERE name = ?');
  // Both read through the partial index schedules_next (enabled = 1).
  const nearest = sqlite.prepare('SELECT MIN(next_at) FROM schedules WHERE enabled = 1').pluck();
  const due = sqlite.prepare(`SELECT ${COLUMNS} FROM schedules WHERE enabled = 1 AND next_at <= ? ORDER BY next_at LIMIT ?`);
  const advance = sqlite.prepare(
    `UPDATE schedules SET cursor = ?, next_at = ?
     WHERE name = ? AND enabled = 1 AND spec = ? AND anchor = ? AND cursor IS ? AND next_at IS ?`,
  );

  return {
    /** One schedule by name. */
    get: (name: string) => byName.get(name) as ScheduleRow | undefined,
    /** Every schedule, by name. */
    list: () => all.all() as ScheduleRow[],
    /** Stores a new schedule. */
    insert(row: { name: string; spec: string; enabled: boolean; anchor: number; nextAt: number | null; now: number }): void {
      insert.run(row.name, row.spec, row.enabled ? 1 : 0, row.anchor, row.nextAt, row.now, row.now);
    },
    /** Changes a schedule's spec, flag, anchor and next tick; the cursor (history) stays. */
    update(row: { name: string; spec: string; enabled: boolean; anchor: number; nextAt: number | null; now: number }): void {
      update.run(row.spec, row.enabled ? 1 : 0, row.anchor, row.nextAt, row.now, row.name);
    },
    /** Deletes a schedule; false when there was none. */
    remove: (name: string) => remove.run(name).changes === 1,
    /** The nearest next tick across every enabled schedule, or null. */
    nearest: () => (nearest.get() as number | null | undefined) ?? null,
    /** Enabled schedules with a tick due at `now`, nearest first, at most `limit`. */
    due: (now: number, limit: number) => due.all(now, limit) as ScheduleRow[],
    /**
     * Compare-and-set: moves the cursor and the next tick only if the row is still exactly as it was
     * read (same spec, anchor, cursor and next tick, still enabled). False when anyone changed it.
     */
    advance(read: ScheduleRow, cursor: number | null, nextAt: number | null): boolean {
      return advance.run(cursor, nextAt, read.name, read.spec, read.anchor, read.cursor, read.nextAt).changes === 1;
    },
  };
}

/** The schedule store's type. */
export type ScheduleStore = ReturnType<typeof createScheduleStore>;
