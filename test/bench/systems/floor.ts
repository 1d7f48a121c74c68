/**
 * The raw floor: the least a durable SQLite queue can do per message. One autocommit statement
 * each for insert, claim and delete; C async loops (claim, await the handler, delete); idle loops
 * wake on an in-process signal from the insert. Nothing else: no lifecycle, no retries, no lease.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Durability, Payload } from '../common.js';
import type { BenchSystem, OpenOptions, QueueHandle } from './types.js';

/** Opens (creating) a floor database with the same journal and synchronous setting as Spool's. */
export function openFloorDb(path: string, durability: Durability): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}`);
  db.exec('CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY, payload TEXT NOT NULL, claimed INTEGER NOT NULL DEFAULT 0)');
  return db;
}

export const CLAIM_SQL = 'UPDATE jobs SET claimed=1 WHERE id=(SELECT id FROM jobs WHERE claimed=0 ORDER BY id LIMIT 1) RETURNING id, payload';

/** The raw floor. */
export const floorSystem: BenchSystem = {
  name: 'floor',
  note: 'hand-written better-sqlite3 queue: autocommit INSERT / claim UPDATE…RETURNING / DELETE, WAL, same synchronous; sendBatch = one transaction',
  async open(o: OpenOptions): Promise<QueueHandle> {
    const db = openFloorDb(o.path ?? join(o.dir, 'floor.db'), o.durability);
    const insert = db.prepare('INSERT INTO jobs (payload) VALUES (?)');
    const claim = db.prepare(CLAIM_SQL);
    const remove = db.prepare('DELETE FROM jobs WHERE id = ?');
    const count = db.prepare('SELECT count(*) FROM jobs').pluck();
    const insertMany = db.transaction((ps: Payload[]) => {
      for (const p of ps) insert.run(JSON.stringify(p));
    });

    let running = false;
    let idle: (() => void)[] = [];
    let done = 0;
    let target = Infinity;
    let reached: (() => void) | undefined;
    const loops: Promise<void>[] = [];

    function signal() {
      if (idle.length === 0) return;
      const waiting = idle;
      idle = [];
      for (const wake of waiting) wake();
    }

    async function loop(handler: (p: Payload) => unknown) {
      while (running) {
        const row = claim.get() as { id: number; payload: string } | undefined;
        if (!row) {
          await new Promise<void>((resolve) => idle.push(resolve));
          continue;
        }
        await handler(JSON.parse(row.payload) as Payload);
        remove.run(row.id);
        if (++done >= target) reached?.();
      }
    }

    return {
      async send(p) {
        insert.run(JSON.stringify(p));
        signal();
      },
      async sendBatch(ps) {
        insertMany(ps);
        signal();
      },
      async consume(handler) {
        running = true;
        for (let c = 0; c < o.concurrency; c++) loops.push(loop(handler));
      },
      untilDone(n) {
        if (done >= n) return Promise.resolve();
        target = n;
        return new Promise<void>((resolve) => (reached = resolve));
      },
      async remaining() {
        return count.get() as number;
      },
      async close() {
        running = false;
        signal();
        await Promise.all(loops);
        db.close();
      },
    };
  },
};
