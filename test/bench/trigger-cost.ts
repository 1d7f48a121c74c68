/**
 * What a trigger on `messages` costs every UPDATE and DELETE of a row, even one that never fires:
 * why migration 0005 dropped the fold triggers of 0004 and the repository folds instead
 * (src/db/counters.ts). A Spool file of N pending rows (all folded), then per row, in one
 * transaction, the claim's state change and the settle's DELETE (each fenced as Spool fences
 * them), three ways: the table as shipped (no trigger), with a trigger whose WHEN never holds, and
 * with 0004's two fold triggers (whose WHEN, the row above the fold mark, never holds here either).
 * WAL, synchronous NORMAL, as Spool's default. Medians of the rounds.
 *
 *   node --import tsx test/bench/trigger-cost.ts [--n 10000] [--rounds 3]
 */
import Database from 'better-sqlite3';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createSpool } from '../../src/index.js';
import { MIGRATIONS_FOLDER } from '../../src/db/migrate.js';
import { fmt, median, payloads, tempDir } from './common.js';
import { machineInfo } from './machine.js';

const { values } = parseArgs({ options: { n: { type: 'string', default: '10000' }, rounds: { type: 'string', default: '3' } } });
const n = Number(values.n);
const rounds = Number(values.rounds);
const dir = tempDir(undefined, 'spool-bench-triggers-');

/** 0004's two triggers, as that migration created them. */
function foldTriggers(): string {
  const text = readFileSync(join(MIGRATIONS_FOLDER, '0004_fold_counts.sql'), 'utf8');
  return text
    .split('--> statement-breakpoint')
    .filter((statement) => statement.includes('CREATE TRIGGER'))
    .join(';\n');
}

const SETUPS: Record<string, string> = {
  'no trigger (as shipped)': '',
  'a trigger whose WHEN never holds': `CREATE TRIGGER never_update BEFORE UPDATE ON messages WHEN 0 BEGIN SELECT 1; END;
    CREATE TRIGGER never_delete BEFORE DELETE ON messages WHEN 0 BEGIN SELECT 1; END;`,
  "0004's fold triggers": foldTriggers(),
};

try {
  const template = join(dir.dir, 'template.db');
  const spool = createSpool({ path: template, config: { queues: { bench: { paused: true } } } });
  for (let i = 0; i < n; i += 1000) await spool.sendBatch('bench', payloads(i, Math.min(1000, n - i)));
  await spool.close();
  // Batches of 1,000 fold themselves at commit (FOLD_EVERY), so every row is at or below the mark.
  const check = new Database(template, { readonly: true });
  const unfolded = check.prepare("SELECT count(*) FROM messages WHERE seq > (SELECT n FROM counters WHERE scope = '' AND name = 'last_seq')").pluck().get();
  check.close();
  if (unfolded !== 0) throw new Error(`${String(unfolded)} rows are unfolded: 0004's triggers would fire`);

  const m = machineInfo(undefined);
  console.log(`UPDATE and DELETE of a message row, by triggers on the table — ${m.cpu}, ${m.cores} cores; Node ${m.node}, SQLite ${m.sqlite}; N = ${n.toLocaleString('en-US')} rows, ${rounds} rounds`);
  console.log('| table | claim UPDATE µs/row | settle DELETE µs/row |');
  console.log('|---|---:|---:|');
  const results = new Map<string, { update: number[]; remove: number[] }>(Object.keys(SETUPS).map((k) => [k, { update: [], remove: [] }]));
  for (let round = 0; round < rounds; round++) {
    for (const [name, setup] of Object.entries(SETUPS)) {
      const path = join(dir.dir, 'run.db');
      copyFileSync(template, path);
      const db = new Database(path);
      try {
        db.pragma('journal_mode = WAL');
        db.pragma('synchronous = NORMAL');
        db.exec("DROP TRIGGER IF EXISTS messages_fold_before_update; DROP TRIGGER IF EXISTS messages_fold_before_delete;");
        if (setup) db.exec(setup);
        const claim = db.prepare("UPDATE messages SET state = 'processing', lease_token = ?, updated_at = ? WHERE seq = ? AND state = 'pending' AND lease_token IS NULL");
        const settle = db.prepare("DELETE FROM messages WHERE seq = ? AND state = 'processing' AND lease_token IS ?");
        const seqs = db.prepare('SELECT seq FROM messages ORDER BY seq').pluck().all() as number[];
        db.exec('BEGIN IMMEDIATE');
        let t0 = performance.now();
        for (const seq of seqs) if (claim.run(`t${seq}`, 1, seq).changes !== 1) throw new Error(`row ${seq} was not claimed`);
        const update = ((performance.now() - t0) * 1000) / seqs.length;
        t0 = performance.now();
        for (const seq of seqs) if (settle.run(seq, `t${seq}`).changes !== 1) throw new Error(`row ${seq} was not deleted`);
        const remove = ((performance.now() - t0) * 1000) / seqs.length;
        db.exec('ROLLBACK');
        results.get(name)!.update.push(update);
        results.get(name)!.remove.push(remove);
      } finally {
        db.close();
      }
    }
  }
  for (const [name, r] of results) console.log(`| ${name} | ${fmt(median(r.update))} | ${fmt(median(r.remove))} |`);
} finally {
  dir.cleanup();
}
