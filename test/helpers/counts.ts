/**
 * The per-queue, per-state counts two ways, for tests that check `counters` against the rows: from
 * the table itself, and as kept (stored counts plus the rows above the fold mark, which are not
 * in the stored counts yet). Written out here rather than taken from src/db/counters.ts, so that a
 * mistake there cannot hide in the check.
 */
import type Database from 'better-sqlite3';

/** `rows` from `GROUP BY queue, state`, `kept` from counters and the unfolded rows; both sorted. */
export function countsBothWays(conn: Database.Database): { rows: unknown[]; kept: unknown[] } {
  return {
    rows: conn.prepare('SELECT queue, state, count(*) AS n FROM messages GROUP BY queue, state ORDER BY queue, state').all(),
    kept: conn
      .prepare(
        `SELECT queue, state, sum(n) AS n FROM (
           SELECT scope AS queue, name AS state, n FROM counters WHERE scope != ''
           UNION ALL SELECT queue, state, count(*) FROM messages
             WHERE seq > (SELECT n FROM counters WHERE scope = '' AND name = 'last_seq') GROUP BY queue, state)
         GROUP BY queue, state HAVING sum(n) != 0 ORDER BY queue, state`,
      )
      .all(),
  };
}
