/** One temp database file per test, removed afterwards. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh directory with a `spool.db` path inside; `cleanup()` removes it. */
export function tempDb(name = 'spool.db'): { dir: string; path: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'spool-test-'));
  return { dir, path: join(dir, name), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
