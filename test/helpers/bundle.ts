/**
 * Child processes from plain JavaScript. `node --import tsx` pays 0.6–1 s of loader start-up per
 * child, and the crash and reliability tiers start hundreds of them; instead, a TypeScript entry
 * point is bundled once per process with esbuild (every package stays an import) and the child
 * runs `node <bundle>.mjs`.
 *
 * The bundles live in node_modules/.cache/spool-children/, inside the repository: packages then
 * resolve from its node_modules, and src/db/migrate.ts finds drizzle/ by walking up from there.
 * A bundle's name carries the hash of its content, so concurrent test workers that bundle the
 * same sources share one file, and a source change gives a new one.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';

/** The repository root (the bundles resolve packages and drizzle/ from below it). */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Where the bundles are written. */
export const BUNDLE_DIR = join(ROOT, 'node_modules/.cache/spool-children');

const bundles = new Map<string, string>();

/**
 * The path of a plain-JS ESM bundle of the TypeScript entry `entry` (a path), built on first use in
 * this process. Run it with `node ...NODE_CHILD_FLAGS <path> ...args`.
 */
export function bundledEntry(entry: string): string {
  const file = resolve(entry);
  const known = bundles.get(file);
  if (known) return known;
  const result = buildSync({
    entryPoints: [file],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Every package stays an import, resolved from the repository's node_modules at run time.
    packages: 'external',
    sourcemap: 'inline',
    sourceRoot: ROOT,
    write: false,
    logLevel: 'error',
  });
  const code = result.outputFiles[0]!.contents;
  const hash = createHash('sha256').update(code).digest('hex').slice(0, 16);
  const path = join(BUNDLE_DIR, `${basename(file, '.ts')}-${hash}.mjs`);
  if (!existsSync(path)) {
    mkdirSync(BUNDLE_DIR, { recursive: true });
    // Written aside and renamed: a worker that races this one never runs a half-written file.
    const partial = `${path}.${process.pid}.partial`;
    writeFileSync(partial, code);
    renameSync(partial, path);
  }
  bundles.set(file, path);
  bundleWorker();
  return path;
}

let workerBundled = false;

/**
 * The maintenance worker, bundled beside the children: a bundled child's maintenance.ts looks for
 * `./maintenance-worker.js` next to its own file, as the compiled package has it.
 */
function bundleWorker(): void {
  if (workerBundled) return;
  const result = buildSync({
    entryPoints: [join(ROOT, 'src/runtime/maintenance-worker.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    write: false,
    logLevel: 'error',
  });
  const path = join(BUNDLE_DIR, 'maintenance-worker.js');
  mkdirSync(BUNDLE_DIR, { recursive: true });
  // Inside node_modules no package.json above applies: this one makes the .js an ES module.
  writeFileSync(join(BUNDLE_DIR, 'package.json'), '{ "type": "module" }\n');
  const partial = `${path}.${process.pid}.partial`;
  writeFileSync(partial, result.outputFiles[0]!.contents);
  renameSync(partial, path);
  workerBundled = true;
}

/**
 * Node flags for a bundled child. Stack traces name bundle lines (each module is marked with its
 * source path in the bundle); SPOOL_CHILD_SOURCE_MAPS=1 maps them to the .ts sources, at about
 * 0.3 s more per child start, which is why it is off by default.
 */
export const NODE_CHILD_FLAGS = process.env.SPOOL_CHILD_SOURCE_MAPS === '1' ? ['--enable-source-maps'] : [];
