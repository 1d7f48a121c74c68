/**
 * The spool's storage, opened on first use: the database connection, its repository and the group
 * committer. Everything that touches the file goes through `open()`, which refuses with CLOSED once
 * the database is closed, so no call after close() meets a raw "connection is not open".
 */
import { openDatabase, type DbHandle } from './db/client.js';
import { createQueuesRepository, type QueuesRepository } from './db/queues-repository.js';
import { createRepository, type Repository } from './db/repository.js';
import { runTransaction } from './db/transaction.js';
import { SpoolError } from './errors.js';
import type { EventBus } from './events.js';
import type { ResolvedOptions } from './options.js';
import { createCommitter, toStorageError, type Committer } from './runtime/committer.js';

/** An open storage. */
export interface OpenStorage {
  db: DbHandle;
  repo: Repository;
  /** The queue registry and the FIFO deduplication window. */
  queues: QueuesRepository;
  committer: Committer;
}

/** The lazily opened storage. */
export interface Storage {
  /** Opens on first use; throws CLOSED once closed. */
  open(): OpenStorage;
  /** The storage if it was ever opened (for shutdown steps). */
  readonly opened: OpenStorage | undefined;
  /**
   * A transaction run directly by an API call (settings, requeue, purge): a locked or full
   * database rejects the call with a coded STORAGE_BUSY / STORAGE_FULL, any other failure (a
   * damaged file) with STORAGE_ERROR, never a raw SqliteError; and a file deleted under us with
   * STORAGE_LOST rather than a success never kept.
   */
  transaction<T>(fn: () => T): T;
  /** Closes the connection; every later open() throws CLOSED. */
  close(): void;
}

/** Creates the storage for `opts.path`; nothing is opened yet. `history` tells whether transitions are recorded now. */
export function createStorage(opts: ResolvedOptions, bus: EventBus, history?: () => boolean): Storage {
  let opened: OpenStorage | undefined;
  let closed = false;

  function open(): OpenStorage {
    if (closed) throw new SpoolError('CLOSED', 'The spool is closed');
    if (!opened) {
      const db = openDatabase(opts.path, opts.durability);
      const repo = createRepository(db, { history });
      opened = { db, repo, queues: createQueuesRepository(db, repo.counters), committer: createCommitter(db.sqlite, bus, opts.clock, () => db.intact(), db.durability) };
    }
    return opened;
  }

  return {
    open,
    get opened() {
      return opened;
    },
    transaction(fn) {
      const { db } = open();
      let result;
      try {
        result = runTransaction(db.sqlite, fn);
      } catch (error) {
        throw toStorageError(error);
      }
      if (!db.intact()) throw new SpoolError('STORAGE_LOST', 'The database file was deleted or replaced; this change was not kept');
      return result;
    },
    close() {
      closed = true;
      opened?.db.close();
    },
  };
}
