/** The maintenance worker's hand-over of WAL checkpoints from the owner's connection. */
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock, type Clock } from '../../../src/clock.js';
import { openDatabase, type DbHandle } from '../../../src/db/client.js';
import { createRepository } from '../../../src/db/repository.js';
import { createEventBus } from '../../../src/events.js';
import { createManualClock } from '../../../src/manual-clock.js';
import { CHECKPOINT_AFTER_COMMITS, createMaintenance, type Maintenance, startWorker, WORKER_LOAD_GRACE_MS, workerExecArgv } from '../../../src/runtime/maintenance.js';
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

  /** A started maintenance on a fresh file, on `clock`. */
  function started(clock: Clock): Maintenance {
    temp = tempDb();
    db = openDatabase(temp.path, 'normal');
    const events = createEventBus();
    // Defaults only: maintenance reads its interval and retention, and nothing here writes settings.
    const overrides: OverridesStorage = { read: () => ({ overrides: '{}', version: 0 }), version: () => 0, atomically: (fn) => fn(), write: () => 0 };
    const settings = createSettingsStore({ config: {}, storage: () => overrides, clock, events });
    const m = createMaintenance({ db, repo: createRepository(db), clock, events, settings });
    m.start();
    return m;
  }

  /** Pages after which the owner's own commits checkpoint (0: never). */
  const autoCheckpoint = () => db!.sqlite.pragma('wal_autocheckpoint', { simple: true });

  it('stops the owner’s automatic checkpoints as it starts the worker, not once the worker is ready, and restores them when the worker exits', async () => {
    maintenance = started(systemClock);
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

  it('turns the owner’s checkpoints back on while a worker takes longer than the grace to load, and off again once it is ready', async () => {
    const clock = createManualClock();
    maintenance = started(clock);
    for (let i = 0; i < CHECKPOINT_AFTER_COMMITS; i++) maintenance.committed();
    expect(autoCheckpoint()).toBe(0);
    // The worker cannot be ready before this test yields; on this clock, the grace runs out now.
    clock.advance(WORKER_LOAD_GRACE_MS - 1);
    expect(autoCheckpoint()).toBe(0);
    clock.advance(1);
    expect(autoCheckpoint()).toBe(1000);
    // A sweep runs in the worker, so it resolves only once the worker is ready.
    await maintenance.sweep();
    expect(autoCheckpoint()).toBe(0);
  });

  // The worker opens a bare connection (connection.ts) and runs removal.ts's raw statements: its
  // thread must not load drizzle-orm's ~400 files, which took its start from ~250 ms to ~100 ms.
  it('the worker thread’s module graph reaches better-sqlite3 but not drizzle-orm', () => {
    const entry = fileURLToPath(new URL('../../../src/runtime/maintenance-worker.ts', import.meta.url));
    // No tree shaking: Node evaluates every module imported, used or not.
    const { metafile } = buildSync({
      entryPoints: [entry], bundle: true, platform: 'node', format: 'esm', packages: 'external', write: false, metafile: true, logLevel: 'error',
      treeShaking: false, ignoreAnnotations: true,
    });
    const packages = new Set(Object.values(metafile.outputs).flatMap((output) => output.imports.filter((i) => i.external).map((i) => i.path)));
    expect(packages).toContain('better-sqlite3');
    expect([...packages].filter((name) => name.startsWith('drizzle-orm'))).toEqual([]);
  });

  it('the worker keeps the parent’s Node flags and preloads, but not a TypeScript loader', () => {
    const typescript = ['--import', 'tsx', '--import=tsx/esm', '--require', 'ts-node/register', '-r', '@swc-node/register', '--loader', 'ts-node/esm',
      '--experimental-loader=/app/node_modules/tsx/dist/esm/index.mjs', '--require', 'esbuild-register'];
    const kept = ['--max-old-space-size=512', '--require=./apm.cjs', '-r', 'dotenv/config', '--enable-source-maps', '--experimental-loader', './.pnp.loader.mjs',
      '--import=./otel.mjs', '--import', 'tsxy', '--conditions', 'development'];
    expect(workerExecArgv([...typescript.slice(0, 3), ...kept.slice(0, 5), ...typescript.slice(3), ...kept.slice(5)])).toEqual(kept);
    expect(workerExecArgv(typescript)).toEqual([]);
    // Nothing to drop: the worker inherits, as Node does by default.
    expect(workerExecArgv(kept)).toBeUndefined();
    expect(workerExecArgv([])).toBeUndefined();
  });

  it('starts the worker without a TypeScript loader, and with the inherited flags when the rest holds a process-wide one', async () => {
    // A worker that reports the flags it was started with.
    const entry = new URL(`data:text/javascript,${encodeURIComponent("import { parentPort } from 'node:worker_threads'; parentPort.postMessage(process.execArgv);")}`);
    const flagsOf = (parent: string[]) =>
      new Promise<string[]>((resolve, reject) => {
        const worker = startWorker(entry, null, parent);
        worker.once('message', (flags: string[]) => void worker.terminate().then(() => resolve(flags)));
        worker.once('error', reject);
      });
    expect(await flagsOf(['--import', 'tsx', '--enable-source-maps'])).toEqual(['--enable-source-maps']);
    // A Worker given its flags refuses --max-old-space-size (ERR_WORKER_INVALID_EXEC_ARGV): inherited instead.
    expect(await flagsOf(['--import', 'tsx', '--max-old-space-size=100'])).toEqual(process.execArgv);
    expect(await flagsOf([])).toEqual(process.execArgv);
  });
});
