/**
 * Child entry for Spool: RSS, boot, and the crash that leaves rows in flight for the boot runs.
 * Loads Spool (and better-sqlite3 to read the file back), as an application using Spool would.
 */
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { CHILD_CONCURRENCY, childMain, type ChildSpec } from '../child.js';
import { collectGarbage, deferred, now, tempDir } from '../common.js';
import { openAppSpool, spoolSystem } from '../systems/spool.js';
import type { Metrics } from '../workloads.js';

/**
 * createSpool() + start() on a copy of a crashed spool (in the app setting: queue paused, events$
 * counted), then the resume to the first handler. Checks from the file that every in-flight row
 * was recovered (pending with crashes = 1) or handed out again.
 */
async function boot(spec: Extract<ChildSpec, { mode: 'boot' }>): Promise<Metrics> {
  const tmp = tempDir(spec.base);
  try {
    const path = join(tmp.dir, 'copy.db');
    copyFileSync(spec.template, path);
    collectGarbage();
    const first = deferred<number>();
    let handled = 0;
    let redelivered = 0;
    const t0 = now();
    const app = await openAppSpool({ path, durability: 'normal', concurrency: CHILD_CONCURRENCY });
    const t1 = now();
    await app.resume(async (message) => {
      // A recovered row is handed out for the second time.
      if (message.deliveries > 1) redelivered += 1;
      if (++handled === 1) first.resolve(now());
    });
    const t2 = await first.promise;
    await app.close();
    const db = new Database(path, { readonly: true });
    const recovered = db
      .prepare(`SELECT count(*) FROM messages WHERE state = 'pending' AND json_extract(snapshot, '$.value') = 'pending' AND json_extract(snapshot, '$.context.crashes') = 1`)
      .pluck()
      .get() as number;
    const inflight = db.prepare(`SELECT count(*) FROM messages WHERE state IN ('activating', 'processing')`).pluck().get() as number;
    db.close();
    if (inflight !== 0 || recovered + redelivered !== spec.inflight) {
      throw new Error(`spool boot: ${recovered} recovered rows pending + ${redelivered} redelivered, ${inflight} still in flight; expected ${spec.inflight}`);
    }
    return { 'start ms': t1 - t0, 'first handler ms': t2 - t0, recovered: recovered + redelivered };
  } finally {
    tmp.cleanup();
  }
}

/**
 * A real crash, so the boot template holds exactly what the current schema and runtime leave
 * behind: `inflight` handlers start (their claims committed) and never finish, then SIGKILL.
 */
async function crash(spec: Extract<ChildSpec, { mode: 'crash' }>): Promise<never> {
  copyFileSync(spec.template, spec.out);
  const app = await openAppSpool({ path: spec.out, durability: 'normal', concurrency: spec.inflight });
  const all = deferred();
  let started = 0;
  await app.resume(() => {
    if (++started === spec.inflight) all.resolve();
    return new Promise<void>(() => {});
  });
  await all.promise;
  process.kill(process.pid, 'SIGKILL');
  return new Promise<never>(() => {});
}

childMain({ system: spoolSystem(), boot, crash });
