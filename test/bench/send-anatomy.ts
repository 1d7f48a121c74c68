/**
 * Where the time of one awaited `send()` goes, in one run on this machine: Spool's own send, then
 * the statement it runs by hand on Spool's own schema (no runtime around it; the count of a send is
 * left to the fold, see src/db/counters.ts), then the same with the counts written in the send's
 * own commit (as before migration 0004), then the floor's one-column insert. The differences split
 * a send into the runtime's JavaScript (validation, group commit, events, the file check), the
 * schema's row and claim-index cost, and what the counters page would cost each send. WAL,
 * synchronous NORMAL, as Spool's default. The hand-run connections checkpoint between chunks of
 * sends, untimed: a started spool's maintenance worker checkpoints on its own thread, and a
 * checkpoint inside a timed commit (SQLite's automatic one) would be counted as the schema's cost.
 *
 *   node --import tsx test/bench/send-anatomy.ts [--n 20000]
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { LIVE_ROW } from '../../src/db/removal.js';
import { createSpool } from '../../src/index.js';
import { fmt, payload, tempDir } from './common.js';
import { machineInfo } from './machine.js';

const { values } = parseArgs({ options: { n: { type: 'string', default: '20000' } } });
const n = Number(values.n);
const body = payload(0);

/** Operations between two untimed checkpoints of a hand-run connection. */
const CHUNK = 2000;

/**
 * µs per operation of `n` runs of `op` (awaited when it returns a promise), after a warm-up;
 * `between`, if given, runs untimed after every CHUNK operations.
 */
async function perOp(op: (i: number) => unknown, between?: () => void): Promise<number> {
  for (let i = 0; i < 500; i++) await op(i);
  let ms = 0;
  for (let done = 0; done < n; ) {
    between?.();
    const start = performance.now();
    const end = Math.min(n, done + CHUNK);
    for (; done < end; done++) await op(done);
    ms += performance.now() - start;
  }
  return (ms * 1000) / n;
}

/** A hand-run connection without SQLite's automatic checkpoint, and its untimed checkpoint. */
function untimedCheckpoints(db: Database.Database): () => void {
  db.pragma('wal_autocheckpoint = 0');
  return () => db.pragma('wal_checkpoint(TRUNCATE)');
}

/** Spool's send(): started, the queue paused, an events$ subscriber attached (the bench's app setting). */
async function spoolSend(dir: string): Promise<number> {
  const spool = createSpool({ path: join(dir, 'spool.db'), config: { queues: { bench: { paused: true } } } });
  const sub = spool.events$.subscribe(() => {});
  try {
    await spool.start();
    return await perOp(() => spool.send('bench', body));
  } finally {
    sub.unsubscribe();
    await spool.close();
  }
}

/** The insert Spool's repository runs, by hand on a file Spool made, with or without the counters in its commit. */
async function rawSend(dir: string, counters: boolean): Promise<number> {
  const path = join(dir, counters ? 'raw.db' : 'raw-nocount.db');
  const made = createSpool({ path });
  await made.start();
  await made.close();
  const db = new Database(path);
  try {
    db.pragma('synchronous = NORMAL');
    const insert = db.prepare(`INSERT INTO messages (seq, queue, payload, state, failures, attempt, deliveries, crashes, visible_at,
      lease_expires_at, last_error, priority, ready, dedupe_key, created_at, updated_at, grp, head, history)
      VALUES (?, 'bench', ?, 'pending', 0, 0, 0, 0, ?, NULL, NULL, 0, 1, NULL, ?, ?, NULL, 1, '')
      ON CONFLICT (queue, dedupe_key) WHERE dedupe_key IS NOT NULL AND ${LIVE_ROW} DO NOTHING`);
    const upsert = db.prepare('INSERT INTO counters (scope, name, n) VALUES (?, ?, ?) ON CONFLICT (scope, name) DO UPDATE SET n = n + excluded.n');
    const setLast = db.prepare(`INSERT INTO counters (scope, name, n) VALUES ('', 'last_seq', ?) ON CONFLICT (scope, name) DO UPDATE SET n = excluded.n`);
    const lastSeq = db.prepare(`SELECT max(coalesce((SELECT n FROM counters WHERE scope = '' AND name = 'last_seq'), 0), coalesce((SELECT max(seq) FROM messages), 0))`).pluck();
    const begin = db.prepare('BEGIN IMMEDIATE');
    const commit = db.prepare('COMMIT');
    const json = JSON.stringify(body);
    const checkpoint = untimedCheckpoints(db);
    return await perOp(() => {
      const now = Date.now();
      begin.run();
      const seq = (lastSeq.get() as number) + 1;
      insert.run(seq, json, now, now, now);
      if (counters) {
        upsert.run('bench', 'pending', 1);
        upsert.run('', 'arrivals:bench', 1);
        setLast.run(seq);
      }
      commit.run();
    }, checkpoint);
  } finally {
    db.close();
  }
}

/** The floor's send: one autocommit insert into a table without an index. */
async function floorSend(dir: string): Promise<number> {
  const db = new Database(join(dir, 'floor.db'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec('CREATE TABLE jobs (id INTEGER PRIMARY KEY, payload TEXT NOT NULL, claimed INTEGER NOT NULL DEFAULT 0)');
    const insert = db.prepare('INSERT INTO jobs (payload) VALUES (?)');
    const json = JSON.stringify(body);
    return await perOp(() => insert.run(json), untimedCheckpoints(db));
  } finally {
    db.close();
  }
}

const dir = tempDir(undefined, 'spool-bench-send-');
try {
  const m = machineInfo(undefined);
  console.log(`one awaited send, by part — ${m.cpu}, ${m.cores} cores; Node ${m.node}, SQLite ${m.sqlite}; ${m.fileSystem}; N = ${n.toLocaleString('en-US')} each`);
  const spool = await spoolSend(dir.dir);
  const bare = await rawSend(dir.dir, false);
  const counted = await rawSend(dir.dir, true);
  const floor = await floorSend(dir.dir);
  console.log('| what | µs per send | sends/s | the difference is |');
  console.log('|---|---:|---:|---|');
  console.log(`| Spool send() | ${fmt(spool)} | ${fmt(1e6 / spool)} | the runtime: ${fmt(spool - bare)} µs |`);
  console.log(`| its statement by hand, Spool's schema (counts left to the fold) | ${fmt(bare)} | ${fmt(1e6 / bare)} | the schema (row, claim index): ${fmt(bare - floor)} µs |`);
  console.log(`| the same with the counts in its commit (before 0004) | ${fmt(counted)} | ${fmt(1e6 / counted)} | the counters page: ${fmt(counted - bare)} µs |`);
  console.log(`| the floor's insert | ${fmt(floor)} | ${fmt(1e6 / floor)} | |`);
} finally {
  dir.cleanup();
}
