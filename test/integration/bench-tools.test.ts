/**
 * The stand-alone bench tools the README and docs/performance.md cite run on today's schema. They
 * write Spool's statements by hand (an insert, a claim, a settle), so a migration can break them
 * without any other test noticing: send-anatomy.ts did, when migration 0007 changed the live-key
 * index its insert names. Each runs here at a tiny N, in a child process, and must print its table
 * with a positive figure in every row. The figures themselves are the bench's business.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Runs a tool under tsx; its table's data rows, each split into cells. */
function runTool(file: string, args: string[]): string[][] {
  const out = spawnSync(process.execPath, ['--import', 'tsx', file, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  expect(out.stderr, `${file} wrote to stderr`).toBe('');
  expect(out.status, `${file} exited with ${out.status}`).toBe(0);
  return out.stdout
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|[-:| ]+\|$/.test(line))
    .slice(1)
    .map((line) => line.split('|').slice(1, -1).map((cell) => cell.trim()));
}

/** The numbers of a row's cells after the first, with thousands separators dropped. */
const figures = (row: string[]) => row.slice(1).map((cell) => Number.parseFloat(cell.replaceAll(',', ''))).filter((x) => !Number.isNaN(x));

describe('bench tools', () => {
  it('send-anatomy.ts splits one awaited send, on the schema of the last migration', () => {
    const rows = runTool('test/bench/send-anatomy.ts', ['--n', '200']);
    expect(rows.map((r) => r[0])).toEqual([
      'Spool send()',
      "its statement by hand, Spool's schema (counts left to the fold)",
      'the same with the counts in its commit (before 0004)',
      "the floor's insert",
    ]);
    for (const row of rows) expect(figures(row)[0], row[0]).toBeGreaterThan(0);
  });

  it('commit-pages.ts times a commit by pages changed', () => {
    const rows = runTool('test/bench/commit-pages.ts', ['--n', '200']);
    expect(rows.length).toBeGreaterThanOrEqual(4);
    for (const row of rows) expect(figures(row)[0], `pages ${row[0]}`).toBeGreaterThan(0);
  });

  it("trigger-cost.ts times the claim's UPDATE and the settle's DELETE on today's table", () => {
    const rows = runTool('test/bench/trigger-cost.ts', ['--n', '200', '--rounds', '1']);
    expect(rows.map((r) => r[0])[0]).toBe('no trigger (as shipped)');
    expect(rows).toHaveLength(3);
    for (const row of rows) {
      expect(figures(row), row[0]).toHaveLength(2);
      for (const x of figures(row)) expect(x, row[0]).toBeGreaterThan(0);
    }
  });
});
