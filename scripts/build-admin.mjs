#!/usr/bin/env node
/**
 * Builds the admin dashboard (dashboard/) into dist/dashboard/: one JS bundle (Preact, htm,
 * uPlot), one CSS file and the page, all served by the admin handler; nothing is fetched from the
 * internet at run time. Each file is written to a temp name and renamed, so a server (or a test
 * running beside this build) never reads a half-written file.
 *
 *   node scripts/build-admin.mjs           (npm run build:admin)
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Where the handler serves the dashboard from (src/admin/assets.ts). */
export const OUT_DIR = join(root, 'dist', 'dashboard');

/** Builds the dashboard; resolves with the written files and their sizes. */
export async function buildDashboard({ outDir = OUT_DIR } = {}) {
  const result = await build({
    entryPoints: { app: join(root, 'dashboard', 'src', 'main.ts') },
    bundle: true,
    format: 'esm',
    target: ['es2020'],
    minify: true,
    legalComments: 'none',
    write: false,
    outdir: outDir,
    logLevel: 'silent',
  });
  const files = result.outputFiles.map((f) => ({ name: f.path.slice(outDir.length + 1), contents: f.contents }));
  const html = await readFile(join(root, 'dashboard', 'index.html'));
  files.push({ name: 'index.html', contents: html });
  await mkdir(outDir, { recursive: true });
  for (const file of files) {
    const target = join(outDir, file.name);
    const temp = `${target}.${process.pid}.${Date.now()}.tmp`;
    await writeFile(temp, file.contents);
    await rename(temp, target);
  }
  return files.map((f) => ({ name: f.name, bytes: f.contents.length }));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const files = await buildDashboard();
  // stderr: `npm pack --json` runs prepare and its stdout must stay pure JSON.
  for (const f of files) console.error(`dist/dashboard/${f.name}  ${(f.bytes / 1024).toFixed(1)} KiB`);
}
