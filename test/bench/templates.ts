/**
 * Deep queues are filled once per size and copied for every run (a copy is a fresh file).
 * Spool's are filled through sendBatch; the boot template then turns the first rows into
 * in-flight rows directly in SQL, with a snapshot copied from a row a real claim wrote.
 */
import { copyFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createSpool } from '../../src/index.js';
import { collectGarbage, deferred, payloads, tempDir } from './common.js';
import { SPOOL_QUEUE } from './systems/spool.js';
import type { BenchSystem } from './systems/types.js';

const FILL_CHUNK = 10_000;

/** Fills a new database of `system` with `depth` pending messages at `path` (nothing consumes them). */
export async function fillTemplate(system: BenchSystem, path: string, depth: number): Promise<number> {
  const t0 = Date.now();
  const handle = await system.open({ dir: join(path, '..'), durability: 'normal', concurrency: 1, path });
  for (let i = 0; i < depth; i += FILL_CHUNK) await handle.sendBatch(payloads(i, Math.min(FILL_CHUNK, depth - i)));
  const stored = await handle.remaining();
  await handle.close();
  if (stored !== depth) throw new Error(`${system.name} template: ${stored} rows stored, expected ${depth}`);
  if (existsSync(`${path}-wal`)) {
    // The template must be one self-contained file; close() normally checkpoints and removes the WAL.
    const db = new Database(path);
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
  }
  collectGarbage();
  return Date.now() - t0;
}

/** The columns of a row a real claim put in flight, to copy onto many rows. */
export interface InflightShape {
  snapshot: string;
  attempt: number;
  deliveries: number;
  leaseExpiresAt: number | null;
  updatedAt: number;
}

/** Claims one message in a throwaway spool and returns its in-flight row's columns. */
export async function realInflightShape(base: string | undefined): Promise<InflightShape> {
  const tmp = tempDir(base);
  const path = join(tmp.dir, 'shape.db');
  const spool = createSpool({ path, config: { executor: { concurrency: 1 } } });
  const gate = deferred();
  const started = deferred<string>();
  try {
    spool.register(SPOOL_QUEUE, async (message) => {
      started.resolve(message.id);
      await gate.promise;
    });
    await spool.start();
    await spool.send(SPOOL_QUEUE, { shape: true });
    const id = await started.promise;
    const reader = new Database(path, { readonly: true });
    const row = reader
      .prepare(`SELECT state, snapshot, attempt, deliveries, lease_expires_at AS leaseExpiresAt, updated_at AS updatedAt FROM messages WHERE id = ?`)
      .get(id) as InflightShape & { state: string };
    reader.close();
    if (row?.state !== 'processing') throw new Error(`expected the claimed row in processing, found ${row?.state}`);
    // Abandon the handler: the row stays in flight on disk, which is all this needed.
    await spool.stop({ timeoutMs: 0 });
    const { state: _state, ...shape } = row;
    return shape;
  } finally {
    gate.resolve();
    await spool.close();
    tmp.cleanup();
  }
}

/**
 * Copies a pending template and puts its first `inflight` rows in flight, as a crash would leave
 * them: state processing, a lease token, and the snapshot a real claim wrote.
 */
export function makeBootTemplate(pendingTemplate: string, path: string, inflight: number, shape: InflightShape): void {
  copyFileSync(pendingTemplate, path);
  const db = new Database(path);
  try {
    const changed = db
      .prepare(
        `UPDATE messages SET state = 'processing', snapshot = @snapshot, attempt = @attempt, deliveries = @deliveries,
           lease_token = lower(hex(randomblob(16))), lease_expires_at = @leaseExpiresAt, owner = NULL, updated_at = @updatedAt
         WHERE seq IN (SELECT seq FROM messages WHERE state = 'pending' ORDER BY seq LIMIT @inflight)`,
      )
      .run({ ...shape, inflight }).changes;
    const consistent = db
      .prepare(`SELECT count(*) FROM messages WHERE state = 'processing' AND json_extract(snapshot, '$.value') = 'processing'`)
      .pluck()
      .get() as number;
    if (changed !== inflight || consistent !== inflight) throw new Error(`boot template: ${changed} rows changed, ${consistent} consistent, expected ${inflight}`);
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
}
