/** The package build (dist/), rebuilt with tsc when a source file is newer than it, as make would. */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** What the build reads: the folders it compiles and the configs that steer it. */
const INPUTS = ['src', 'machines', 'tsconfig.json', 'tsconfig.build.json', 'package.json'];

/** Builds dist/ (`npm run build`'s steps) unless every output is newer than every input; returns whether it built. */
export function ensureBuilt(): boolean {
  const outputs = filesUnder(join(ROOT, 'dist')).filter((f) => f.endsWith('.js'));
  const oldestOutput = Math.min(...outputs.map((f) => statSync(f).mtimeMs));
  const newestInput = Math.max(...INPUTS.flatMap((i) => filesUnder(join(ROOT, i))).map((f) => statSync(f).mtimeMs));
  if (outputs.length > 0 && newestInput < oldestOutput) return false;
  rmSync(join(ROOT, 'dist'), { recursive: true, force: true });
  const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  // Exit 2: type errors, but every file was emitted. Tests run on the sources without type checks
  // too, so a type error (which npm run typecheck reports) must not stop the whole suite here.
  if (tsc.status === 2) process.stderr.write('ensureBuilt: dist/ was built with type errors (see above; npm run typecheck)\n');
  else if (tsc.status !== 0) throw new Error(`tsc -p tsconfig.build.json failed (${tsc.error?.message ?? `exit ${tsc.status}`})`);
  return true;
}

function filesUnder(path: string): string[] {
  if (!existsSync(path)) return [];
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}
