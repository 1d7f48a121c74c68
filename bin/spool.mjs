#!/usr/bin/env node
// The `spool` command: runs the compiled CLI from dist/. `npm ci` and `npm pack` build it through
// the `prepare` script; in a clone, `npm run build` rebuilds it after a change to src/.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/src/cli/main.js', import.meta.url);
if (existsSync(fileURLToPath(entry))) {
  await import(entry.href);
} else {
  process.stderr.write(`spool: ${fileURLToPath(entry)} is missing; run \`npm run build\` in the package first.\n`);
  process.exitCode = 1;
}
