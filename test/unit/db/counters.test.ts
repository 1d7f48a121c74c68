/**
 * The fold of new rows into `counters`, at the repository: before its first update or delete of a
 * message row, a transaction that inserted every unfolded row folds them itself (in its deltas,
 * with one write of the mark), and any other transaction folds every unfolded row in SQL. Either
 * way the stored counts plus the unfolded rows must equal the rows, the arrivals must count each
 * new pending row once, and a savepoint that rolls back must take its part of the fold with it.
 */
import { assert, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/db/client.js';
import { FOLD_EVERY } from '../../../src/db/counters.js';
import { createRepository } from '../../../src/db/repository.js';
import { runTransaction } from '../../../src/db/transaction.js';
import { countsBothWays } from '../../helpers/counts.js';
import { newRow as row, NOW, useTempRepository } from '../../helpers/temp-repository.js';

describe('db/counters: the fold', () => {
  const t = useTempRepository();

  /** Takes a pending row to done, as a claim and a settle would (one delete). */
  const finish = (seq: number, queue: string) => t.repo.remove(seq, queue, 'pending', null, null, { to: 'done', attempt: 1, at: NOW, reason: 'done' });

  const read = <T>(sql: string): T => t.db.sqlite.prepare(sql).pluck().get() as T;
  const mark = () => read<number>("SELECT n FROM counters WHERE scope = '' AND name = 'last_seq'");
  const arrivals = (queue: string) => read<number | undefined>(`SELECT n FROM counters WHERE scope = '' AND name = 'arrivals:${queue}'`) ?? 0;
  const stored = (queue: string) =>
    t.db.sqlite.prepare("SELECT name, n FROM counters WHERE scope = ? AND n != 0 ORDER BY name").all(queue) as { name: string; n: number }[];

  /** Stored counts plus the rows above the mark, against the rows themselves. */
  function expectExact() {
    const { rows, kept } = countsBothWays(t.db.sqlite);
    expect(kept).toEqual(rows);
  }

  it('stays exact when a transaction changes a row it inserted (a send claimed in its own commit)', () => {
    runTransaction(t.db.sqlite, () => {
      const a = t.repo.insert(row('q'))!;
      t.repo.insert(row('q'));
      expect(finish(a, 'q')).toBe(true);
    });
    // Both rows are folded (the mark passed them), and the finished one left the pending count.
    expect(mark()).toBe(2);
    expect(stored('q')).toEqual([{ name: 'pending', n: 1 }]);
    expect(arrivals('q')).toBe(2);
    expectExact();
  });

  it('folds rows it did not insert, all at once, before its first change', () => {
    runTransaction(t.db.sqlite, () => void t.repo.insert(row('other')));
    expect(mark()).toBe(0);
    runTransaction(t.db.sqlite, () => {
      const b = t.repo.insert(row('q'))!;
      expect(finish(b, 'q')).toBe(true);
    });
    expect(mark()).toBe(2);
    expect(stored('other')).toEqual([{ name: 'pending', n: 1 }]);
    expect(stored('q')).toEqual([]);
    expect([arrivals('other'), arrivals('q')]).toEqual([1, 1]);
    expectExact();
  });

  it('folds in SQL when its own rows are not all that is unfolded', () => {
    runTransaction(t.db.sqlite, () => {
      const a = t.repo.insert(row('q'))!;
      // A statement outside the repository changes no count: the row stays unfolded, as inserted.
      t.db.sqlite.prepare('UPDATE messages SET priority = 5 WHERE seq = ?').run(a);
      const b = t.repo.insert(row('q'))!;
      expect(finish(b, 'q')).toBe(true);
    });
    expect(mark()).toBe(2);
    expect(stored('q')).toEqual([{ name: 'pending', n: 1 }]);
    expect(arrivals('q')).toBe(2);
    expectExact();
  });

  it('loses its part of the fold with a savepoint that rolls back', () => {
    runTransaction(t.db.sqlite, () => {
      const a = t.repo.insert(row('q'))!;
      expect(() =>
        runTransaction(t.db.sqlite, () => {
          expect(finish(a, 'q')).toBe(true);
          throw new Error('rolled back');
        }),
      ).toThrow('rolled back');
      // Back to an unfolded row, which the outer transaction then changes for good.
      expect(finish(a, 'q')).toBe(true);
      t.repo.insert(row('q'));
    });
    expect(stored('q')).toEqual([]);
    expect(arrivals('q')).toBe(1);
    expectExact();
  });

  it('returns to the right state from nested savepoints, whichever rolls back, with or without writes since the mark', () => {
    const fail = (fn: () => void) => expect(() => runTransaction(t.db.sqlite, () => (fn(), assert.fail('rolled back')))).toThrow('rolled back');
    runTransaction(t.db.sqlite, () => {
      const a = t.repo.insert(row('q'))!;
      const b = t.repo.insert(row('q'))!;
      // Two marks with no write between them share one copy: the inner rolls back, then the outer.
      fail(() => fail(() => expect(finish(a, 'q')).toBe(true)));
      // A savepoint that commits keeps its writes.
      runTransaction(t.db.sqlite, () => expect(finish(a, 'q')).toBe(true));
      // A mark with no write after it rolls back to the state it saw, that write included.
      fail(() => undefined);
      // The inner one commits into the outer, which then rolls back both.
      fail(() => runTransaction(t.db.sqlite, () => expect(finish(b, 'q')).toBe(true)));
      expect(t.repo.countLive('q')).toBe(1);
    });
    expect(arrivals('q')).toBe(2);
    expect(t.repo.countLive('q')).toBe(1);
    expect(stored('q')).toEqual([{ name: 'pending', n: 1 }]);
    expectExact();
    // A savepoint that rolls back in a transaction that wrote nothing before it leaves it clean.
    runTransaction(t.db.sqlite, () => fail(() => t.repo.insert(row('r'))));
    expect(stored('r')).toEqual([]);
    expect(arrivals('r')).toBe(0);
    expectExact();
  });

  it('folds before every kind of change: a move, a purge, a promotion, a lease ended', () => {
    const others = runTransaction(t.db.sqlite, () => [t.repo.insert(row('a'))!, t.repo.insert(row('a'))!, t.repo.insert(row('b'))!]);
    // Each in a transaction of its own, on rows another transaction inserted and nobody folded.
    expect(mark()).toBe(0);
    runTransaction(t.db.sqlite, () => expect(t.repo.move({ seq: others[0]!, queue: 'a', state: 'pending', grp: null }, 'dlq', 'a', NOW)).toBe(true));
    expect(mark()).toBe(3);
    expectExact();
    const more = runTransaction(t.db.sqlite, () => [t.repo.insert(row('c'))!, t.repo.insert(row('c'))!]);
    runTransaction(t.db.sqlite, () => expect(t.repo.purgeBatch('c', ['pending'], 10)).toHaveLength(2));
    expect(stored('c')).toEqual([]);
    expect(arrivals('c')).toBe(2);
    expectExact();
    const delayed = runTransaction(t.db.sqlite, () => t.repo.insert({ ...row('d'), ready: 0, context: { ...row('d').context, visibleAt: NOW + 10 } })!);
    runTransaction(t.db.sqlite, () => expect([...t.repo.promoteDue(NOW + 10)]).toEqual(['d']));
    expect(mark()).toBe(delayed);
    expectExact();
    const leased = runTransaction(t.db.sqlite, () => t.repo.insert(row('e'))!);
    t.db.sqlite.prepare("UPDATE messages SET state = 'processing', lease_token = 'tok' WHERE seq = ?").run(leased);
    // That hand edit changed an unfolded row's state: the fold counts it where it is now.
    runTransaction(t.db.sqlite, () => expect(t.repo.removeLeased(leased, 'tok', NOW)).toMatchObject({ queue: 'e' }));
    expectExact();
    expect(more).toHaveLength(2);
    expect([arrivals('a'), arrivals('b'), arrivals('d')]).toEqual([2, 1, 1]);
  });

  it('starts from what its last commit left only while no other connection has committed since', () => {
    const other = openDatabase(t.db.path, 'normal');
    try {
      const otherRepo = createRepository(other);
      const a = runTransaction(t.db.sqlite, () => t.repo.insert(row('q'))!);
      // Another connection sends, then takes a row to done: seqs and the mark moved under us.
      const b = runTransaction(other.sqlite, () => otherRepo.insert(row('q'))!);
      runTransaction(other.sqlite, () => expect(otherRepo.remove(a, 'q', 'pending', null, null, { to: 'done', attempt: 1, at: NOW, reason: 'done' })).toBe(true));
      expect(b).toBe(a + 1);
      const c = runTransaction(t.db.sqlite, () => t.repo.insert(row('q'))!);
      expect(c).toBe(b + 1);
      expectExact();
      // And again with no one else in between: the next seq follows on, the fold still exact.
      const d = runTransaction(t.db.sqlite, () => {
        const seq = t.repo.insert(row('q'))!;
        expect(finish(c, 'q')).toBe(true);
        return seq;
      });
      expect(d).toBe(c + 1);
      expect(mark()).toBe(d);
      expectExact();
      // A rolled-back transaction leaves nothing cached: its seq is handed out again, its mark move undone.
      expect(() =>
        runTransaction(t.db.sqlite, () => {
          t.repo.insert(row('q'));
          expect(finish(d, 'q')).toBe(true);
          throw new Error('rolled back');
        }),
      ).toThrow('rolled back');
      expect(mark()).toBe(d);
      const e = runTransaction(other.sqlite, () => otherRepo.insert(row('q'))!);
      expect(e).toBe(d + 1);
      expect(runTransaction(t.db.sqlite, () => t.repo.insert(row('q'))!)).toBe(e + 1);
      runTransaction(t.db.sqlite, () => expect(finish(e, 'q')).toBe(true));
      expectExact();
    } finally {
      other.close();
    }
  });

  it('counts nothing when the write of the mark fails, and leaves the rows unfolded', () => {
    // The mark's write fails as a full disk would fail it: the statement is undone, the
    // transaction goes on, and the caller commits what else it did.
    t.db.sqlite.exec(`CREATE TEMP TRIGGER refuse_mark BEFORE UPDATE ON counters WHEN NEW.name = 'last_seq'
      BEGIN SELECT RAISE(ABORT, 'mark write refused'); END`);
    runTransaction(t.db.sqlite, () => {
      const a = t.repo.insert(row('q'))!;
      expect(() => finish(a, 'q')).toThrow('mark write refused');
    });
    t.db.sqlite.exec('DROP TRIGGER temp.refuse_mark');
    expect(mark()).toBe(0);
    expect(stored('q')).toEqual([]);
    expectExact();
    // The next change folds the row once.
    runTransaction(t.db.sqlite, () => expect(finish(1, 'q')).toBe(true));
    expect(arrivals('q')).toBe(1);
    expectExact();
  });

  it('moves the mark to its newest row, not past a seq that a dedupe hit used up', () => {
    runTransaction(t.db.sqlite, () => {
      const a = t.repo.insert({ ...row('q'), dedupeKey: 'key:k' })!;
      expect(t.repo.insert({ ...row('q'), dedupeKey: 'key:k' })).toBeUndefined();
      t.repo.insert(row('other'));
      expect(t.repo.insert({ ...row('q'), dedupeKey: 'key:k' })).toBeUndefined();
      expect(finish(a, 'q')).toBe(true);
    });
    expect(mark()).toBe(3);
    expect(arrivals('other')).toBe(1);
    expectExact();
  });

  it('folds a batch of FOLD_EVERY rows or more at its commit', () => {
    runTransaction(t.db.sqlite, () => {
      for (let i = 0; i < FOLD_EVERY + 36; i++) t.repo.insert(row(i % 2 === 0 ? 'even' : 'odd'));
    });
    expect(mark()).toBe(FOLD_EVERY + 36);
    const half = (FOLD_EVERY + 36) / 2;
    expect(stored('even')).toEqual([{ name: 'pending', n: half }]);
    expect(stored('odd')).toEqual([{ name: 'pending', n: half }]);
    expect([arrivals('even'), arrivals('odd')]).toEqual([half, half]);
    expectExact();
  });
});
