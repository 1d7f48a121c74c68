/** A repository over a fresh temp database per test, for tests below the runtime (test/unit/db). */
import { afterEach, beforeEach } from 'vitest';
import { compiledMessageMachine as machine } from '../../machines/compiled.js';
import { openDatabase, type DbHandle } from '../../src/db/client.js';
import { createRepository, type NewMessage, type RepositoryOptions } from '../../src/db/repository.js';
import { tempDb } from './temp-db.js';

/** The clock value the helpers' rows are sent at. */
export const NOW = 1_000_000;

/** Opens a database and its repository before each test and removes them after it. */
export function useTempRepository(options?: RepositoryOptions): { readonly db: DbHandle; readonly repo: ReturnType<typeof createRepository> } {
  let temp: ReturnType<typeof tempDb> | undefined;
  let db: DbHandle | undefined;
  let repo: ReturnType<typeof createRepository> | undefined;
  beforeEach(() => {
    temp = tempDb();
    db = openDatabase(temp.path, 'normal');
    repo = createRepository(db, options);
  });
  afterEach(() => {
    db?.close();
    temp?.cleanup();
  });
  return {
    get db() {
      if (!db) throw new Error('useTempRepository: used outside a test');
      return db;
    },
    get repo() {
      if (!repo) throw new Error('useTempRepository: used outside a test');
      return repo;
    },
  };
}

/** A ready pending row of `queue`, as a send at NOW would insert it. */
export function newRow(queue: string, extra: Partial<NewMessage> = {}): NewMessage {
  return { queue, payload: '{}', context: machine.initial({ visibleAt: NOW }).context, priority: 0, ready: 1, dedupeKey: null, now: NOW, ...extra };
}
