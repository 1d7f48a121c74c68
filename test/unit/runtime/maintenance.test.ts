/** The maintenance worker's hand-over of WAL checkpoints from the owner's connection. */
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/clock.js';
import { openDatabase, type DbHandle } from '../../../src/db/client.js';
import { createRepository } from '../../../src/db/repository.js';
import { createEventBus } from '../../../src/events.js';
import { CHECKPOINT_AFTER_COMMITS, createMaintenance, type Maintenance } from '../../../src/runtime/maintenance.js';
import { createSettingsStore, type OverridesStorage } from '../../../src/settings/store.js';
import { tempDb } from '../../helpers/temp-db.js';

describe('maintenance', () => {
  let temp: ReturnType<typeof tempDb> | undefined;
  let db: DbHandle | undefined;
  let maintenance: Maintenance | undefined;

  afterEach(async () => {
    await maintenance?.close();
    db?.close();
    temp?.cleanup();
  });

  /** Pages after which the owner's own commits checkpoint (0: never). */
  const autoCheckpoint = () => db!.sqlite.pragma('wal_autocheckpoint', { simple: true });

  it('stops the owner’s automatic checkpoints as it starts the worker, not once the worker is ready, and restores them when the worker exits', async () => {
    temp = tempDb();
    db = openDatabase(temp.path, 'normal');
    const events = createEventBus();
    // Defaults only: maintenance reads its interval and retention, and nothing here writes settings.
    const overrides: OverridesStorage = { read: () => ({ overrides: '{}', version: 0 }), version: () => 0, atomically: (fn) => fn(), write: () => 0 };
    const settings = createSettingsStore({ config: {}, storage: () => overrides, clock: systemClock, events });
    maintenance = createMaintenance({ db, repo: createRepository(db), clock: systemClock, events, settings });
    maintenance.start();
    expect(autoCheckpoint()).toBe(1000);
    for (let i = 1; i < CHECKPOINT_AFTER_COMMITS; i++) maintenance.committed();
    expect(autoCheckpoint()).toBe(1000);
    // The commit that starts the worker: from here the worker checkpoints, even while it loads.
    maintenance.committed();
    expect(autoCheckpoint()).toBe(0);
    await maintenance.close();
    maintenance = undefined;
    expect(autoCheckpoint()).toBe(1000);
  });
});
