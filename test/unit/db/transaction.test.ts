import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SpoolError } from '../../../src/errors.js';
import { isBusy, isFull, runSavepoint, runTransaction, sqliteCode } from '../../../src/db/transaction.js';
import { tempDb } from '../../helpers/temp-db.js';

describe('db/transaction', () => {
  let temp: ReturnType<typeof tempDb>;
  let db: Database.Database;
  const others: Database.Database[] = [];

  beforeEach(() => {
    temp = tempDb();
    db = new Database(temp.path);
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE t (v TEXT NOT NULL UNIQUE)');
  });

  afterEach(() => {
    for (const other of others.splice(0)) other.close();
    db.close();
    temp.cleanup();
  });

  /** A second connection that never waits for the lock, so contention shows as SQLITE_BUSY. */
  function second(): Database.Database {
    const other = new Database(temp.path);
    other.pragma('busy_timeout = 0');
    others.push(other);
    return other;
  }

  const insert = (value: string) => db.prepare('INSERT INTO t (v) VALUES (?)').run(value);
  const rows = (conn: Database.Database = db) =>
    (conn.prepare('SELECT v FROM t ORDER BY rowid').all() as { v: string }[]).map((r) => r.v);

  describe('runTransaction', () => {
    it('commits a synchronous callback and returns its result', () => {
      const result = runTransaction(db, () => {
        insert('a');
        insert('b');
        return 42;
      });
      expect(result).toBe(42);
      expect(db.inTransaction).toBe(false);
      expect(rows(second())).toEqual(['a', 'b']);
    });

    it('rolls back and rethrows when the callback throws', () => {
      const failure = new Error('nope');
      expect(() =>
        runTransaction(db, () => {
          insert('a');
          throw failure;
        }),
      ).toThrow(failure);
      expect(db.inTransaction).toBe(false);
      expect(rows()).toEqual([]);
    });

    it('rejects an async callback with SpoolError, and the row it wrote before its first await does not land', async () => {
      let resumed!: () => void;
      const afterAwait = new Promise<void>((resolve) => (resumed = resolve));
      let thrown: unknown;
      try {
        runTransaction(db, async () => {
          insert('written-before-await');
          await Promise.resolve();
          resumed();
        });
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(SpoolError);
      expect((thrown as SpoolError).code).toBe('INVALID_ARGUMENT');
      expect((thrown as SpoolError).message).toMatch(/returned a promise/);
      expect(db.inTransaction).toBe(false);
      expect(rows()).toEqual([]);
      expect(rows(second())).toEqual([]);

      // The rest of the async body ran later, outside any transaction; the connection still works.
      await afterAwait;
      expect(db.inTransaction).toBe(false);
      runTransaction(db, () => insert('after'));
      expect(rows()).toEqual(['after']);
    });

    it('rejects any thenable, not only native promises', () => {
      expect(() =>
        runTransaction(db, () => {
          insert('x');
          return { then: () => undefined };
        }),
      ).toThrow(SpoolError);
      expect(rows()).toEqual([]);
    });

    it('takes the write lock at BEGIN in immediate mode, and not in deferred mode', () => {
      const other = second();
      let blocked: unknown;
      runTransaction(db, () => {
        try {
          other.prepare('INSERT INTO t (v) VALUES (?)').run('other');
        } catch (error) {
          blocked = error;
        }
      });
      expect(isBusy(blocked)).toBe(true);

      runTransaction(
        db,
        () => {
          // Nothing read or written yet: a deferred transaction holds no lock.
          other.prepare('INSERT INTO t (v) VALUES (?)').run('other');
        },
        'deferred',
      );
      expect(rows()).toEqual(['other']);
    });

    it('keeps uncommitted writes invisible to another connection until the commit', () => {
      const other = second();
      let seenInside: string[] = [];
      runTransaction(db, () => {
        insert('a');
        seenInside = rows(other);
      });
      expect(seenInside).toEqual([]);
      expect(rows(other)).toEqual(['a']);
    });
  });

  describe('runSavepoint', () => {
    it('rolls back only its own writes when it throws', () => {
      runTransaction(db, () => {
        insert('outer-1');
        expect(() =>
          runSavepoint(db, () => {
            insert('inner');
            insert('outer-1'); // UNIQUE violation
          }),
        ).toThrow(/UNIQUE/);
        insert('outer-2');
      });
      expect(rows(second())).toEqual(['outer-1', 'outer-2']);
    });

    it('keeps its writes when it succeeds, committing them with the outer transaction', () => {
      runTransaction(db, () => {
        insert('outer');
        expect(runSavepoint(db, () => (insert('inner'), 'ok'))).toBe('ok');
      });
      expect(rows(second())).toEqual(['outer', 'inner']);
    });

    it('loses its writes when the outer transaction rolls back', () => {
      expect(() =>
        runTransaction(db, () => {
          runSavepoint(db, () => insert('inner'));
          throw new Error('outer fails');
        }),
      ).toThrow('outer fails');
      expect(rows()).toEqual([]);
    });

    it('isolates several savepoints from each other', () => {
      runTransaction(db, () => {
        for (const value of ['a', 'b', 'a', 'c']) {
          try {
            runSavepoint(db, () => insert(value));
          } catch {
            // the duplicate alone is dropped
          }
        }
      });
      expect(rows()).toEqual(['a', 'b', 'c']);
    });

    it('rejects an async callback too', () => {
      runTransaction(db, () => {
        expect(() =>
          runSavepoint(db, async () => {
            insert('inner');
          }),
        ).toThrow(SpoolError);
        insert('outer');
      });
      expect(rows()).toEqual(['outer']);
    });
  });

  describe('error classification', () => {
    it('classifies codes', () => {
      for (const code of ['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_LOCKED']) {
        expect(isBusy({ code }), code).toBe(true);
        expect(isFull({ code }), code).toBe(false);
      }
      for (const code of ['SQLITE_FULL', 'SQLITE_IOERR_WRITE']) {
        expect(isFull({ code }), code).toBe(true);
        expect(isBusy({ code }), code).toBe(false);
      }
      for (const value of [{ code: 'SQLITE_CONSTRAINT_UNIQUE' }, { code: 'ENOSPC' }, { code: 5 }, new Error('busy'), null, undefined, 'SQLITE_BUSY']) {
        expect(isBusy(value)).toBe(false);
        expect(isFull(value)).toBe(false);
      }
      expect(sqliteCode({ code: 'SQLITE_CONSTRAINT_UNIQUE' })).toBe('SQLITE_CONSTRAINT_UNIQUE');
      expect(sqliteCode({ code: 'ENOSPC' })).toBeUndefined();
      expect(sqliteCode(null)).toBeUndefined();
    });

    it('classifies a real lock conflict as busy', () => {
      const other = second();
      let caught: unknown;
      runTransaction(db, () => {
        insert('held');
        try {
          runTransaction(other, () => undefined);
        } catch (error) {
          caught = error;
        }
      });
      expect(sqliteCode(caught)).toBe('SQLITE_BUSY');
      expect(isBusy(caught)).toBe(true);
      expect(isFull(caught)).toBe(false);
    });

    it('classifies a real full database as full', () => {
      const pages = db.pragma('page_count', { simple: true }) as number;
      db.pragma(`max_page_count = ${pages}`);
      let caught: unknown;
      try {
        runTransaction(db, () => insert('x'.repeat(64 * 1024)));
      } catch (error) {
        caught = error;
      }
      expect(sqliteCode(caught)).toBe('SQLITE_FULL');
      expect(isFull(caught)).toBe(true);
      expect(isBusy(caught)).toBe(false);
      expect(rows()).toEqual([]);
    });
  });
});
