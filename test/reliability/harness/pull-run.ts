/**
 * The pull kill loop (issue 12): an owner process and three owner-mode consumer processes on one
 * file, while this process sends FIFO-grouped messages. Consumers (and now and then the owner) are
 * SIGKILLed at seeded random moments and restarted. Then it drains and checks:
 * - nothing lost: every acked message was handed out and ended; no row is left, none went dead;
 * - no phantom: every hand-out is of a message sent, with its payload;
 * - group order: in the shared log (appended in the order things happened), each group's
 *   hand-outs never go back to an earlier message: message n+1 is never handed out before n ended;
 * - each message ended once: an end after its lease ran out is refused (LEASE_EXPIRED), and its
 *   deliveries count every hand-out, the lost ones too;
 * - the store agrees with itself: integrity_check ok, counters equal the rows.
 * Used by test/reliability/pull-kills.test.ts (the CI tier) and long.ts (`--pull-kills N`).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { createSpool } from '../../../src/index.js';
import { spawnChild, type Child } from '../../helpers/child.js';
import { PULL_CRASH, PULL_CRASH_CONFIG } from '../fixtures/pull-crash-config.js';
import { storeHealth } from './checker.js';
import { between, createRng } from './protocol.js';

const OWNER = fileURLToPath(new URL('../fixtures/pull-owner.ts', import.meta.url));
const WORKER = fileURLToPath(new URL('../fixtures/pull-worker.ts', import.meta.url));
const GROUPS = 8;
const WORKERS = 3;

/** One line of the shared consumer log (see fixtures/pull-worker.ts). */
interface LogLine {
  w: string;
  /** s: handed out; e: ended; x: the end was refused, its lease had run out. */
  e: 's' | 'e' | 'x';
  id: string;
  g?: number;
  n?: number;
  d?: number;
}

/** What a pull kill loop found. */
export interface PullRunResult {
  /** One line of figures. */
  summary: string;
  /** Every invariant broken, one line each (empty when all held). */
  problems: string[];
  kills: number;
  ownerKills: number;
  sent: number;
  handOuts: number;
  /** Hand-outs beyond one per message (holders killed, or leases run out). */
  repeated: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs the loop in `dir` (a fresh directory): `kills` SIGKILLs, `perGroup` messages in each of 8 groups. */
export async function runPullKills(o: { dir: string; seed: number; kills: number; perGroup?: number }): Promise<PullRunResult> {
  const perGroup = o.perGroup ?? 30;
  const path = join(o.dir, 'spool.db');
  const logPath = join(o.dir, 'pull-log.jsonl');
  writeFileSync(logPath, '');
  const random = createRng(o.seed);
  const producer = createSpool({ path, config: PULL_CRASH_CONFIG });
  const children = new Map<string, Child>();
  const launch = async (name: string) => {
    const child = name === 'owner' ? spawnChild(OWNER, [path]) : spawnChild(WORKER, [path, logPath, name]);
    children.set(name, child);
    await child.line('ready');
  };
  const sent = new Map<string, { g: number; n: number }>();
  let ownerKills = 0;
  const began = Date.now();
  let killed = began;
  let remaining: unknown[] = [];
  try {
    await producer.send('warm-up', {}); // The schema exists before any child opens the file.
    await launch('owner');
    for (let w = 0; w < WORKERS; w++) await launch(`w${w}`);

    // Every group's messages in order, groups interleaved: a third before the kills, the rest a
    // slice before each kill, so kills land on busy consumers.
    const order = Array.from({ length: perGroup }, (_, n) => Array.from({ length: GROUPS }, (_, g) => ({ g, n }))).flat();
    const sendSome = async (from: number, to: number) => {
      for (const p of order.slice(from, to)) sent.set(await producer.send(PULL_CRASH.queue, p, { group: `g${p.g}` }), p);
    };
    const head = Math.floor(order.length / 3);
    await sendSome(0, head);
    const slice = Math.ceil((order.length - head) / o.kills);
    for (let k = 0; k < o.kills; k++) {
      await sendSome(head + k * slice, Math.min(order.length, head + (k + 1) * slice));
      await sleep(between(random, 0, 60));
      const name = random() < 0.2 ? 'owner' : `w${between(random, 0, WORKERS - 1)}`;
      if (name === 'owner') ownerKills += 1;
      await children.get(name)!.kill();
      await launch(name);
    }
    await sendSome(head + o.kills * slice, order.length);
    killed = Date.now();

    // Drain: no row of the queue left (done rows are deleted at completion).
    const reader = new Database(path, { readonly: true });
    try {
      const left = reader.prepare('SELECT count(*) FROM messages WHERE queue = ?').pluck();
      const deadline = Date.now() + 60_000;
      while ((left.get(PULL_CRASH.queue) as number) > 0 && Date.now() < deadline) await sleep(50);
      remaining = reader.prepare('SELECT id, state, grp, deliveries FROM messages WHERE queue = ?').all(PULL_CRASH.queue);
    } finally {
      reader.close();
    }
  } finally {
    for (const child of children.values()) await child.kill();
    await producer.close();
  }
  const drained = Date.now();
  return check({ path, logPath, seed: o.seed, kills: o.kills, ownerKills, sent, perGroup, remaining, timing: `kill loop ${killed - began} ms, drain ${drained - killed} ms` });
}

function check(c: {
  path: string;
  logPath: string;
  seed: number;
  kills: number;
  ownerKills: number;
  sent: Map<string, { g: number; n: number }>;
  perGroup: number;
  remaining: unknown[];
  timing: string;
}): PullRunResult {
  const problems: string[] = [];
  const lines = readFileSync(c.logPath, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{') && l.endsWith('}')) // a line torn by a kill is not counted
    .map((l) => JSON.parse(l) as LogLine);
  const starts = lines.filter((l) => l.e === 's');
  if (c.remaining.length) problems.push(`rows left after the drain: ${JSON.stringify(c.remaining.slice(0, 5))} (${c.remaining.length})`);
  for (const s of starts) {
    const p = c.sent.get(s.id);
    if (!p) problems.push(`phantom: ${s.id} was handed out but never sent`);
    else if (p.g !== s.g || p.n !== s.n) problems.push(`${s.id}: handed out as g${s.g}/${s.n}, sent as g${p.g}/${p.n}`);
  }
  const handedOut = new Set(starts.map((s) => s.id));
  const lost = [...c.sent.keys()].filter((id) => !handedOut.has(id));
  if (lost.length) problems.push(`lost: ${lost.length} acked messages never handed out (${lost.slice(0, 5).join(', ')})`);
  for (let g = 0; g < GROUPS; g++) {
    const ns = starts.filter((s) => s.g === g).map((s) => s.n!);
    const back = ns.findIndex((n, i) => i > 0 && n < ns[i - 1]!);
    if (back >= 0) problems.push(`group order: g${g} went back at hand-out ${back}: ${ns.join(',')}`);
    if (new Set(ns).size !== c.perGroup) problems.push(`group g${g}: ${new Set(ns).size} of ${c.perGroup} messages handed out`);
  }
  const byId = new Map<string, number[]>();
  for (const s of starts) byId.set(s.id, [...(byId.get(s.id) ?? []), s.d!]);
  const ends = new Map<string, number>();
  for (const l of lines) if (l.e === 'e') ends.set(l.id, (ends.get(l.id) ?? 0) + 1);
  for (const [id, d] of byId) {
    if ((ends.get(id) ?? 0) > 1) problems.push(`${id} ended ${ends.get(id)} times after ${d.length} hand-outs`);
    if (!d.every((x, i) => i === 0 || x > d[i - 1]!)) problems.push(`${id}: deliveries did not grow: ${d.join(',')}`);
  }
  const db = new Database(c.path, { readonly: true });
  try {
    const health = storeHealth(db);
    if (health.integrity !== 'ok') problems.push(`integrity_check: ${health.integrity}`);
    problems.push(...health.i8);
  } finally {
    db.close();
  }
  const repeated = starts.length - byId.size;
  const summary = `seed=${c.seed} kills=${c.kills} (owner ${c.ownerKills}) sent=${c.sent.size} hand-outs=${starts.length} repeated=${repeated} problems=${problems.length} ${c.timing}`;
  return { summary, problems, kills: c.kills, ownerKills: c.ownerKills, sent: c.sent.size, handOuts: starts.length, repeated };
}
