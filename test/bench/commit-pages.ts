/**
 * What a commit costs by the number of B-tree pages it changes, on this machine: the floor under
 * every Spool figure. A one-by-one send changes 2 pages (the row's table leaf and its claim-index
 * leaf), a concurrency-1 drain step 6 (table, claim index, in-flight index, counters, history and
 * its index); the floor's insert changes 1. WAL, synchronous NORMAL, as Spool's default.
 * As in a started spool, no checkpoint runs inside a timed commit (Spool's maintenance worker
 * checkpoints on its own connection): SQLite's automatic checkpoint is off, and the WAL is
 * checkpointed between rounds of CHECKPOINT_EVERY commits, off the clock.
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
  db.pragma('wal_autocheckpoint = 0');
  const CHECKPOINT_EVERY = 500;
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
    let wallMs = 0;
    let user = 0;
    let system = 0;
    for (let done = 0; done < n; done += CHECKPOINT_EVERY) {
      db.pragma('wal_checkpoint(RESTART)');
      const cpu = process.cpuUsage();
      const start = performance.now();
      for (let i = done; i < Math.min(n, done + CHECKPOINT_EVERY); i++) {
        begin.run();
        for (let p = 0; p < pages; p++) updates[p]!.run(String(i));
        commit.run();
      }
      wallMs += performance.now() - start;
      const used = process.cpuUsage(cpu);
      user += used.user;
      system += used.system;
    }
    console.log(`| ${pages} | ${fmt((wallMs * 1000) / n)} | ${fmt((user + system) / n)} | ${fmt(system / n)} |`);
  }
} finally {
  db.close();
  dir.cleanup();
}
