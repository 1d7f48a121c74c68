/**
 * The claim reads its candidate rows in raw mode (arrays) and maps them by position to a
 * MessageRow (`toMessageRow`). The mapping must name every column of ROW_COLUMNS, in its order:
 * here a row with every column set to a distinct non-null value is read both ways.
 */
import { describe, expect, it } from 'vitest';
import { CANDIDATES_SQL, ROW_COLUMNS, toMessageRow } from '../../../src/db/repository.js';
import { runTransaction } from '../../../src/db/transaction.js';
import { newRow, useTempRepository } from '../../helpers/temp-repository.js';

describe('db/repository: rows read by position', () => {
  const t = useTempRepository();

  function insert(queue: string, priority: number): number {
    return runTransaction(t.db.sqlite, () => t.repo.insert(newRow(queue, { payload: `{"p":${priority}}`, priority })))!;
  }

  it('maps every column of ROW_COLUMNS to the property of the same name', () => {
    const seq = insert('q', 0);
    // Every column non-null and distinct, so that a column read into the wrong property shows.
    t.db.sqlite
      .prepare(
        `UPDATE messages SET failures = 2, attempt = 3, deliveries = 4, crashes = 5, visible_at = 6, lease_expires_at = 7,
           last_error = '{"code":"E"}', priority = 8, lease_token = 'tok', owner = 'own', created_at = 9, updated_at = 10,
           finished_at = 11, grp = 'g', attributes = '{"a":1}', source_queue = 'src', first_delivered_at = 12,
           schedule = 'sch', scheduled_for = 13, dedupe_id = 'dd' WHERE seq = ?`,
      )
      .run(seq);
    const sql = `SELECT ${ROW_COLUMNS} FROM messages WHERE seq = ?`;
    const named = t.db.sqlite.prepare(sql).get(seq) as Record<string, unknown>;
    const raw = t.db.sqlite.prepare(sql).raw().get(seq) as unknown[];
    expect(Object.values(named).every((value) => value !== null)).toBe(true);
    expect(Object.keys(named)).toHaveLength(raw.length);
    expect(toMessageRow(raw)).toEqual(named);
  });

  it('hands the claim the same rows, in the same order, as the query read by name', () => {
    for (const priority of [0, 5, 0, 9, 1]) insert('q', priority);
    insert('other', 3);
    const named = t.db.sqlite.prepare(CANDIDATES_SQL).all('q', 4);
    expect(t.repo.candidates('q', 4)).toEqual(named);
    // The claim's LIMIT-specific statements (one per limit) read the same way.
    expect(t.repo.candidates('q', 10)).toEqual(t.db.sqlite.prepare(CANDIDATES_SQL).all('q', 10));
    expect(t.repo.candidates('q', 10).map((row) => row.priority)).toEqual([9, 5, 1, 0, 0]);
  });
});
