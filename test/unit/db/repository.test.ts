/**
 * The claim reads its candidate rows in raw mode (arrays) and maps them by position to a
 * MessageRow (`toMessageRow`). The mapping must name every column of ROW_COLUMNS, in its order:
 * here a row with every column set to a distinct non-null value is read both ways.
 */
import { describe, expect, it } from 'vitest';
import { CANDIDATES_SQL, INSERT_CHUNK, ROW_COLUMNS, toMessageRow } from '../../../src/db/repository.js';
import { runTransaction } from '../../../src/db/transaction.js';
import { countsBothWays } from '../../helpers/counts.js';
import { NOW, newRow, useTempRepository } from '../../helpers/temp-repository.js';

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

describe('db/repository: insertMany', () => {
  const t = useTempRepository();
  const columns = (seq: number) => {
    const { seq: _seq, id: _id, payload: _payload, ...rest } = t.db.sqlite.prepare('SELECT * FROM messages WHERE seq = ?').get(seq) as Record<string, unknown>;
    return rest;
  };

  it('stores what one insert per row stores, on consecutive seqs, and counts them', () => {
    const template = newRow('q', { priority: -3, ready: 0, attributes: '{"a":{"DataType":"String","StringValue":"x"}}', sourceQueue: 'src', schedule: 'nightly', scheduledFor: 42 });
    const n = 2 * INSERT_CHUNK + 5;
    const payloads = Array.from({ length: n }, (_, i) => JSON.stringify({ i }));
    const first = runTransaction(t.db.sqlite, () => t.repo.insertMany(template, payloads));
    const one = runTransaction(t.db.sqlite, () => t.repo.insert({ ...template, payload: '{"one":1}' }))!;
    const seqs = t.db.sqlite.prepare("SELECT seq FROM messages WHERE payload != '{\"one\":1}' ORDER BY seq").pluck().all();
    expect(seqs).toEqual(payloads.map((_, i) => first + i));
    expect(t.db.sqlite.prepare('SELECT payload FROM messages WHERE seq >= ? AND seq < ? ORDER BY seq').pluck().all(first, first + n)).toEqual(payloads);
    expect(one).toBe(first + n);
    for (const seq of seqs as number[]) expect(columns(seq)).toEqual(columns(one));
    const { rows, kept } = countsBothWays(t.db.sqlite);
    expect(kept).toEqual(rows);
    expect(rows).toEqual([{ queue: 'q', state: 'pending', n: n + 1 }]);
  });

  it('runs midway once, when half of the rows are in', () => {
    for (const n of [2, 3, INSERT_CHUNK, 2 * INSERT_CHUNK + 1]) {
      const seen: number[] = [];
      const count = t.db.sqlite.prepare("SELECT count(*) FROM messages WHERE queue = 'm'").pluck();
      const before = count.get() as number;
      runTransaction(t.db.sqlite, () =>
        t.repo.insertMany(newRow('m'), Array.from({ length: n }, () => '{}'), () => seen.push((count.get() as number) - before)),
      );
      expect(seen).toHaveLength(1);
      expect(seen[0]).toBeGreaterThanOrEqual(n / 2);
      expect(seen[0]).toBeLessThanOrEqual(n / 2 + INSERT_CHUNK);
    }
  });

  it('refuses rows with a dedupe key or a group, which may not all be new', () => {
    expect(() => runTransaction(t.db.sqlite, () => t.repo.insertMany(newRow('q', { dedupeKey: 'key:k' }), ['{}', '{}']))).toThrow(/dedupe key or a group/);
    expect(() => runTransaction(t.db.sqlite, () => t.repo.insertMany(newRow('q', { group: 'g' }), ['{}', '{}']))).toThrow(/dedupe key or a group/);
    expect(t.db.sqlite.prepare('SELECT count(*) FROM messages').pluck().get()).toBe(0);
  });
});

describe('db/repository: history with its send entry implied', () => {
  const t = useTempRepository({ history: () => true });
  const stored = (seq: number) => t.db.sqlite.prepare('SELECT history FROM messages WHERE seq = ?').pluck().get(seq);
  const sent = { at: NOW, from: null, to: 'pending', attempt: 0 };

  it('stores no send entry, yet reads it back, live and once the row is archived at done', () => {
    const seq = runTransaction(t.db.sqlite, () => t.repo.insert(newRow('q')))!;
    expect(stored(seq)).toBe('');
    expect(t.repo.history(String(seq))?.entries).toEqual([sent]);
    const context = { ...newRow('q').context, attempt: 1, deliveries: 1 };
    const claimed = runTransaction(t.db.sqlite, () =>
      t.repo.write({ seq, queue: 'q', state: 'processing', via: 'activating', expectState: 'pending', expectToken: null, leaseToken: 'tok', owner: null, context, now: NOW + 5 }),
    );
    expect(claimed).toBe(true);
    expect(stored(seq)).toMatch(/^,\[/);
    const removed = runTransaction(t.db.sqlite, () => t.repo.remove(seq, 'q', 'processing', 'tok', null, { to: 'done', attempt: 1, at: NOW + 9, reason: 'done' }));
    expect(removed).toBe(true);
    expect(t.repo.history(String(seq))?.entries).toEqual([
      sent,
      { at: NOW + 5, from: 'pending', to: 'activating', attempt: 1 },
      { at: NOW + 5, from: 'activating', to: 'processing', attempt: 1 },
      { at: NOW + 9, from: 'processing', to: 'done', attempt: 1 },
    ]);
  });

  it('leaves the send entry implied in the rows of insertMany too, and writes it out for a row sent at a later attempt', () => {
    const first = runTransaction(t.db.sqlite, () => t.repo.insertMany(newRow('q'), ['{}', '{}']));
    expect([stored(first), stored(first + 1)]).toEqual(['', '']);
    const base = newRow('q');
    const later = runTransaction(t.db.sqlite, () => t.repo.insert({ ...base, context: { ...base.context, attempt: 2 } }))!;
    expect(t.repo.history(String(later))?.entries).toEqual([{ ...sent, attempt: 2 }]);
    expect(stored(later)).toBe(`[${NOW},-1,0,2]`);
  });

  const archived = (seq: number) => t.db.sqlite.prepare('SELECT id, state, reason, timeline, finished_at AS finishedAt FROM message_history WHERE seq = ?').get(seq);
  const claim = (seq: number, token: string) =>
    runTransaction(t.db.sqlite, () =>
      t.repo.write({ seq, queue: 'q', state: 'processing', via: 'activating', expectState: 'pending', expectToken: null, leaseToken: token, owner: null, context: { ...newRow('q').context, attempt: 1, deliveries: 1 }, now: NOW + 5 }),
    );

  it('archives nothing and deletes nothing when the fence does not hold (a stale token)', () => {
    const seq = runTransaction(t.db.sqlite, () => t.repo.insert(newRow('q')))!;
    expect(claim(seq, 'tok')).toBe(true);
    const end = { to: 'done' as const, attempt: 1, at: NOW + 9, reason: 'done' };
    expect(runTransaction(t.db.sqlite, () => t.repo.remove(seq, 'q', 'processing', 'stale', null, end))).toBe(false);
    expect(runTransaction(t.db.sqlite, () => t.repo.remove(seq, 'q', 'pending', null, null, end))).toBe(false);
    expect(t.repo.removeLeased(seq, 'stale', NOW + 9)).toBeUndefined();
    expect(archived(seq)).toBeUndefined();
    expect(stored(seq)).toMatch(/^,\[/);
  });

  it('archives and deletes together when called outside a transaction, the end entry appended', () => {
    const seq = runTransaction(t.db.sqlite, () => t.repo.insert(newRow('q')))!;
    expect(claim(seq, 'tok')).toBe(true);
    expect(t.db.sqlite.inTransaction).toBe(false);
    expect(t.repo.remove(seq, 'q', 'processing', 'tok', null, { to: 'dead', attempt: 1, at: NOW + 9, reason: 'deleted' })).toBe(true);
    expect(stored(seq)).toBeUndefined();
    expect(archived(seq)).toMatchObject({ id: String(seq), state: 'dead', reason: 'deleted', finishedAt: NOW + 9 });
    expect(t.repo.history(String(seq))?.entries.at(-1)).toEqual({ at: NOW + 9, from: 'processing', to: 'dead', attempt: 1 });
    expect(t.repo.history(String(seq))?.entries[0]).toEqual(sent);
  });

  it('archives a pull lease ended by its token, and a removal in the row\'s own state adds no entry', () => {
    const [a, b] = runTransaction(t.db.sqlite, () => [t.repo.insert(newRow('q'))!, t.repo.insert(newRow('q'))!]);
    expect(claim(a, 'ta')).toBe(true);
    expect(t.repo.removeLeased(a, 'ta', NOW + 7)).toEqual({ id: String(a), queue: 'q', grp: null, attempt: 1 });
    expect(archived(a)).toMatchObject({ state: 'done', reason: 'done', finishedAt: NOW + 7 });
    expect(t.repo.history(String(a))?.entries.at(-1)).toEqual({ at: NOW + 7, from: 'processing', to: 'done', attempt: 1 });
    expect(runTransaction(t.db.sqlite, () => t.repo.remove(b, 'q', 'pending', null, null, { attempt: 0, at: NOW + 8, reason: 'purged' }))).toBe(true);
    expect(archived(b)).toMatchObject({ state: 'pending', reason: 'purged', timeline: '' });
    expect(t.repo.history(String(b))?.entries).toEqual([sent]);
  });

  it('ends a pull lease from what its holder knows, without the row, still fenced on the token', () => {
    const [a, b] = runTransaction(t.db.sqlite, () => [t.repo.insert(newRow('q'))!, t.repo.insert(newRow('q'))!]);
    expect(claim(a, 'ta')).toBe(true);
    expect(claim(b, 'tb')).toBe(true);
    const known = (seq: number) => ({ id: String(seq), queue: 'q', grp: null, attempt: 1 });
    // A stale token changes nothing, whatever the holder claims to know.
    expect(t.repo.removeLeased(a, 'stale', NOW + 7, known(a))).toBeUndefined();
    expect(archived(a)).toBeUndefined();
    expect(stored(a)).toBeDefined();
    // The token holds: the same archive and counts as the path that reads the row.
    expect(t.repo.removeLeased(a, 'ta', NOW + 7, known(a))).toEqual(known(a));
    expect(t.repo.removeLeased(b, 'tb', NOW + 7)).toEqual(known(b));
    for (const seq of [a, b]) {
      expect(stored(seq)).toBeUndefined();
      expect(archived(seq)).toMatchObject({ state: 'done', reason: 'done', finishedAt: NOW + 7 });
      expect(t.repo.history(String(seq))?.entries.at(-1)).toEqual({ at: NOW + 7, from: 'processing', to: 'done', attempt: 1 });
    }
    const { rows, kept } = countsBothWays(t.db.sqlite);
    expect(kept).toEqual(rows);
  });

  it('reads an archived timeline stored with its send entry written out (before it was implied)', () => {
    t.db.sqlite
      .prepare('INSERT INTO message_history (seq, id, queue, state, reason, timeline, created_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      .run(9999, '9999', 'q', 'done', 'done', `[${NOW - 7},-1,0,0],[${NOW},2,4,1]`, NOW - 7, NOW);
    expect(t.repo.history('9999')?.entries).toEqual([
      { ...sent, at: NOW - 7 },
      { at: NOW, from: 'processing', to: 'done', attempt: 1 },
    ]);
  });

  it('reads a row stored with its send entry written out (before it was implied) as before', () => {
    const seq = runTransaction(t.db.sqlite, () => t.repo.insert(newRow('q')))!;
    t.db.sqlite.prepare('UPDATE messages SET history = ? WHERE seq = ?').run(`[${NOW - 7},-1,0,0],[${NOW},0,1,1]`, seq);
    expect(t.repo.history(String(seq))?.entries).toEqual([
      { ...sent, at: NOW - 7 },
      { at: NOW, from: 'pending', to: 'activating', attempt: 1 },
    ]);
  });
});
