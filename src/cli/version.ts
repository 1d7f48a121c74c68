/** The package's version, read from its package.json (for `spool --version`). */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The `version` of the nearest package.json above this module (src/cli/ or dist/src/cli/). */
export function packageVersion(): string {
  const from = dirname(fileURLToPath(import.meta.url));
  for (let dir = from; ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) return String((JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }).version);
    if (dirname(dir) === dir) throw new Error(`No package.json in any folder above ${from}`);
  }
}
