/**
 * Deep queues are filled once per size and copied for every run (a copy is a fresh file), each
 * through its system's batch send. The boot template is made by a real crash (see below).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { runChild } from './child-runner.js';
import { collectGarbage, payloads } from './common.js';
import type { BenchSystem } from './systems/types.js';

/** Messages per batch send when filling a template (fewer transactions: the fill is untimed). */
export const FILL_CHUNK = 10_000;

/** Fills a new database of `system` with `depth` pending messages at `path` (nothing consumes them). */
export async function fillTemplate(system: BenchSystem, path: string, depth: number, chunk = FILL_CHUNK): Promise<number> {
  const t0 = Date.now();
  const handle = await system.open({ dir: join(path, '..'), durability: 'normal', concurrency: 1, path });
  for (let i = 0; i < depth; i += chunk) await handle.sendBatch(payloads(i, Math.min(chunk, depth - i)));
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

/**
 * A boot template: a copy of the pending template `pendingTemplate` in which a real spool (in a
 * child process) put its first `inflight` messages in flight and was then killed by SIGKILL.
 * Whatever the schema and the runtime write at a claim is therefore what boot recovery finds.
 * The WAL is checkpointed into the file, so each boot run copies one self-contained file.
 */
export async function makeBootTemplate(pendingTemplate: string, path: string, inflight: number): Promise<void> {
  await runChild({ mode: 'crash', system: 'spool', template: pendingTemplate, out: path, inflight });
  const db = new Database(path);
  try {
    const consistent = db
      .prepare(`SELECT count(*) FROM messages WHERE state = 'processing' AND json_extract(snapshot, '$.value') = 'processing'`)
      .pluck()
      .get() as number;
    const inFlight = db.prepare(`SELECT count(*) FROM messages WHERE state IN ('activating', 'processing')`).pluck().get() as number;
    if (consistent !== inflight || inFlight !== inflight) throw new Error(`boot template: ${inFlight} rows in flight, ${consistent} processing in both column and snapshot, expected ${inflight}`);
    // The crashed app resumed its queue with settings.update, which persists: without this, the
    // booting app's queue would run before it registers its handler (its config pauses it).
    db.prepare('DELETE FROM settings_overrides').run();
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
}
