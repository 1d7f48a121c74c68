import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/clock.js';
import { openDatabase, type DbHandle } from '../../../src/db/client.js';
import { SpoolError } from '../../../src/errors.js';
import { createEventBus, type EventBus } from '../../../src/events.js';
import { createCommitter, type Committer, type Op } from '../../../src/runtime/committer.js';
import { transactionCount } from '../../../src/db/transaction.js';
import { nextEvent } from '../../helpers/events.js';
import { tempDb } from '../../helpers/temp-db.js';

describe('committer', () => {
  let temp: ReturnType<typeof tempDb>;
  let handle: DbHandle;
  let reader: Database.Database;
  let events: EventBus;
  let committer: Committer;
  const counter = { value: 0 };

  beforeEach(() => {
    temp = tempDb();
    handle = openDatabase(temp.path, 'normal');
    // Counts the top-level transactions run on the committer's connection from here on.
    const base = transactionCount(handle.sqlite);
    Object.defineProperty(counter, 'value', { get: () => transactionCount(handle.sqlite) - base, configurable: true });
    reader = new Database(temp.path);
    events = createEventBus();
    committer = createCommitter(handle.sqlite, events, systemClock);
  });

  afterEach(() => {
    committer.close();
    events.complete();
    reader.close();
    handle.close();
    temp.cleanup();
  });

  const insertQueue = (name: string) =>
    handle.sqlite.prepare('INSERT INTO queues (name, created_at) VALUES (?, ?)').run(name, 1);
  const names = (conn: Database.Database) =>
    (conn.prepare('SELECT name FROM queues ORDER BY name').all() as { name: string }[]).map((r) => r.name);

  /** An op that inserts queue rows and settles a promise either way. */
  function op(kind: Op['kind'], run: () => unknown, onCommitted?: () => void) {
    let resolve!: (value: unknown) => void;
    let reject!: (error: SpoolError) => void;
    const settled = new Promise<unknown>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const item: Op = {
      kind,
      run,
      committed: (result) => {
        onCommitted?.();
        resolve(result);
      },
      failed: (error) => reject(error),
    };
    return { item, settled };
  }

  it('commits every op enqueued in the same tick in one transaction, then calls committed in order', async () => {
    const log: string[] = [];
    const seen: Record<string, { own: string[]; reader: string[]; inTransaction: boolean }> = {};
    const ops = ['a', 'b', 'c'].map((name) =>
      op(
        'send',
        () => {
          log.push(`run ${name}`);
          insertQueue(name);
          seen[name] = { own: names(handle.sqlite), reader: names(reader), inTransaction: handle.sqlite.inTransaction };
          return name.toUpperCase();
        },
        () => log.push(`committed ${name}`),
      ),
    );
    for (const { item } of ops) committer.enqueue(item);
    expect(log).toEqual([]); // nothing runs synchronously in enqueue

    expect(await Promise.all(ops.map((o) => o.settled))).toEqual(['A', 'B', 'C']);
    expect(counter.value).toBe(1);
    expect(log).toEqual(['run a', 'run b', 'run c', 'committed a', 'committed b', 'committed c']);
    // Each op saw the earlier ops' uncommitted writes; another connection saw none of them.
    expect(seen).toEqual({
      a: { own: ['a'], reader: [], inTransaction: true },
      b: { own: ['a', 'b'], reader: [], inTransaction: true },
      c: { own: ['a', 'b', 'c'], reader: [], inTransaction: true },
    });
    expect(names(reader)).toEqual(['a', 'b', 'c']);
  });

  it('commits ops of a later tick in a later transaction', async () => {
    const first = op('send', () => insertQueue('first'));
    committer.enqueue(first.item);
    await first.settled;
    let readerSaw: string[] = [];
    const second = op('send', () => {
      insertQueue('second');
      readerSaw = names(reader);
    });
    committer.enqueue(second.item);
    await second.settled;
    expect(counter.value).toBe(2);
    expect(readerSaw).toEqual(['first']);
  });

  it('fails a failing op alone while the others commit, rolling back its partial writes', async () => {
    insertQueue('existing');
    const a = op('send', () => insertQueue('a'));
    const bad = op('send', () => {
      insertQueue('bad-partial');
      insertQueue('existing'); // PRIMARY KEY violation
    });
    const c = op('transition', () => insertQueue('c'));
    for (const { item } of [a, bad, c]) committer.enqueue(item);

    await expect(a.settled).resolves.toBeDefined();
    await expect(c.settled).resolves.toBeDefined();
    const error = await bad.settled.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SpoolError);
    expect((error as SpoolError).code).toBe('STORAGE_ERROR');
    expect(((error as SpoolError).cause as { code?: string }).code).toBe('SQLITE_CONSTRAINT_PRIMARYKEY');
    // The good ops landed once each; nothing of the bad op did.
    expect(names(reader)).toEqual(['a', 'c', 'existing']);
    await committer.drain();
  });

  it('calls committed only once the data is visible to a second connection', async () => {
    const visible: string[][] = [];
    const ok = op('send', () => insertQueue('visible'), () => visible.push(names(reader)));
    const bad = op('send', () => insertQueue('visible'));
    const other = op('send', () => insertQueue('other'), () => visible.push(names(reader)));
    committer.enqueue(ok.item);
    committer.enqueue(bad.item);
    committer.enqueue(other.item);
    await ok.settled;
    await other.settled;
    await expect(bad.settled).rejects.toBeInstanceOf(SpoolError);
    // Both through the isolated (savepoint) pass, and still only after its commit.
    expect(visible).toEqual([
      ['other', 'visible'],
      ['other', 'visible'],
    ]);

    const plain: string[][] = [];
    const happy = op('send', () => insertQueue('happy'), () => plain.push(names(reader)));
    committer.enqueue(happy.item);
    await happy.settled;
    expect(plain).toEqual([['happy', 'other', 'visible']]);
  });

  it('runs the hook inside the group transaction after the ops, and wake() runs it alone', async () => {
    const log: string[] = [];
    let hookSaw: string[] = [];
    let hookDone!: () => void;
    let hookCommitted = new Promise<void>((resolve) => (hookDone = resolve));
    committer.setHook({
      plan: () => 'claim',
      run: () => {
        hookSaw = names(handle.sqlite);
        log.push('hook run');
        return hookSaw.length;
      },
      committed: (count) => {
        log.push(`hook committed ${String(count)}`);
        hookDone();
      },
      failed: (error) => log.push(`hook failed ${error.code}`),
    });
    const a = op('send', () => (log.push('run a'), insertQueue('a')), () => log.push('committed a'));
    committer.enqueue(a.item);
    committer.wake();
    await hookCommitted;
    expect(counter.value).toBe(1);
    expect(hookSaw).toEqual(['a']);
    expect(log).toEqual(['run a', 'hook run', 'committed a', 'hook committed 1']);

    // Ops alone do not run the hook; wake() with no ops does.
    const b = op('send', () => insertQueue('b'));
    committer.enqueue(b.item);
    await b.settled;
    await committer.drain();
    expect(log.filter((l) => l === 'hook run')).toHaveLength(1);
    hookCommitted = new Promise<void>((resolve) => (hookDone = resolve));
    committer.wake();
    await hookCommitted;
    expect(hookSaw).toEqual(['a', 'b']);
  });

  it('skips the hook, and any transaction, when its plan says there is nothing to do', async () => {
    const runs: unknown[] = [];
    let plan: string | null = null;
    committer.setHook({
      plan: () => plan,
      run: (p) => runs.push(p),
      committed: () => {},
      failed: () => {},
    });
    committer.wake();
    await committer.drain();
    expect(counter.value).toBe(0);
    const a = op('send', () => insertQueue('a'));
    committer.enqueue(a.item);
    committer.wake();
    await a.settled;
    expect(counter.value).toBe(1);
    expect(runs).toEqual([]);
    plan = 'go';
    committer.wake();
    await committer.drain();
    expect(runs).toEqual(['go']);
    expect(counter.value).toBe(2);
  });

  it('rolls back only a failing hook, commits the ops, reports the failure and runs the hook again later', async () => {
    let runs = 0;
    const failures: string[] = [];
    let ranAgain!: () => void;
    const again = new Promise<void>((resolve) => (ranAgain = resolve));
    committer.setHook({
      plan: () => 'claim',
      run: () => {
        runs += 1;
        insertQueue(`hook-${runs}`);
        if (runs === 1) throw new Error('claim exploded');
        return runs;
      },
      committed: () => ranAgain(),
      failed: (error) => failures.push(`${error.code}: ${error.message}`),
    });
    const a = op('send', () => insertQueue('a'));
    committer.enqueue(a.item);
    committer.wake();
    await a.settled;
    expect(names(reader)).toEqual(['a']);
    expect(failures).toEqual(['STORAGE_ERROR: Storage failed: claim exploded']);
    await again;
    expect(runs).toBe(2);
    expect(names(reader)).toEqual(['a', 'hook-2']);
  });

  it('resolves drain() at once when idle, and after everything queued has landed', async () => {
    await committer.drain();
    const landed: string[] = [];
    for (const name of ['x', 'y']) committer.enqueue(op('send', () => insertQueue(name), () => landed.push(name)).item);
    await committer.drain();
    expect(landed).toEqual(['x', 'y']);
    expect(names(reader)).toEqual(['x', 'y']);
  });

  it('holds a commit that was already scheduled when hold() began, and commits it at the release', async () => {
    const landed: string[] = [];
    // Enqueued first: its commit is scheduled (a microtask) before the hold begins.
    committer.enqueue(op('send', () => insertQueue('early'), () => landed.push('early')).item);
    const release = committer.hold();
    committer.enqueue(op('send', () => insertQueue('late'), () => landed.push('late')).item);
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Nothing reached the file while held: a checkpoint pass that copied "everything" saw it all.
    expect(counter.value).toBe(0);
    expect(names(reader)).toEqual([]);
    release();
    await committer.drain();
    expect(landed).toEqual(['early', 'late']);
    expect(counter.value).toBe(1);
    expect(names(reader)).toEqual(['early', 'late']);
  });

  it('takes its guard around the transaction only, and waits for the hold a refusing guard took', async () => {
    const log: string[] = [];
    let refuse = true;
    let release: (() => void) | undefined;
    committer.guard({
      enter() {
        log.push(`enter ${refuse ? 'refused' : 'ok'}`);
        if (!refuse) return true;
        release = committer.hold();
        return false;
      },
      leave: () => log.push(`leave, in a transaction: ${handle.sqlite.inTransaction}`),
    });
    const a = op('send', () => insertQueue('a'), () => log.push('committed a'));
    committer.enqueue(a.item);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(names(reader)).toEqual([]);
    refuse = false;
    release!();
    await a.settled;
    committer.guard(undefined);
    // The lock is let go before the commit's callbacks run (a handler's start can be long).
    expect(log).toEqual(['enter refused', 'enter ok', 'leave, in a transaction: false', 'committed a']);
    expect(names(reader)).toEqual(['a']);
  });

  it('keeps its guard through the item-by-item pass after a failed group, and leaves it after', async () => {
    let inside = false;
    const seen: boolean[] = [];
    committer.guard({
      enter: () => (inside = true),
      leave: () => {
        inside = false;
      },
    });
    const bad = op('send', () => {
      throw new Error('bad item');
    });
    // The bad item sinks the group before this runs; it runs only in the item-by-item pass.
    const good = op('send', () => {
      seen.push(inside);
      insertQueue('good');
    });
    committer.enqueue(bad.item);
    committer.enqueue(good.item);
    await expect(bad.settled).rejects.toThrow('bad item');
    await good.settled;
    committer.guard(undefined);
    expect(seen).toEqual([true]);
    expect(inside).toBe(false);
    expect(names(reader)).toEqual(['good']);
  });

  it('leaves its guard when the transaction fails too', async () => {
    const log: string[] = [];
    committer.guard({ enter: () => (log.push('enter'), true), leave: () => log.push('leave') });
    const bad = op('send', () => {
      throw new Error('boom');
    });
    committer.enqueue(bad.item);
    await expect(bad.settled).rejects.toThrow('boom');
    committer.guard(undefined);
    expect(log.slice(0, 2)).toEqual(['enter', 'leave']);
  });

  it('waits in drain() for ops that committed callbacks enqueue', async () => {
    const landed: string[] = [];
    committer.enqueue(
      op(
        'send',
        () => insertQueue('parent'),
        () => {
          landed.push('parent');
          committer.enqueue(op('transition', () => insertQueue('child'), () => landed.push('child')).item);
        },
      ).item,
    );
    await committer.drain();
    expect(landed).toEqual(['parent', 'child']);
    expect(names(reader)).toEqual(['child', 'parent']);
  });

  it('rejects queued ops with CLOSED on close(), and any op enqueued afterwards', async () => {
    let ran = false;
    const send = op('send', () => {
      ran = true;
      insertQueue('never');
    });
    const transition = op('transition', () => {
      ran = true;
      insertQueue('never-either');
    });
    committer.enqueue(send.item);
    committer.enqueue(transition.item);
    const drained = committer.drain();
    committer.close();
    await expect(send.settled).rejects.toMatchObject({ code: 'CLOSED' });
    await expect(transition.settled).rejects.toMatchObject({ code: 'CLOSED' });
    await drained;

    const late = op('send', () => {
      ran = true;
    });
    committer.enqueue(late.item);
    await expect(late.settled).rejects.toMatchObject({ code: 'CLOSED' });
    await committer.drain();
    expect(ran).toBe(false);
    expect(names(reader)).toEqual([]);
  });

  it('fails sends fast on a full database, storing none of the batch, while transitions wait for room', async () => {
    const pages = handle.sqlite.pragma('page_count', { simple: true }) as number;
    handle.sqlite.pragma(`max_page_count = ${pages}`);
    const big = 'q'.repeat(60_000);
    const errorEvent = nextEvent(events.events$, (e) => e.type === 'error');
    const bigSend = op('send', () => insertQueue(`s${big}`));
    // Small enough to fit: it must still not land on its own once SQLite rolled the batch back.
    const smallSend = op('send', () => insertQueue('small'));
    let transitionRuns = 0;
    let retriedWhileFull!: () => void;
    const retried = new Promise<void>((resolve) => (retriedWhileFull = resolve));
    const transition = op('transition', () => {
      transitionRuns += 1;
      if (transitionRuns === 3) retriedWhileFull();
      insertQueue(`t${big}`);
    });
    for (const { item } of [bigSend, smallSend, transition]) committer.enqueue(item);

    for (const send of [bigSend, smallSend]) {
      const error = await send.settled.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(SpoolError);
      expect(error).toMatchObject({ code: 'STORAGE_FULL' });
    }
    expect(await errorEvent).toMatchObject({ type: 'error', code: 'STORAGE_FULL' });
    await retried;
    expect(names(reader)).toEqual([]);

    // Room again: the waiting transition lands on one of its next retries, exactly once.
    handle.sqlite.pragma('max_page_count = 1073741823');
    await transition.settled;
    await committer.drain();
    expect(names(reader)).toEqual([`t${big}`]);
  });

  it('leaves setImmediate working after close() cancels a pending retry timer', async () => {
    const blocker = new Database(temp.path);
    try {
      blocker.exec('BEGIN IMMEDIATE');
      const busy = nextEvent(events.events$, (e) => e.type === 'storage.busy', { timeoutMs: 10_000 });
      const send = op('send', () => insertQueue('never'));
      committer.enqueue(send.item);
      await busy; // a retry timer is now pending
      committer.close();
      await expect(send.settled).rejects.toMatchObject({ code: 'CLOSED' });
      // The 5 s timer only turns a hang into a failure; an immediate runs on the next loop turn.
      let guard: NodeJS.Timeout | undefined;
      const first = await Promise.race([
        new Promise<string>((resolve) => setImmediate(() => resolve('immediate'))),
        new Promise<string>((resolve) => (guard = setTimeout(() => resolve('stuck'), 5000))),
      ]);
      clearTimeout(guard);
      expect(first).toBe('immediate');
    } finally {
      if (blocker.inTransaction) blocker.exec('ROLLBACK');
      blocker.close();
    }
  });

  it('retries a busy database asynchronously, announcing storage.busy, until the lock is released', async () => {
    const blocker = new Database(temp.path);
    try {
      blocker.exec('BEGIN IMMEDIATE');
      const busy = nextEvent(events.events$, (e) => e.type === 'storage.busy', { timeoutMs: 10_000 });
      const send = op('send', () => insertQueue('after-lock'));
      committer.enqueue(send.item);
      const event = await busy;
      expect(event).toMatchObject({ type: 'storage.busy', retries: 1 });
      expect(names(reader)).toEqual([]);
      blocker.exec('COMMIT');
      await send.settled;
      expect(names(reader)).toEqual(['after-lock']);
    } finally {
      if (blocker.inTransaction) blocker.exec('ROLLBACK');
      blocker.close();
    }
  });
});

describe('committer under durability full', () => {
  let temp: ReturnType<typeof tempDb>;
  let handle: DbHandle;
  let events: EventBus;
  let committer: Committer;

  beforeEach(() => {
    temp = tempDb();
    handle = openDatabase(temp.path, 'full');
    events = createEventBus();
    committer = createCommitter(handle.sqlite, events, systemClock, () => true, 'full');
  });

  afterEach(() => {
    committer.close();
    events.complete();
    handle.close();
    temp.cleanup();
  });

  /** The connection's synchronous level: 1 NORMAL (no fsync at commit), 2 FULL. */
  const level = () => handle.sqlite.pragma('synchronous', { simple: true });

  /** Enqueues ops that record the level their commit runs at; resolves after the commit. */
  function group(ops: { durable?: boolean; fail?: boolean }[]) {
    const seen: unknown[] = [];
    const done = ops.map(
      (o) =>
        new Promise<void>((resolve) =>
          committer.enqueue({
            kind: 'transition',
            ...(o.durable === undefined ? {} : { durable: o.durable }),
            run: () => {
              seen.push(level());
              if (o.fail) throw new Error('this op fails');
            },
            committed: () => resolve(),
            failed: () => resolve(),
          }),
        ),
    );
    return Promise.all(done).then(() => seen);
  }

  it('commits a group that no caller awaits without an fsync of its own, and puts FULL back after it', async () => {
    expect(level()).toBe(2);
    expect(await group([{ durable: false }, { durable: false }])).toEqual([1, 1]);
    expect(level()).toBe(2);
  });

  it('keeps the fsync for a group holding any durable op, or an op that says nothing', async () => {
    expect(await group([{ durable: false }, { durable: true }])).toEqual([2, 2]);
    expect(await group([{ durable: false }, {}])).toEqual([2, 2]);
    expect(await group([{}])).toEqual([2]);
  });

  it('commits the claim alone without its own fsync', async () => {
    const seen: unknown[] = [];
    let committed!: () => void;
    const landed = new Promise<void>((resolve) => (committed = resolve));
    committer.setHook({ plan: () => 'claim', run: () => seen.push(level()), committed: () => committed(), failed: () => {} });
    committer.wake();
    await landed;
    expect(seen).toEqual([1]);
    expect(level()).toBe(2);
  });

  it('puts FULL back when a relaxed group fails', async () => {
    // The first try runs relaxed and rolls back; the op is then retried alone in a savepoint.
    const seen = await group([{ durable: false, fail: true }]);
    expect(seen[0]).toBe(1);
    expect(level()).toBe(2);
  });
});

