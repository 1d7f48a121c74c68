/** Child entry for the raw floor: RSS and boot, loading nothing but better-sqlite3. */
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { CHILD_CONCURRENCY, childMain, type ChildSpec } from '../child.js';
import { collectGarbage, deferred, now, tempDir } from '../common.js';
import { floorSystem, openFloorDb } from '../systems/floor.js';
import type { Metrics } from '../workloads.js';

/** Open, reset every claimed row (the floor's whole recovery), then run to the first handler. */
async function boot(spec: Extract<ChildSpec, { mode: 'boot' }>): Promise<Metrics> {
  const tmp = tempDir(spec.base);
  try {
    const path = join(tmp.dir, 'copy.db');
    copyFileSync(spec.template, path);
    // As a crash would leave them: the first rows claimed and never deleted.
    const setup = openFloorDb(path, 'normal');
    setup.prepare('UPDATE jobs SET claimed = 1 WHERE id <= ?').run(spec.inflight);
    setup.close();
    collectGarbage();
    const first = deferred<number>();
    let handled = 0;
    const t0 = now();
    const db = openFloorDb(path, 'normal');
    const reset = db.prepare('UPDATE jobs SET claimed = 0 WHERE claimed = 1').run().changes;
    db.close();
    const handle = await floorSystem.open({ dir: tmp.dir, durability: 'normal', concurrency: CHILD_CONCURRENCY, path });
    const t1 = now();
    await handle.consume(async () => {
      if (++handled === 1) first.resolve(now());
    });
    const t2 = await first.promise;
    await handle.close();
    if (reset !== spec.inflight) throw new Error(`floor boot reset ${reset} rows, expected ${spec.inflight}`);
    return { 'start ms': t1 - t0, 'first handler ms': t2 - t0, recovered: reset };
  } finally {
    tmp.cleanup();
  }
}

childMain({ system: floorSystem, boot });
