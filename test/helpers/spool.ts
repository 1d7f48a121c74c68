/** Spools on a temp file per test: opened through one helper, all closed and removed after the test. */
import Database from 'better-sqlite3';
import { afterEach } from 'vitest';
import { createSpool, type Spool, type SpoolOptions } from '../../src/index.js';
import { tempDb } from './temp-db.js';

/** This test's file and every spool, connection and cleanup opened on it. */
export interface TempSpools {
  /**
   * A spool on this test's file (the temp directory is made on first use). Every call opens another
   * spool on the same file, as a restart or a second producer would; all are closed after the test.
   */
  open(options?: Omit<SpoolOptions, 'path'>): Spool;
  /** A better-sqlite3 connection of its own to this test's file, closed after the test. */
  connect(options?: Database.Options): Database.Database;
  /** Runs `fn` after the test, before the spools close (the last registered runs first). */
  onCleanup(fn: () => unknown): void;
  /** This test's database file (the temp directory is made on first use). */
  readonly path: string;
  /** The temp directory holding `path`, removed after the test. */
  readonly dir: string;
}

/**
 * Registers an afterEach that, after every test, runs the cleanups registered with `onCleanup` and
 * closes the connections from `connect` (last first), closes every spool from `open` (in order) and
 * removes the temp directory. Each step runs even if an earlier one throws; the first error is
 * rethrown. Call it once, at the top level of a test file; not for `describe.concurrent` tests,
 * which would share the one file.
 */
export function useTempSpools(): TempSpools {
  let db: ReturnType<typeof tempDb> | undefined;
  let spools: Spool[] = [];
  let cleanups: (() => unknown)[] = [];
  const file = () => (db ??= tempDb());

  afterEach(async () => {
    const steps = [...[...cleanups].reverse(), ...spools.map((s) => () => s.close()), () => db?.cleanup()];
    cleanups = [];
    spools = [];
    let failure: { error: unknown } | undefined;
    for (const step of steps) {
      try {
        await step();
      } catch (error) {
        failure ??= { error };
      }
    }
    db = undefined;
    if (failure) throw failure.error;
  });

  return {
    open(options = {}) {
      const spool = createSpool({ path: file().path, ...options });
      spools.push(spool);
      return spool;
    },
    connect(options) {
      const conn = new Database(file().path, options);
      cleanups.push(() => {
        if (conn.open && conn.inTransaction) conn.exec('ROLLBACK');
        conn.close();
      });
      return conn;
    },
    onCleanup(fn) {
      cleanups.push(fn);
    },
    get path() {
      return file().path;
    },
    get dir() {
      return file().dir;
    },
  };
}

/** Every stored message of `queue`, in any state (0 for a queue with none). */
export async function queueTotal(spool: Spool, queue: string): Promise<number> {
  const counts = (await spool.stats()).queues[queue];
  return counts ? Object.values(counts).reduce((a, b) => a + b, 0) : 0;
}
