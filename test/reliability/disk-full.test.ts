/**
 * A full disk, simulated with `PRAGMA max_page_count`. The pragma is per connection and not
 * persisted, so it must be set on the spool's own connection: the test wraps the better-sqlite3
 * constructor (vi.mock) to see every connection Spool opens, and sets the limit on the one for the
 * spool file. Spool's code is unchanged; only the page budget of its real connection shrinks.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SpoolError, type Spool, type SpoolEvent } from '../../src/index.js';
import { transactionCount } from '../../src/db/transaction.js';
import { nextEvent, reached } from '../helpers/events.js';
import { createBaton } from '../helpers/gate.js';
import { useTempSpools } from '../helpers/spool.js';

const opened = vi.hoisted(() => [] as BetterSqlite3.Database[]);

vi.mock('better-sqlite3', async (importOriginal) => {
  const original = await importOriginal<{ default: typeof BetterSqlite3 }>();
  const Real = original.default;
  // A subclass, so `new Database(path)` in src/db behaves exactly as before, and is recorded.
  class Tracked extends (Real as unknown as new (...args: unknown[]) => BetterSqlite3.Database) {
    constructor(...args: unknown[]) {
      super(...args);
      opened.push(this);
    }
  }
  return { ...original, default: Tracked };
});

const spools = useTempSpools();
let inspector: BetterSqlite3.Database | undefined;

afterEach(() => {
  inspector = undefined;
  opened.length = 0;
});

/** The connection Spool opened on its database file (not the `.lock` sidecar, not ours). */
function spoolConnection(path: string): BetterSqlite3.Database {
  const found = opened.filter((c) => c.name === path && c !== inspector && c.open);
  expect(found).toHaveLength(1);
  return found[0]!;
}

function look() {
  inspector ??= spools.connect({ readonly: true });
  const conn = inspector;
  return {
    count: (queue: string, state?: string) =>
      (conn
        .prepare(`SELECT COUNT(*) AS n FROM messages WHERE queue = ? ${state ? 'AND state = ?' : ''}`)
        .get(...(state ? [queue, state] : [queue])) as { n: number }).n,
    integrity: () => conn.pragma('integrity_check', { simple: true }),
    stateOf: (id: string) => (conn.prepare('SELECT state FROM messages WHERE id = ?').get(id) as { state: string } | undefined)?.state,
  };
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(SpoolError);
    return (error as SpoolError).code;
  }
  return 'resolved';
}

describe('a full disk (max_page_count)', () => {
  it('rejects sends with STORAGE_FULL, keeps every stored row, retries transitions, and resumes when space returns', async () => {
    const spool = spools.open({
      config: {
        // The filler queue is paused so its rows stay pending and nothing but our sends writes.
        queues: { filler: { paused: true } },
        queueDefaults: { maxAttempts: 3, backoff: { type: 'fixed', delayMs: 0, maxDelayMs: 0, jitter: false } },
      },
    });
    const baton = createBaton();
    const attempts: { id: string; attempt: number }[] = [];
    spool.register('work', async (message) => {
      attempts.push({ id: message.id, attempt: message.attempt });
      await baton.enter();
      // A first attempt fails with a large error: storing it (lastError, snapshot) needs new pages.
      if (message.attempt === 1) throw new Error(`first attempt failed: ${'x'.repeat(6000)}`);
    });
    spool.register('filler', () => {});
    await spool.start();
    const seen: SpoolEvent[] = [];
    const sub = spool.events$.subscribe((e) => seen.push(e));

    const work = await Promise.all([1, 2, 3].map((n) => spool.send('work', { n })));
    await baton.arrived(3);

    // Shrink the budget to just above the current size, then fill it with ever smaller rows.
    const conn = spoolConnection(spools.path);
    const pages = conn.pragma('page_count', { simple: true }) as number;
    conn.pragma(`max_page_count = ${pages + 4}`);
    const stored: string[] = [];
    for (const size of [8192, 1024, 128, 8]) {
      for (;;) {
        const outcome = await spool.send('filler', { pad: 'f'.repeat(size) }).then(
          (id) => ({ id }),
          (error: unknown) => ({ error }),
        );
        if ('id' in outcome) {
          stored.push(outcome.id);
          continue;
        }
        expect(outcome.error).toBeInstanceOf(SpoolError);
        expect((outcome.error as SpoolError).code).toBe('STORAGE_FULL');
        break;
      }
    }
    expect(stored.length).toBeGreaterThan(0);

    // Full: single sends and batches reject with the code, and store nothing.
    const db1 = look();
    expect(await codeOf(spool.send('filler', { pad: 'g'.repeat(4096) }))).toBe('STORAGE_FULL');
    expect(await codeOf(spool.sendBatch('filler', [{ a: 'h'.repeat(3000) }, { b: 'h'.repeat(3000) }]))).toBe('STORAGE_FULL');
    expect(db1.count('filler')).toBe(stored.length);
    expect(db1.integrity()).toBe('ok');

    // The three handlers now fail; each FAIL transition needs space it does not get, and waits.
    const waiting = nextEvent(spool.events$, (e) => e.type === 'error' && e.code === 'STORAGE_FULL', { timeoutMs: 10_000 });
    baton.openForever();
    await waiting;
    for (const id of work) expect(db1.stateOf(id)).toBe('processing');
    expect(seen.filter((e) => e.type === 'message.state' && work.includes(e.id) && e.from === 'processing')).toEqual([]);

    // Space returns: the waiting transitions land, the retries run, and sends work again.
    const done = reached(spool.events$, 'done', 3, 'work', 15_000);
    conn.pragma('max_page_count = 1073741823');
    await done;
    for (const id of work) {
      const failed = seen.find((e) => e.type === 'message.state' && e.id === id && e.from === 'processing' && e.to === 'pending');
      expect(failed).toBeDefined();
      expect(await spool.get(id)).toBeUndefined();
    }
    expect(attempts.filter((a) => a.attempt === 2).map((a) => a.id).sort()).toEqual([...work].sort());
    const after = await spool.send('filler', { pad: 'after' });
    expect(db1.count('filler', 'pending')).toBe(stored.length + 1);
    for (const id of [...stored, after]) expect((await spool.get(id))?.state).toBe('pending');
    expect(db1.integrity()).toBe('ok');
    sub.unsubscribe();
  });
});

describe('liveness on a full disk', () => {
  /** Fills the spool's file up to a page budget just above its size, with ever smaller sends. */
  async function fillUp(spool: Spool, conn: BetterSqlite3.Database) {
    conn.pragma(`max_page_count = ${(conn.pragma('page_count', { simple: true }) as number) + 2}`);
    for (const size of [8192, 1024, 128, 8]) {
      while (await spool.send('filler', { pad: 'f'.repeat(size) }).then(() => true, () => false));
    }
    return conn;
  }

  it('backs off a claim that fails on a full disk and reports it once, instead of spinning', async () => {
    const spool = spools.open({ config: { queues: { filler: { paused: true }, held: { paused: true } } } });
    spool.register('held', () => {});
    spool.register('filler', () => {});
    await spool.start();
    await spool.sendBatch('held', Array.from({ length: 20 }, (_, n) => ({ n })));
    // The fault: every claimed row of "held" also writes 8 KB elsewhere, so on a full disk the
    // claim itself fails (SQLITE_FULL rolls back its whole transaction), every time it runs.
    const conn = spoolConnection(spools.path);
    const side = spools.connect();
    side.exec(`CREATE TABLE ballast (b BLOB);
      CREATE TRIGGER claim_ballast AFTER UPDATE OF state ON messages WHEN new.queue = 'held' AND new.state = 'processing'
      BEGIN INSERT INTO ballast VALUES (randomblob(8192)); END;`);
    await fillUp(spool, conn);
    const seen: SpoolEvent[] = [];
    spool.events$.subscribe((e) => seen.push(e));

    const failing = nextEvent(spool.events$, (e) => e.type === 'error' && e.code === 'STORAGE_FULL', { timeoutMs: 10_000 });
    await spool.settings.update({ queues: { held: { paused: false } } });
    await failing;
    const before = transactionCount(conn);
    await new Promise((resolve) => setTimeout(resolve, 600));
    const attempts = transactionCount(conn) - before;
    // A retry every ~100 ms is about 6 in 600 ms; the spin this guards against was ~1,500 a second.
    expect(attempts).toBeGreaterThan(0);
    expect(attempts).toBeLessThan(30);
    expect(seen.filter((e) => e.type === 'error')).toHaveLength(1);
    expect(seen.filter((e) => e.type === 'message.state')).toEqual([]);

    // Space returns: the next retry claims and the queue drains.
    const done = reached(spool.events$, 'done', 20, 'held', 15_000);
    side.exec('DROP TRIGGER claim_ballast');
    conn.pragma('max_page_count = 1073741823');
    await done;
  });

  it('keeps close({ timeoutMs }) bounded while settles wait for space; boot recovery finds the messages', async () => {
    const spool = spools.open({ config: { queues: { filler: { paused: true } } } });
    const baton = createBaton();
    spool.register('work', async () => {
      await baton.enter();
      throw new Error(`fails with a large error: ${'x'.repeat(6000)}`);
    });
    spool.register('filler', () => {});
    await spool.start();
    const ids = await Promise.all([1, 2].map((n) => spool.send('work', { n })));
    await baton.arrived(2);
    await fillUp(spool, spoolConnection(spools.path));
    const waiting = nextEvent(spool.events$, (e) => e.type === 'error' && e.code === 'STORAGE_FULL', { timeoutMs: 10_000 });
    baton.openForever();
    await waiting;
    // The settles cannot land; close() must still resolve, leaving them in flight on disk.
    await spool.close({ timeoutMs: 100 });
    const state = look();
    for (const id of ids) expect(state.stateOf(id)).toBe('processing');

    const next = spools.open();
    const handled: string[] = [];
    next.register('work', (m) => {
      handled.push(m.id);
    });
    next.register('filler', () => {});
    const recovered = nextEvent(next.events$, (e) => e.type === 'spool.recovered');
    const done = reached(next.events$, 'done', 2, 'work');
    await next.start();
    expect(await recovered).toMatchObject({ pending: 2, dead: 0 });
    await done;
    expect(handled.sort()).toEqual([...ids].sort());
  });
});
