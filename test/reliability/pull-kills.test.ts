/**
 * Pull consumers under SIGKILL (issue 12): an owner process and three owner-mode consumer
 * processes on one file, while this process sends FIFO-grouped messages. Consumers (and now and
 * then the owner) are killed at seeded random moments and restarted. Then:
 * - nothing lost: every acked message was handed out and ended; no row is left, none went dead;
 * - no phantom: every hand-out is of a message sent, with its payload;
 * - group order: in the shared log (appended in the order things happened), each group's
 *   hand-outs never go back to an earlier message: message n+1 is never handed out before n ended;
 * - duplicates are explained: a message handed out again had its holder killed or its lease expire;
 * - the store agrees with itself: integrity_check ok, counters equal the rows.
 * Reproduce a schedule with SPOOL_SEED=<seed>; SPOOL_PULL_KILLS=<n> runs a longer tier (CI: 15).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { spawnChild, type Child } from '../helpers/child.js';
import { useTempSpools } from '../helpers/spool.js';
import { PULL_CRASH, PULL_CRASH_CONFIG } from './fixtures/pull-crash-config.js';
import { storeHealth } from './harness/checker.js';
import { createRng, between } from './harness/protocol.js';

const OWNER = fileURLToPath(new URL('./fixtures/pull-owner.ts', import.meta.url));
const WORKER = fileURLToPath(new URL('./fixtures/pull-worker.ts', import.meta.url));
const SEED = process.env.SPOOL_SEED !== undefined ? Number(process.env.SPOOL_SEED) : Math.floor(Math.random() * 2 ** 31);
const KILLS = Number(process.env.SPOOL_PULL_KILLS ?? 15);
const GROUPS = 8;
const PER_GROUP = 30;
const WORKERS = 3;

const spools = useTempSpools();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface LogLine {
  w: string;
  e: 's' | 'e' | 'x';
  id: string;
  g?: number;
  n?: number;
  d?: number;
}

describe('pull consumers under SIGKILL', () => {
  it(`lose nothing and keep each group's order across ${KILLS} kills of consumers and the owner`, async () => {
    const path = spools.path;
    const logPath = join(spools.dir, 'pull-log.jsonl');
    writeFileSync(logPath, '');
    const random = createRng(SEED);
    const producer = spools.open({ config: PULL_CRASH_CONFIG });
    await producer.send('warm-up', {}); // The schema exists before any child opens the file.

    const children = new Map<string, Child>();
    const launch = async (name: string) => {
      const child = name === 'owner' ? spawnChild(OWNER, [path]) : spawnChild(WORKER, [path, logPath, name]);
      children.set(name, child);
      await child.line('ready');
    };
    spools.onCleanup(async () => {
      for (const child of children.values()) await child.kill();
    });
    await launch('owner');
    for (let w = 0; w < WORKERS; w++) await launch(`w${w}`);

    // Every group's messages in order, groups interleaved.
    const sent = new Map<string, { g: number; n: number }>();
    const order = Array.from({ length: PER_GROUP }, (_, n) => Array.from({ length: GROUPS }, (_, g) => ({ g, n }))).flat();
    const sendSome = async (from: number, to: number) => {
      for (const p of order.slice(from, to)) sent.set(await producer.send(PULL_CRASH.queue, p, { group: `g${p.g}` }), p);
    };
    // A third before the kills, the rest a slice before each kill, so kills land on busy consumers.
    const head = order.length / 3;
    await sendSome(0, head);
    const slice = Math.ceil((order.length - head) / KILLS);

    let ownerKills = 0;
    const began = Date.now();
    for (let k = 0; k < KILLS; k++) {
      await sendSome(head + k * slice, Math.min(order.length, head + (k + 1) * slice));
      await sleep(between(random, 0, 60));
      const name = random() < 0.2 ? 'owner' : `w${between(random, 0, WORKERS - 1)}`;
      if (name === 'owner') ownerKills += 1;
      await children.get(name)!.kill();
      await launch(name);
    }
    const killed = Date.now();

    // Drain: no row of the queue left (done rows are deleted at completion).
    const reader = new Database(path, { readonly: true });
    const left = reader.prepare('SELECT count(*) FROM messages WHERE queue = ?').pluck();
    const deadline = Date.now() + 60_000;
    while ((left.get(PULL_CRASH.queue) as number) > 0 && Date.now() < deadline) await sleep(50);
    const remaining = reader.prepare('SELECT id, state, grp, deliveries FROM messages WHERE queue = ?').all(PULL_CRASH.queue);
    reader.close();
    for (const child of children.values()) await child.kill();
    const drained = Date.now();

    const lines = readFileSync(logPath, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{') && l.endsWith('}')) // a line torn by a kill is not counted
      .map((l) => JSON.parse(l) as LogLine);
    const starts = lines.filter((l) => l.e === 's');
    const report = `seed=${SEED} kills=${KILLS} (owner ${ownerKills}) sent=${sent.size} hand-outs=${starts.length} kill loop ${killed - began} ms, drain ${drained - killed} ms`;
    console.log(`pull kills: ${report}`);

    expect(remaining, `${report}: rows left`).toEqual([]);
    // No phantom, payloads intact.
    for (const s of starts) expect(sent.get(s.id), `${report}: ${s.id} was never sent`).toEqual({ g: s.g, n: s.n });
    // Nothing lost: every acked message was handed out.
    const handedOut = new Set(starts.map((s) => s.id));
    expect([...sent.keys()].filter((id) => !handedOut.has(id)), `${report}: never handed out`).toEqual([]);
    // Group order: per group, the n of successive hand-outs never decreases.
    for (let g = 0; g < GROUPS; g++) {
      const ns = starts.filter((s) => s.g === g).map((s) => s.n!);
      const back = ns.findIndex((n, i) => i > 0 && n < ns[i - 1]!);
      expect(back, `${report}: group ${g} went back at hand-out ${back}: ${ns.join(',')}`).toBe(-1);
      expect(new Set(ns).size, `${report}: group ${g}`).toBe(PER_GROUP);
    }
    // Each message ended exactly once (an end after the lease ran out is refused: LEASE_EXPIRED),
    // and its deliveries count every hand-out, the lost ones too: they only grow.
    const byId = new Map<string, number[]>();
    for (const s of starts) byId.set(s.id, [...(byId.get(s.id) ?? []), s.d!]);
    const ends = new Map<string, number>();
    for (const l of lines) if (l.e === 'e') ends.set(l.id, (ends.get(l.id) ?? 0) + 1);
    for (const [id, d] of byId) {
      expect(ends.get(id) ?? 0, `${report}: ${id} ended ${ends.get(id) ?? 0} times after ${d.length} hand-outs`).toBeLessThanOrEqual(1);
      expect(d.every((x, i) => i === 0 || x > d[i - 1]!), `${report}: ${id} deliveries ${d.join(',')}`).toBe(true);
    }
    const duplicates = starts.length - byId.size;
    console.log(`pull kills: ${duplicates} repeated hand-outs (holders killed or leases run out)`);
    const db = new Database(path, { readonly: true });
    try {
      const health = storeHealth(db);
      expect(health.integrity).toBe('ok');
      expect(health.i8).toEqual([]);
    } finally {
      db.close();
    }
  }, 180_000);
});
