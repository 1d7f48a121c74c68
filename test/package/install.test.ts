/**
 * The package as a user gets it: `npm pack` (which builds through `prepare`), then an install of
 * the tarball into a fresh app that has nothing but a package.json. There, plain Node runs an ESM
 * script that imports `spoolmq`, a TypeScript file passes `tsc --noEmit` against the shipped
 * declarations, and `npx spool` answers. Installs reuse the npm cache (npm_config_cache when set);
 * better-sqlite3 compiles from source on install here, which is most of this test's time.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/build.js';

const run = promisify(execFile);
const APP_FILES = join(ROOT, 'test/package/app');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string; devDependencies: Record<string, string> };

/** Wall-clock cost of each step, printed at the end for the README's figures. */
const timings: [string, number][] = [];

async function timed<T>(step: string, fn: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await fn();
  } finally {
    timings.push([step, Math.round(performance.now() - started)]);
  }
}

/** Runs a command in `cwd`; rejects with its output when it exits non-zero. */
async function sh(cwd: string, file: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  // PATH without the repository's node_modules/.bin, so the app can only use what it installed;
  // none of the npm_* variables that `npm run` set for this repository, but its cache.
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: (process.env.PATH ?? '').split(':').filter((p) => !p.includes('node_modules')).join(':') };
  for (const key of Object.keys(env)) {
    if (/^npm_/i.test(key) && !/^npm_config_(cache|registry)$/i.test(key)) delete env[key];
  }
  delete env.INIT_CWD;
  delete env.NODE_OPTIONS;
  delete env.SPOOL_CRASH_POINT;
  return run(file, args, { cwd, env, maxBuffer: 64 << 20 });
}

let work: string;
let app: string;
let tarball: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'spool-package-'));
  app = join(work, 'app');
  const packed = await timed('npm pack (runs prepare: tsc build)', () => sh(ROOT, 'npm', ['pack', '--json', '--pack-destination', work]));
  const [info] = JSON.parse(packed.stdout.slice(packed.stdout.search(/^\[/m))) as { filename: string; files: { path: string }[] }[];
  tarball = join(work, info!.filename);
  writeFileSync(join(work, 'files.json'), JSON.stringify(info!.files.map((f) => f.path)));

  // A fresh app: a package.json and nothing else, then the tarball and a TypeScript toolchain.
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'spool-package-test-app', version: '1.0.0', private: true, type: 'module' }, null, 2));
  await timed('npm install of the tarball + typescript + @types/node (compiles better-sqlite3)', () =>
    sh(app, 'npm', [
      'install',
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      tarball,
      `typescript@${pkg.devDependencies.typescript}`,
      `@types/node@${pkg.devDependencies['@types/node']}`,
    ]),
  );
  for (const file of ['main.mjs', 'typed.ts', 'tsconfig.json']) copyFileSync(join(APP_FILES, file), join(app, file));
});

afterAll(() => {
  console.log(`package test timings (ms):\n${timings.map(([step, ms]) => `  ${ms.toString().padStart(7)}  ${step}`).join('\n')}`);
  if (work) rmSync(work, { recursive: true, force: true });
});

describe(`the ${pkg.name} package, installed from its tarball into a fresh app`, () => {
  it('ships only dist/, drizzle/, bin/, README.md, LICENSE, CHANGELOG.md and package.json; no sources, tests or build info', () => {
    const files = JSON.parse(readFileSync(join(work, 'files.json'), 'utf8')) as string[];
    const top = new Set(files.map((f) => (f.includes('/') ? `${f.split('/')[0]}/` : f)));
    expect([...top].sort()).toEqual(['CHANGELOG.md', 'LICENSE', 'README.md', 'bin/', 'dist/', 'drizzle/', 'package.json']);
    expect(files).toContain('dist/src/index.js');
    expect(files).toContain('dist/src/index.d.ts');
    expect(files).toContain('dist/src/index.js.map');
    expect(files).toContain('drizzle/meta/_journal.json');
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
  });

  it('plain Node imports it, sends, handles and closes (migrations found inside the installed package); prom-client loads only with the admin handler', async () => {
    const { stdout } = await timed('node main.mjs (plain ESM app)', () => sh(app, process.execPath, ['main.mjs', join(app, 'app.db')]));
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^sent \S+$/);
    expect(lines.slice(1)).toEqual([
      'handled {"hello":"from a plain Node app"}',
      'refused INVALID_QUEUE_NAME',
      'prom-client loaded: false',
      'metrics scraped, prom-client loaded: true',
      'closed',
    ]);
    // No loader came along: tsx is a devDependency only.
    expect(JSON.parse(readFileSync(join(app, 'node_modules/spoolmq/package.json'), 'utf8')).dependencies).not.toHaveProperty('tsx');
  });

  // skipLibCheck as most apps set it: drizzle-orm's own declarations do not pass a full library check.
  it('a TypeScript file that uses the types passes tsc --noEmit (strict; a misuse marked @ts-expect-error proves they are not any)', async () => {
    const { stdout } = await timed('tsc --noEmit (typed.ts)', () => sh(app, process.execPath, [join(app, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json']));
    expect(stdout).toBe('');
  });

  it('npx spool --help and --version answer, and a command reads the app database', async () => {
    const version = await timed('npx spool --version', () => sh(app, 'npx', ['--no-install', 'spool', '--version']));
    expect(version.stdout).toBe(`${pkg.version}\n`);
    const help = await sh(app, 'npx', ['--no-install', 'spool', '--help']);
    expect(help.stdout).toContain('spool requeue --db <file>');
    // A database made by the installed package (migrations and all); the installed CLI writes and reads it.
    await sh(app, process.execPath, ['main.mjs', join(app, 'cli.db')]);
    const sent = await sh(app, 'npx', ['--no-install', 'spool', 'send', '--db', 'cli.db', '--queue', 'later', '{"n":1}']);
    const { id } = JSON.parse(sent.stdout) as { id: string };
    const stats = await sh(app, 'npx', ['--no-install', 'spool', 'stats', '--db', 'cli.db']);
    // Every known queue is listed: main.mjs's handled and emptied 'greetings' with zeros, 'later' with its one.
    expect(JSON.parse(stats.stdout).queues).toEqual({
      greetings: { pending: 0, activating: 0, processing: 0, dead: 0, done: 0 },
      later: { pending: 1, activating: 0, processing: 0, dead: 0, done: 0 },
    });
    const got = await sh(app, 'npx', ['--no-install', 'spool', 'get', '--db', 'cli.db', id]);
    expect(JSON.parse(got.stdout)).toMatchObject({ id, queue: 'later', state: 'pending', payload: { n: 1 } });
  });
});
