/**
 * The core's admin seams (issue 14): the persistent message history and its retention, browse()
 * with keyset paging and its query plan, remove(ids), requeue({ ids }), telemetry() and stats()
 * listing every known queue. Bad input gets a coded SpoolError and leaves the file byte-identical.
 */
import { describe, expect, it } from 'vitest';
import { browseSql } from '../../src/browse.js';
import { NonRetryableError, type HistoryEntry, type Spool } from '../../src/index.js';
import { fileDigest } from '../helpers/cli.js';
import { rejection } from '../helpers/errors.js';
import { nextEvent, reached } from '../helpers/events.js';
import { readDb } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';

const spools = useTempSpools();
const path = (history: HistoryEntry[]) => history.map((h) => `${h.from}->${h.to}`);
const ZERO = { pending: 0, activating: 0, processing: 0, dead: 0, done: 0 };

/** Sends `n` messages to `queue` with no consumer and starts: each goes dead (NO_CONSUMER). */
async function deadLetters(spool: Spool, queue: string, n: number): Promise<string[]> {
  const dead = reached(spool.events$, 'dead', n, queue);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await spool.send(queue, { i }));
  await spool.start();
  await dead;
  return ids;
}

describe('message history', () => {
  it('keeps every committed transition with attempt and error code, and survives a restart', async () => {
    const spool = spools.open();
    let calls = 0;
    spool.register('jobs', async () => {
      calls += 1;
      if (calls === 1) throw new NonRetryableError('bad input');
    });
    const dead = reached(spool.events$, 'dead', 1, 'jobs');
    await spool.start();
    const id = await spool.send('jobs', { a: 1 });
    await dead;
    const live = await spool.get(id, { history: true });
    expect(path(live!.history)).toEqual(['null->pending', 'pending->activating', 'activating->processing', 'processing->dead']);
    expect(live!.history.at(-1)).toMatchObject({ code: 'NON_RETRYABLE', attempt: 1 });
    expect(live!.history.every((h, i, all) => i === 0 || h.at >= all[i - 1]!.at)).toBe(true);

    const done = reached(spool.events$, 'done', 1, 'jobs');
    expect(await spool.requeue({ ids: [id] })).toBe(1);
    await done;
    // Done and deleted: get() has nothing, the timeline stays in the history table.
    expect(await spool.get(id, { history: true })).toBeUndefined();
    await spool.close();

    const reopened = spools.open();
    const gone = await reopened.removedHistory(id);
    expect(gone).toMatchObject({ id, queue: 'jobs', state: 'done', reason: 'done' });
    expect(path(gone!.history)).toEqual([
      'null->pending',
      'pending->activating',
      'activating->processing',
      'processing->dead',
      'dead->pending',
      'pending->activating',
      'activating->processing',
      'processing->done',
    ]);
    expect(gone!.history.filter((h) => h.code !== undefined)).toHaveLength(1);
  });

  it('records nothing with history.enabled false', async () => {
    const spool = spools.open({ config: { history: { enabled: false } } });
    const ids = await deadLetters(spool, 'off', 1);
    expect((await spool.get(ids[0]!, { history: true }))!.history).toEqual([]);
    expect(readDb(spools.path, (c) => c.prepare('SELECT count(*) FROM messages WHERE history IS NOT NULL').pluck().get())).toBe(0);
  });

  it('drops a completed message\'s timeline after history.retentionMs, at the sweep; a purged message\'s goes with it', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock, config: { history: { enabled: true, retentionMs: 60_000 } } });
    spool.register('work', async () => {});
    const done = reached(spool.events$, 'done', 1, 'work');
    await spool.start();
    const kept = await spool.send('work', 1);
    await done;
    await spool.stop();
    const purged = await spool.send('work', 2);
    expect(await spool.purge('work', { state: 'pending' })).toBe(1);
    expect(await spool.removedHistory(purged)).toBeUndefined();

    await spool.sweep();
    expect((await spool.removedHistory(kept))?.reason).toBe('done');
    clock.advance(60_001);
    await spool.sweep();
    expect(await spool.removedHistory(kept)).toBeUndefined();
    expect(readDb(spools.path, (c) => c.prepare('SELECT count(*) FROM message_history').pluck().get())).toBe(0);
  });

  it('validates the history settings and explains them', async () => {
    const spool = spools.open();
    expect(spool.settings.get().history).toEqual({ enabled: true, retentionMs: 604_800_000 });
    expect((await rejection(spool.settings.update({ history: { retentionMs: 10 } }))).code).toBe('INVALID_SETTINGS');
    expect((await rejection(spool.settings.update({ history: { enabled: 'yes' } }))).code).toBe('INVALID_SETTINGS');
    expect(spool.settings.explain().map((e) => e.path.join('.'))).toEqual(expect.arrayContaining(['history.enabled', 'history.retentionMs']));
  });
});

describe('browse()', () => {
  it('pages newest first with keyset cursors, and filters', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock });
    const ids: string[] = [];
    for (let i = 0; i < 120; i++) {
      ids.push(await spool.send(i % 2 ? 'odd' : 'even', { i, region: i % 3 === 0 ? 'eu' : 'us', note: `n-${i}` }));
      clock.advance(10);
    }
    const seen: string[] = [];
    let cursor: string | null | undefined;
    const sizes: number[] = [];
    do {
      const page = await spool.browse({ limit: 50, ...(cursor ? { cursor } : {}) });
      sizes.push(page.messages.length);
      seen.push(...page.messages.map((m) => m.id));
      cursor = page.cursor;
    } while (cursor);
    expect(sizes).toEqual([50, 50, 20]);
    expect(seen).toEqual([...ids].reverse());

    expect((await spool.browse({ queue: 'odd', limit: 500 })).messages).toHaveLength(60);
    expect((await spool.browse({ queue: 'odd', state: 'pending', limit: 500 })).messages.every((m) => m.queue === 'odd')).toBe(true);
    expect((await spool.browse({ state: 'dead' })).messages).toEqual([]);
    expect((await spool.browse({ text: 'n-117' })).messages.map((m) => m.id)).toEqual([ids[117]]);
    expect((await spool.browse({ where: { region: 'eu', i: { gte: 100 } } })).messages.map((m) => (m.payload as { i: number }).i)).toEqual([117, 114, 111, 108, 105, 102]);
    expect((await spool.browse({ idPrefix: ids[42]! })).messages.map((m) => m.id)).toEqual([ids[42]]);
    const from = (await spool.get(ids[10]!))!.createdAt;
    const to = (await spool.get(ids[13]!))!.createdAt;
    expect((await spool.browse({ from, to })).messages.map((m) => m.id)).toEqual([ids[12], ids[11], ids[10]]);
  });

  it('reads queue and state filters along the primary key: no OFFSET, no sort', () => {
    const spool = spools.open();
    void spool.settings.get(); // creates and migrates the file
    const { sql, params } = browseSql({ queue: 'q', state: 'pending', cursor: Buffer.from('{"s":100}').toString('base64url') });
    const plan = readDb(spools.path, (c) => c.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params, 51) as { detail: string }[]).map((r) => r.detail).join('\n');
    expect(sql).not.toMatch(/OFFSET/i);
    expect(plan).not.toMatch(/TEMP B-TREE/);
    expect(plan).toMatch(/INTEGER PRIMARY KEY \(rowid<\?\)/);
  });

  it('refuses bad queries with a coded error and changes nothing', async () => {
    const spool = spools.open();
    await spool.send('q', 1);
    const before = fileDigest(spools.path);
    const cases: [unknown, string][] = [
      [null, 'INVALID_ARGUMENT'],
      [{ limit: 0 }, 'INVALID_ARGUMENT'],
      [{ limit: 501 }, 'INVALID_ARGUMENT'],
      [{ limit: 1.5 }, 'INVALID_ARGUMENT'],
      [{ state: 'lost' }, 'INVALID_ARGUMENT'],
      [{ queue: 'a b' }, 'INVALID_QUEUE_NAME'],
      [{ cursor: 'bm9wZQ' }, 'INVALID_ARGUMENT'],
      [{ where: { "a') OR 1=1 --": 1 } }, 'INVALID_ARGUMENT'],
      [{ where: { a: { like: '%' } } }, 'INVALID_ARGUMENT'],
      [{ text: '' }, 'INVALID_ARGUMENT'],
      [{ idPrefix: 5 }, 'INVALID_ARGUMENT'],
      [{ from: 'yesterday' }, 'INVALID_ARGUMENT'],
      [{ sort: 'asc' }, 'INVALID_ARGUMENT'],
    ];
    for (const [query, code] of cases) expect([query, (await rejection(spool.browse(query as never))).code]).toEqual([query, code]);
    expect(fileDigest(spools.path)).toBe(before);
  });
});

describe('remove(), requeue({ ids }), telemetry(), stats()', () => {
  it('removes pending, dead and done rows by id, never in-flight ones, announcing each', async () => {
    const spool = spools.open({ config: { retention: { doneMs: 3_600_000 } } });
    const [dead] = await deadLetters(spool, 'orphan', 1);
    let release: () => void = () => {};
    spool.register('slow', () => new Promise<void>((resolve) => (release = resolve)));
    spool.register('fast', async () => {});
    const processing = reached(spool.events$, 'processing', 1, 'slow');
    const inflight = await spool.send('slow', 1);
    await processing;
    const fastDone = reached(spool.events$, 'done', 1, 'fast');
    const done = await spool.send('fast', 1);
    await fastDone;
    await spool.stop({ timeoutMs: 1 }).catch(() => {});
    const pending = await spool.send('idle', 1);
    const removed: string[] = [];
    const sub = spool.events$.subscribe((e) => e.type === 'message.removed' && e.reason === 'deleted' && removed.push(e.id));
    // The in-flight row (abandoned by the stop, still processing on disk) stays.
    expect(await spool.remove([dead!, done, pending, 'no-such-id', '999999'])).toBe(3);
    sub.unsubscribe();
    expect(removed.sort()).toEqual([dead!, done, pending].sort());
    for (const id of [dead!, done, pending]) expect(await spool.get(id)).toBeUndefined();
    expect((await spool.get(inflight))?.state).toBe('processing');
    release();
  });

  it('requeues only the dead letters among the given ids', async () => {
    const spool = spools.open();
    const ids = await deadLetters(spool, 'orphan', 3);
    await spool.stop();
    const fresh = await spool.send('orphan', 1);
    expect(await spool.requeue({ ids: [ids[0]!, ids[2]!, fresh, 'nope'] })).toBe(2);
    expect((await spool.stats()).queues.orphan).toEqual({ ...ZERO, pending: 3, dead: 1 });
  });

  it('requeues every dead letter of a queue in batches, letting the event loop turn between them', async () => {
    const spool = spools.open();
    await spool.sendBatch('orphan', Array.from({ length: 2_500 }, (_, i) => ({ i })));
    const dead = reached(spool.events$, 'dead', 2_500, 'orphan');
    await spool.start();
    await dead;
    await spool.stop();
    let turns = 0;
    const tick = () => {
      turns += 1;
      if (turns < 100) timer = setImmediate(tick);
    };
    let timer = setImmediate(tick);
    expect(await spool.requeue({ queue: 'orphan' })).toBe(2_500);
    clearImmediate(timer);
    // Three transactions of at most 1,000 letters, the event loop turning after each.
    expect(turns).toBeGreaterThanOrEqual(2);
    expect((await spool.stats()).queues.orphan).toEqual({ ...ZERO, pending: 2_500 });
  });

  it('requeues ids only where they are still dead in the queue given', async () => {
    const spool = spools.open();
    const ids = await deadLetters(spool, 'orphan', 2);
    await spool.stop();
    expect(await spool.requeue({ ids, queue: 'elsewhere' })).toBe(0);
    expect((await spool.stats()).queues.orphan).toEqual({ ...ZERO, dead: 2 });
    expect(await spool.requeue({ ids, queue: 'orphan' })).toBe(2);
    expect((await spool.stats()).queues.orphan).toEqual({ ...ZERO, pending: 2 });
  });

  it('refuses bad ids with INVALID_ARGUMENT and changes nothing', async () => {
    const spool = spools.open();
    const ids = await deadLetters(spool, 'orphan', 1);
    await spool.stop();
    const before = fileDigest(spools.path);
    for (const bad of [undefined, 'x', [1], [''], ['a'.repeat(201)], Array.from({ length: 10_001 }, () => '1')]) {
      expect((await rejection(spool.remove(bad as never))).code).toBe('INVALID_ARGUMENT');
      expect((await rejection(spool.requeue({ ids: bad } as never))).code).toBe('INVALID_ARGUMENT');
    }
    expect((await rejection(spool.requeue({ ids, queue: 'orphan', state: 'dead' } as never))).code).toBe('INVALID_ARGUMENT');
    expect((await rejection(spool.requeue({ ids, queue: 'not a queue' }))).code).toBe('INVALID_QUEUE_NAME');
    expect((await rejection(spool.get(ids[0]!, { history: 'yes', more: 1 } as never))).code).toBe('INVALID_ARGUMENT');
    expect(fileDigest(spools.path)).toBe(before);
  });

  it('counts sends, completions, failures by code, dead letters and commits since start', async () => {
    const spool = spools.open();
    expect(spool.telemetry()).toMatchObject({ sent: 0, completed: 0, dead: 0, failed: {}, commit: { count: 0 } });
    spool.register('work', async (m) => {
      if ((m.payload as number) < 0) throw new NonRetryableError('negative');
    });
    const settled = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.to === 'dead' && e.queue === 'work');
    const done = reached(spool.events$, 'done', 4, 'work');
    await spool.start();
    await spool.sendBatch('work', [1, 2, 3, 4, -1]);
    await Promise.all([settled, done]);
    const t = spool.telemetry();
    expect(t).toMatchObject({ sent: 5, completed: 4, dead: 1, failed: { NON_RETRYABLE: 1 }, storageBusy: 0 });
    expect(t.commit.count).toBeGreaterThan(0);
    expect(t.commit.sumMs).toBeGreaterThan(0);
    const counts = t.commit.buckets.map((b) => b.count);
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    expect(t.commit.buckets.map((b) => b.le)).toEqual([...t.commit.buckets.map((b) => b.le)].sort((a, b) => a - b));
    expect(t.dbBytes).toBeGreaterThan(0);
  });

  it('lists every known queue, idle ones with zeros', async () => {
    const spool = spools.open({ config: { queues: { configured: { maxAttempts: 2 } } } });
    spool.register('handled', async () => {});
    await spool.queues.create('created');
    const done = reached(spool.events$, 'done', 1, 'handled');
    await spool.start();
    await spool.send('handled', 1);
    await done;
    const { queues } = await spool.stats();
    expect(queues).toEqual({ configured: ZERO, handled: ZERO, created: ZERO });
  });
});
