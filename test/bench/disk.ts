/**
 * The `disk` workload: bytes on disk per pending message. A fresh database of each system gets
 * `depth` ~100-byte payloads through its batch send (`--batch` per call) and nothing consumes
 * them; the system is closed, then a new connection runs `PRAGMA wal_checkpoint(TRUNCATE)` and the
 * size of the database file plus its WAL (empty after the checkpoint) is divided by `depth`.
 * Free pages count: they are disk the application pays for. dbstat then says which B-tree holds
 * the bytes (the table, each index, SQLite's own), for the per-system breakdown in the results.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { collectGarbage, tempDir } from './common.js';
import type { BenchSystem } from './systems/types.js';
import { fillTemplate } from './templates.js';
import type { Metrics } from './workloads.js';

/** Bytes in one B-tree (dbstat's name: a table, an index, or sqlite_schema). */
export interface BtreeBytes {
  name: string;
  bytes: number;
}

/** One disk measurement. */
export interface DiskResult {
  metrics: Metrics;
  btrees: BtreeBytes[];
}

/** Fills a fresh `system` database with `depth` pending messages and measures its size. */
export async function measureDisk(system: BenchSystem, depth: number, batch: number, base: string | undefined): Promise<DiskResult> {
  const tmp = tempDir(base, 'spool-bench-disk-');
  try {
    const path = join(tmp.dir, 'disk.db');
    await fillTemplate(system, path, depth, batch);
    const db = new Database(path);
    try {
      db.pragma('wal_checkpoint(TRUNCATE)');
      const wal = existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0;
      const file = statSync(path).size;
      const pageSize = db.pragma('page_size', { simple: true }) as number;
      const freePages = db.pragma('freelist_count', { simple: true }) as number;
      const btrees = (db.prepare('SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC').all() as BtreeBytes[]).filter((b) => b.bytes > 0);
      collectGarbage();
      return {
        metrics: { 'B/msg': (file + wal) / depth, 'MB': (file + wal) / 2 ** 20, 'free MB': (freePages * pageSize) / 2 ** 20 },
        btrees,
      };
    } finally {
      db.close();
    }
  } finally {
    tmp.cleanup();
  }
}
