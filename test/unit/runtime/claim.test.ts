/**
 * The claim over many hot queues of one pool (createClaimer's choose): a claim reuses the
 * candidate rows an earlier claim read and left, instead of one query per hot queue, and still
 * takes exactly the best rows (priority, visible-at, send order) that a fresh read would.
 */
import Database from 'better-sqlite3';
import { describe, expect, it, vi } from 'vitest';
import { createClaimer } from '../../../src/runtime/claim.js';
import type { Pools } from '../../../src/runtime/pools.js';
import { createQueueTracker } from '../../../src/runtime/queues.js';
import type { SupervisorDeps } from '../../../src/runtime/types.js';
import { DEFAULT_SETTINGS } from '../../../src/settings/schema.js';
import { CANDIDATES_SQL } from '../../../src/db/repository.js';
import { NOW, newRow, useTempRepository } from '../../helpers/temp-repository.js';

const t = useTempRepository();

/** A claimer over the temp repository: one pool with `free` slots, every queue handled. */
function setup(names: string[], free: number) {
  const queues = createQueueTracker();
  for (const name of names) queues.heat(name);
  const consumers = new Map(names.map((name) => [name, () => {}]));
  const deps = {
    repo: t.repo,
    clock: { now: () => NOW, setTimeout: () => undefined, clearTimeout: () => {} },
    settings: { get: () => DEFAULT_SETTINGS },
    consumers,
    directory: { isSqs: () => false },
  } as unknown as SupervisorDeps;
  const pools = {
    context: () => ({ paused: {} }),
    poolOf: () => 'default',
    freeSlots: () => ({ default: free }),
    applyReleases: () => {},
  } as unknown as Pools;
  const claimer = createClaimer(deps, pools, queues, () => true, () => {});
  /** One claim, as the committer runs it: the seqs it took, in claim order. */
  const claim = (): number[] => {
    const plan = claimer.plan();
    if (plan === null) return [];
    const taken = claimer.claim(plan).claimed.map((c) => c.row.seq);
    claimer.committed();
    return taken;
  };
  return { queues, claimer, claim };
}

/** What a fresh read finds: the best `want` candidates across `names`. */
function oracle(names: string[], want: number): number[] {
  const rows = names.flatMap((name) => t.db.sqlite.prepare(CANDIDATES_SQL).all(name, 1000) as { seq: number; priority: number; visibleAt: number }[]);
  rows.sort((a, b) => b.priority - a.priority || a.visibleAt - b.visibleAt || a.seq - b.seq);
  return rows.slice(0, want).map((r) => r.seq);
}

describe('claim over many hot queues', () => {
  it('reads each queue once while the rows it left last', () => {
    const names = Array.from({ length: 50 }, (_, i) => `q${i}`);
    for (const name of names) for (let i = 0; i < 2; i++) t.repo.insert(newRow(name, { priority: i }));
    const { queues, claim } = setup(names, 4);
    // Mocks only count: the real query runs.
    const spy = vi.spyOn(t.repo, 'candidates');
    const expected = oracle(names, 100);
    const taken: number[] = [];
    const perClaim: number[] = [];
    for (let i = 0; i < 25; i++) {
      spy.mockClear();
      taken.push(...claim());
      perClaim.push(spy.mock.calls.length);
    }
    // The first claim reads every queue (each answered short: all it has); the others read none.
    expect(perClaim).toEqual([50, ...Array(24).fill(0)]);
    expect(taken).toEqual(expected);
    expect(queues.hot.size).toBe(0);
    expect(claim()).toEqual([]);
  });

  it('takes what a fresh read would as rows come, change and go between claims', () => {
    const names = Array.from({ length: 20 }, (_, i) => `q${i}`);
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const pick = () => names[Math.floor(random() * names.length)]!;
    for (let i = 0; i < 120; i++) t.repo.insert(newRow(pick(), { priority: Math.floor(random() * 3) }));
    const { queues, claim } = setup(names, 3);
    const other = new Database(t.db.sqlite.name);
    try {
      for (let round = 0; round < 150; round++) {
        const r = random();
        if (r < 0.3) {
          // A local send: its queue is heated, as the runtime's noteSent does.
          const queue = pick();
          t.repo.insert(newRow(queue, { priority: Math.floor(random() * 4) }));
          queues.heat(queue);
        } else if (r < 0.4) {
          // A writer of this process that heats nothing takes a candidate (as a pull lease would).
          t.db.sqlite.prepare(`UPDATE messages SET state = 'processing', lease_token = 'x' WHERE seq = (SELECT seq FROM messages WHERE state = 'pending' ORDER BY random() LIMIT 1)`).run();
        } else if (r < 0.5) {
          // Another connection (another process) sends a better row to a queue without heating it.
          other.prepare(`UPDATE messages SET priority = 9 WHERE seq = (SELECT seq FROM messages WHERE state = 'pending' ORDER BY random() LIMIT 1)`).run();
        }
        const want = oracle(names, 3);
        expect(claim()).toEqual(want);
      }
    } finally {
      other.close();
    }
  });

  it('reads afresh after a claim whose commit was not reported (rolled back)', () => {
    const names = ['a', 'b', 'c'];
    for (const name of names) for (let i = 0; i < 2; i++) t.repo.insert(newRow(name, { priority: name === 'c' ? 0 : 5 - i * 5 }));
    const { claimer, queues, claim } = setup(names, 4);
    const expected = oracle(names, 4);
    t.db.sqlite.exec('SAVEPOINT claim');
    const plan = claimer.plan()!;
    expect(claimer.claim(plan).claimed.map((c) => c.row.seq)).toEqual(expected);
    // It took all of a and b: they cooled.
    expect([...queues.hot]).toEqual(['c']);
    t.db.sqlite.exec('ROLLBACK TO claim; RELEASE claim');
    // Its rows are pending again, and taken first, as before.
    const spy = vi.spyOn(t.repo, 'candidates');
    expect(claim()).toEqual(expected);
    expect(spy).toHaveBeenCalledTimes(3);
  });
});
