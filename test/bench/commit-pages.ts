/**
 * What a commit costs by the number of B-tree pages it changes, on this machine: the floor under
 * every Spool figure. A one-by-one send changes 3 pages (the row's table leaf, its claim-index
 * leaf, the counters row), a concurrency-1 drain step 4 (table, claim index, in-flight index,
 * counters); the floor's insert changes 1. WAL, synchronous NORMAL, as Spool's default.
 *
 *   node --import tsx test/bench/commit-pages.ts [--n 20000]
 */
import Database from 'better-sqlite3';
import { parseArgs } from 'node:util';
import { fmt, tempDir } from './common.js';
import { machineInfo } from './machine.js';

const { values } = parseArgs({ options: { n: { type: 'string', default: '20000' } } });
const n = Number(values.n);
const dir = tempDir(undefined, 'spool-bench-pages-');
const db = new Database(`${dir.dir}/pages.db`);
try {
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  const TABLES = 6;
  // One table per page: updating a row of table t dirties exactly one more page.
  for (let t = 0; t < TABLES; t++) db.exec(`CREATE TABLE t${t} (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t${t} VALUES (1, 'x');`);
  const updates = Array.from({ length: TABLES }, (_, t) => db.prepare(`UPDATE t${t} SET v = ? WHERE id = 1`));
  const begin = db.prepare('BEGIN IMMEDIATE');
  const commit = db.prepare('COMMIT');
  const m = machineInfo(undefined);
  console.log(`commit cost by pages changed — ${m.cpu}, ${m.cores} cores; Node ${m.node}, SQLite ${m.sqlite}; ${m.fileSystem}; N = ${n.toLocaleString('en-US')} commits each`);
  console.log('| pages changed | wall µs/commit | CPU µs/commit | of which system |');
  console.log('|---:|---:|---:|---:|');
  for (const pages of [0, 1, 2, 3, 4, 6]) {
    const cpu = process.cpuUsage();
    const start = performance.now();
    for (let i = 0; i < n; i++) {
      begin.run();
      for (let p = 0; p < pages; p++) updates[p]!.run(String(i));
      commit.run();
    }
    const used = process.cpuUsage(cpu);
    console.log(`| ${pages} | ${fmt(((performance.now() - start) * 1000) / n)} | ${fmt((used.user + used.system) / n)} | ${fmt(used.system / n)} |`);
  }
} finally {
  db.close();
  dir.cleanup();
}
