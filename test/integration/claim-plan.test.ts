/** The claim path's and the pull lease expiry's query plans with 100k delayed rows present: index seeks, no scan, no temp B-tree. */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSpool, type Spool } from '../../src/index.js';
import { CANDIDATES_SQL, EXPIRED_LEASES_SQL, NEXT_DELAYED_SQL, NEXT_LEASE_EXPIRY_SQL, PROMOTE_SQL, UNDATED_LEASES_SQL } from '../../src/db/repository.js';
import { reached } from '../helpers/events.js';
import { tempDb } from '../helpers/temp-db.js';

const DELAYED = 100_000;
const CHUNK = 10_000;
const QUEUES = ['email', 'sms', 'video', 'push'];

let db: ReturnType<typeof tempDb>;
let spool: Spool;
let other: Database.Database;

/** The plan's detail lines, e.g. `SEARCH messages USING INDEX messages_claim (queue=?)`. */
function plan(sql: string, ...params: unknown[]): string[] {
  return (other.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail);
}

function expectIndexOnly(lines: string[], index: string) {
  expect(lines.join('\n')).toContain(`INDEX ${index}`);
  for (const line of lines) {
    // A seek (SEARCH), never a walk of the table or of a whole index (SCAN).
    expect(line).not.toContain('SCAN');
    expect(line).not.toContain('USE TEMP B-TREE');
  }
}

function checkPlans() {
  const now = Date.now();
  const claim = plan(CANDIDATES_SQL, 'email', 100);
  expectIndexOnly(claim, 'messages_claim');
  // The index's order is the claim's ORDER BY: no sorting step.
  expect(claim.every((l) => l.includes('messages_claim'))).toBe(true);
  expectIndexOnly(plan(PROMOTE_SQL, now), 'messages_delayed');
  expectIndexOnly(plan(NEXT_DELAYED_SQL), 'messages_delayed');
  // Pull lease expiry: seeks of the in-flight index, its deadline range and its NULL entries.
  expectIndexOnly(plan(EXPIRED_LEASES_SQL, now, 100), 'messages_inflight');
  expectIndexOnly(plan(UNDATED_LEASES_SQL, 100), 'messages_inflight');
  // The next deadline walks that index in order from its start (NULLs first) to the first pull
  // lease: the in-flight rows only, never the delayed ones, and no sort.
  const next = plan(`SELECT ${NEXT_LEASE_EXPIRY_SQL}`);
  expect(next.join('\n')).toContain('USING INDEX messages_inflight');
  expect(next.join('\n')).not.toMatch(/TEMP B-TREE|SCAN messages(?! USING INDEX)/);
}

beforeAll(async () => {
  db = tempDb();
  spool = createSpool({ path: db.path });
  // Delayed rows of every queue and priority, spread over a day: none of them may be on the claim path.
  for (let i = 0; i < DELAYED; i += CHUNK) {
    const queue = QUEUES[(i / CHUNK) % QUEUES.length]!;
    const payloads = Array.from({ length: CHUNK }, (_, j) => ({ n: i + j }));
    await spool.sendBatch(queue, payloads, { delayMs: 3_600_000 + i, priority: (i / CHUNK) % 3 });
  }
  // A few ready rows, so the claim has something to find.
  for (const queue of QUEUES) await spool.sendBatch(queue, [1, 2, 3], { priority: 1 });
  other = new Database(db.path);
}, 60_000);

afterAll(async () => {
  other?.close();
  await spool?.close();
  db?.cleanup();
});

describe('claim query plan with 100k delayed rows', () => {
  it('the rows are there', () => {
    expect(other.prepare('SELECT COUNT(*) AS n FROM messages WHERE ready = 0').get()).toEqual({ n: DELAYED });
    expect(other.prepare('SELECT COUNT(*) AS n FROM messages WHERE ready = 1').get()).toEqual({ n: QUEUES.length * 3 });
  });

  it('claim, promotion and next-delayed use their partial indexes, with no scan and no temp B-tree', () => {
    checkPlans();
  });

  it('the plans hold after ANALYZE gives the planner statistics', () => {
    other.exec('ANALYZE');
    checkPlans();
  });

  it('a running spool claims the ready rows and leaves every delayed row alone', async () => {
    for (const queue of QUEUES) spool.register(queue, () => {});
    const done = reached(spool.events$, 'done', QUEUES.length * 3);
    await spool.start();
    await done;
    await spool.stop();
    expect(other.prepare('SELECT state, ready, COUNT(*) AS n FROM messages GROUP BY state, ready').all()).toEqual([
      { state: 'pending', ready: 0, n: DELAYED },
    ]);
  });
});
