/**
 * A damaged database file (SQLITE_CORRUPT): every call that meets the damage rejects with a
 * SpoolError, STORAGE_ERROR, as the README promises for "another SQLite failure", never with
 * better-sqlite3's raw SqliteError. Reads outside a transaction (get, dead) and the API's own
 * transactions (purge, remove, requeue) are covered.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SpoolError } from '../../src/index.js';
import { useTempSpools } from '../helpers/spool.js';

const spools = useTempSpools();

/**
 * Overwrites a leaf page in the middle of the messages table with garbage, after a checkpoint left
 * the WAL empty. Not the last one: opening the file reads the newest row.
 */
function damageMiddleOfMessages() {
  const conn = spools.connect();
  conn.pragma('wal_checkpoint(TRUNCATE)');
  const pageSize = conn.pragma('page_size', { simple: true }) as number;
  const leaves = conn.prepare("SELECT pageno FROM dbstat WHERE name = 'messages' AND pagetype = 'leaf' ORDER BY path").pluck().all() as number[];
  const page = leaves[Math.floor(leaves.length / 2)]!;
  conn.close();
  const fd = openSync(spools.path, 'r+');
  writeSync(fd, Buffer.alloc(pageSize, 0xab), 0, pageSize, (page - 1) * pageSize);
  closeSync(fd);
}

describe('a damaged database file', () => {
  it('rejects get(), dead(), purge(), remove() and requeue() with STORAGE_ERROR, a SpoolError', async () => {
    const first = spools.open();
    // Enough rows for the table to span many leaf pages.
    const ids = await first.sendBatch('jobs', Array.from({ length: 2000 }, (_, i) => ({ i, pad: 'y'.repeat(300) })));
    await first.close();
    damageMiddleOfMessages();

    const spool = spools.open();
    // The first message whose get() fails sits on the damaged page.
    let damaged: string | undefined;
    let got: unknown;
    for (const id of ids) {
      got = await spool.get(id).catch((e: unknown) => e);
      if (got instanceof Error) {
        damaged = id;
        break;
      }
    }
    expect(damaged).toBeDefined();
    const outcomes = {
      get: got,
      dead: await spool.dead().catch((e: unknown) => e),
      requeue: await spool.requeue({ ids: [damaged!] }).catch((e: unknown) => e),
      remove: await spool.remove([damaged!]).catch((e: unknown) => e),
      purge: await spool.purge('jobs', { state: 'pending' }).catch((e: unknown) => e),
    };
    for (const [call, outcome] of Object.entries(outcomes)) {
      expect(outcome, call).toBeInstanceOf(SpoolError);
      expect(outcome, call).toMatchObject({ code: 'STORAGE_ERROR' });
      expect((outcome as SpoolError).cause, call).toMatchObject({ code: expect.stringMatching(/^SQLITE_CORRUPT/) });
    }
  });
});
