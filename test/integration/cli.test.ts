/**
 * The `spool` command, run as a real child process (node bin/spool.mjs, which runs the build in
 * dist/) on real files, beside a spool that this process runs and owns. Argument and error cases
 * that need no second process run the same entry (runCli) in this process, which is faster.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS, type SettingsChangedEvent, type Spool } from '../../src/index.js';
import { nextEvent, reached } from '../helpers/events.js';
import { createBaton } from '../helpers/gate.js';
import { runCli } from '../../src/cli/run.js';
import { fileDigest } from '../helpers/cli.js';
import { overridesRow } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Generous: CI machines are slow. */
const CLI_TIMEOUT_MS = 25_000;

const spools = useTempSpools();

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node bin/spool.mjs ...args` from the project root and collects its output. */
function cli(...args: string[]): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env };
    delete env.SPOOL_CRASH_POINT;
    const child = spawn(process.execPath, ['bin/spool.mjs', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], timeout: CLI_TIMEOUT_MS });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Parses stdout, which must be one JSON document and nothing else. */
function json(run: CliRun): unknown {
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout);
}

describe('spool settings (CLI)', { timeout: 60_000 }, () => {
  it('get prints the effective settings as pure JSON; --config adds the file layer; --explain shows layers', async () => {
    const spool = spools.open();
    await spool.settings.update({ processor: { batchSize: 10 } });
    const config = join(spools.dir, 'spool.config.json');
    writeFileSync(config, JSON.stringify({ executor: { concurrency: 3 }, processor: { batchSize: 50 } }));

    const [plain, explained] = await Promise.all([
      cli('settings', 'get', '--db', spools.path),
      cli('settings', 'get', '--db', spools.path, '--config', config, '--explain'),
    ]);

    // Without --config: the defaults plus the stored overrides.
    expect(json(plain)).toEqual({ ...DEFAULT_SETTINGS, processor: { ...DEFAULT_SETTINGS.processor, batchSize: 10 } });
    const layers = json(explained) as { path: string[]; value: unknown; layer: string }[];
    const layerOf = (p: string[]) => layers.find((e) => e.path.join('/') === p.join('/'));
    expect(layerOf(['processor', 'batchSize'])).toEqual({ path: ['processor', 'batchSize'], value: 10, layer: 'override' });
    expect(layerOf(['executor', 'concurrency'])).toMatchObject({ value: 3, layer: 'config' });
    expect(layerOf(['processor', 'pollIntervalMs'])).toMatchObject({ value: 1000, layer: 'default' });
  });

  it('update validates, persists and prints the result; reset drops overrides under a path, or all', async () => {
    spools.open().settings.get();

    const updated = await cli('settings', 'update', '--db', spools.path, '{"executor":{"concurrency":6},"queues":{"email.send":{"executor":{"concurrency":2},"paused":true}}}');
    expect(json(updated)).toMatchObject({ executor: { concurrency: 6 }, queues: { 'email.send': { executor: { concurrency: 2 }, paused: true } } });
    expect(updated.stderr).toContain('settings changed');
    // A fresh spool on the file sees the stored overrides.
    expect(spools.open().settings.get().queues['email.send']).toEqual({ executor: { concurrency: 2 }, paused: true });

    const partly = json(await cli('settings', 'reset', '--db', spools.path, '--path', '["queues","email.send"]')) as typeof DEFAULT_SETTINGS;
    expect(partly.queues).toEqual({});
    expect(partly.executor.concurrency).toBe(6);

    expect(json(await cli('settings', 'reset', '--db', spools.path))).toEqual(DEFAULT_SETTINGS);
    expect(spools.open().settings.get()).toEqual(DEFAULT_SETTINGS);
  });

  it('an invalid patch exits non-zero with the coded message, prints nothing on stdout and changes nothing', async () => {
    await spools.open().settings.update({ queues: { email: { executor: { concurrency: 2 } } } });
    const before = overridesRow(spools.path);

    const run = await cli('settings', 'update', '--db', spools.path, '{"queues":{"email":{"executor":{"concurrency":-1}}}}');
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^INVALID_SETTINGS: .*queues\.email\.executor\.concurrency/);
    expect(overridesRow(spools.path)).toEqual(before);
  });

  it('a refused patch on a path with no file (or an empty one) leaves no new spool behind', async () => {
    const typo = join(spools.dir, 'typo.db');
    const empty = join(spools.dir, 'empty.db');
    writeFileSync(empty, '');
    for (const [file, patch] of [
      [typo, '{"executor":{"concurrency":0}}'],
      [typo, '{"queues":{"email":{"nope":1}}}'],
      [empty, '{"executor":{"concurrency":0}}'],
    ] as const) {
      const run = await cli('settings', 'update', '--db', file, patch);
      expect(run.code, patch).toBe(1);
      expect(run.stderr).toMatch(/^INVALID_SETTINGS: /);
    }
    expect(existsSync(typo)).toBe(false);
    expect(readFileSync(empty).length).toBe(0);
    // The same patch, valid, makes the spool as before.
    expect(json(await cli('settings', 'update', '--db', typo, '{"executor":{"concurrency":3}}'))).toMatchObject({ executor: { concurrency: 3 } });
  });
});

/** The same command line run in this process (fast), for the cases that need no separate process. */
async function cliHere(...args: string[]): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

describe('spool command line parsing and errors (in process)', () => {
  it('rejects invalid patches and paths with INVALID_SETTINGS, exit 1, and changes nothing', async () => {
    await spools.open().settings.update({ queues: { email: { executor: { concurrency: 2 } } } });
    const before = overridesRow(spools.path);
    const cases: [string[], string][] = [
      [['settings', 'update', '--db', spools.path, '{"queues":{"email":{"executor":{"concurrency":"many"}}}}'], 'queues.email.executor.concurrency'],
      [['settings', 'update', '--db', spools.path, '{"executor":{"concurrency":2},"workers":8}'], '"workers"'],
      [['settings', 'update', '--db', spools.path, '{"queues":{"email":'], 'not valid JSON'],
      [['settings', 'update', '--db', spools.path, '[1]'], 'patch object'],
      [['settings', 'reset', '--db', spools.path, '--path', 'queues.email'], '--path'],
      [['settings', 'reset', '--db', spools.path, '--path', '{"queues":"email"}'], '--path'],
    ];
    for (const [args, reason] of cases) {
      const run = await cliHere(...args);
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^INVALID_SETTINGS: /);
      expect(run.stderr).toContain(reason);
    }
    expect(overridesRow(spools.path)).toEqual(before);
  });

  it('an update waits out a write lock held by another connection, then lands', async () => {
    await spools.open().settings.update({ processor: { batchSize: 50 } });
    const holder = spools.connect();
    holder.exec('BEGIN IMMEDIATE');
    // Released from a timer: the CLI's retries are asynchronous, so this timer gets to run.
    const released = new Promise<void>((resolve) =>
      setTimeout(() => {
        holder.exec('COMMIT');
        resolve();
      }, 300),
    );
    const run = await cliHere('settings', 'update', '--db', spools.path, '{"processor":{"batchSize":60}}');
    await released;
    expect(run.stderr).not.toMatch(/BUSY/);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).processor.batchSize).toBe(60);
    expect(JSON.parse(overridesRow(spools.path)!.overrides).processor.batchSize).toBe(60);
  });

  it('a purge whose later batch meets a held write lock waits it out and deletes everything', async () => {
    const spool = spools.open();
    for (let i = 0; i < 5; i++) await spool.sendBatch('scratch', Array.from({ length: 1000 }, (_, n) => ({ n })));
    const holder = spools.connect();
    const left = holder.prepare("SELECT count(*) AS n FROM messages WHERE queue = 'scratch'").pluck();
    // Takes the lock once the first 1000-row batch is gone (the purge yields between batches, and
    // this polls on the same turns), and holds it well past the purge's 20 ms lock wait.
    const released = new Promise<void>((resolve) => {
      const poll = () => {
        if ((left.get() as number) === 5000) return void setImmediate(poll);
        holder.exec('BEGIN IMMEDIATE');
        setTimeout(() => {
          holder.exec('COMMIT');
          resolve();
        }, 300);
      };
      setImmediate(poll);
    });
    const run = await cliHere('purge', '--db', spools.path, '--queue', 'scratch', '--state', 'pending');
    await released;
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ purged: 5000 });
    expect(left.get()).toBe(0);
  });

  it('usage errors exit 2 with INVALID_ARGUMENT; --help prints the usage on stdout; a missing file is not created', async () => {
    const help = await cliHere('--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('spool settings update --db <file>');
    for (const args of [
      [],
      ['settings', 'get'],
      ['settings', 'frob', '--db', spools.path],
      ['frob', '--db', spools.path],
      ['stats', '--db', spools.path, '--explain'],
      ['settings', 'get', '--db', spools.path, '--verbose'],
      ['settings', 'update', '--db', spools.path],
      ['settings', 'get', '--db', spools.path, 'extra'],
      // A repeated option: parseArgs would keep the last one silently.
      ['stats', '--db', spools.path, '--db', join(spools.dir, 'other.db')],
      ['purge', '--db', spools.path, '--queue', 'keep', '--state', 'pending', '--queue', 'scratch', '--yes'],
    ]) {
      const run = await cliHere(...args);
      if (args.length === 0) {
        // No command at all shows the help.
        expect(run.code).toBe(0);
        continue;
      }
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^INVALID_ARGUMENT: /);
      if (['--db', '--queue'].some((option) => args.filter((a) => a === option).length > 1)) expect(run.stderr).toMatch(/^INVALID_ARGUMENT: --(db|queue) is given more than once/);
    }
    const missing = join(spools.dir, 'nope.db');
    const absent = await cliHere('settings', 'get', '--db', missing);
    expect(absent.code).toBe(1);
    expect(absent.stderr).toContain('no spool database');
    expect(existsSync(missing)).toBe(false);
  });
});

describe('spool --db paths that cannot be looked at', () => {
  it('a path through a file, a symlink loop or an over-long name is INVALID_ARGUMENT, exit 1, not a crash', async () => {
    const spool = spools.open();
    await spool.send('jobs', 1);
    await spool.close();
    const before = fileDigest(spools.path);
    const loop = join(spools.dir, 'loop-a');
    symlinkSync(join(spools.dir, 'loop-b'), loop);
    symlinkSync(loop, join(spools.dir, 'loop-b'));
    for (const [db, why] of [
      // `--db spool.db/x`: a file where a folder should be (ENOTDIR).
      [join(spools.path, 'x'), 'ENOTDIR'],
      [loop, 'ELOOP'],
      [join(spools.dir, 'n'.repeat(300)), 'ENAMETOOLONG'],
    ] as const) {
      for (const args of [['stats', '--db', db], ['settings', 'update', '--db', db, '{}']]) {
        const run = await cliHere(...args);
        expect(run.code, args.join(' ')).toBe(1);
        expect(run.stdout).toBe('');
        expect(run.stderr).toMatch(/^INVALID_ARGUMENT: There is no spool database at /);
        expect(run.stderr).toContain(why);
      }
    }
    expect(fileDigest(spools.path)).toBe(before);
  });
});

describe('spool stats (CLI) and a running spool', { timeout: 60_000 }, () => {
  it('stats prints counts as JSON while this process owns and runs the spool', async () => {
    const spool = spools.open();
    await spool.settings.update({ executor: { concurrency: 1 } });
    const baton = createBaton();
    spool.register('work', () => baton.enter());
    await spool.sendBatch('work', [1, 2, 3]);
    await spool.start();
    await baton.arrived(1);

    const stats = json(await cli('stats', '--db', spools.path)) as Awaited<ReturnType<Spool['stats']>>;
    expect(stats.accepting).toBe(true);
    expect(stats.queues).toEqual({ work: { pending: 2, activating: 0, processing: 1, dead: 0, done: 0 } });
    // Limits as the file's overrides give them; `active` is the CLI process's own (none).
    expect(stats.pools).toEqual({ default: { concurrency: 1, active: 0 }, byQueue: {} });

    const done = reached(spool.events$, 'done', 3);
    baton.openForever();
    await done;
  });

  it('a change made through the CLI in another process reaches the pools of the running spool', async () => {
    const spool = spools.open({ config: { executor: { concurrency: 2 }, processor: { pollIntervalMs: 100 } } });
    const baton = createBaton();
    spool.register('work', () => baton.enter());
    await spool.sendBatch('work', Array.from({ length: 8 }, (_, i) => i));
    await spool.start();
    await baton.arrived(2);

    const external = nextEvent<SettingsChangedEvent>(spool.events$, (e) => e.type === 'settings.changed' && e.source === 'external', {
      timeoutMs: CLI_TIMEOUT_MS,
    });
    const run = await cli('settings', 'update', '--db', spools.path, '{"executor":{"concurrency":5}}');
    expect(run.code, run.stderr).toBe(0);

    const event = await external;
    expect(event.settings.executor.concurrency).toBe(5);
    expect(event.version).toBe(overridesRow(spools.path)!.version);
    // The poll pushed it to the pools: three more start with nothing having finished.
    await baton.arrived(5);
    expect(baton.inside).toBe(5);
    expect((await spool.stats()).pools.default).toEqual({ concurrency: 5, active: 5 });
    expect(spool.supervisor.getSnapshot().context.pools['*']).toEqual({ concurrency: 5, active: 5 });

    // Nothing has finished yet (all held), so no done event can be missed by subscribing now.
    const allDone = reached(spool.events$, 'done', 8);
    baton.openForever();
    await allDone;
    expect(baton.max).toBe(5);
  });
});
