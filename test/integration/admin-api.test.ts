import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildDashboard } from '../../scripts/build-admin.mjs';
import { createAdminHandler } from '../../src/admin/handler.js';
import type { AdminSource } from '../../src/admin/source.js';
import { messageMachine, type Spool } from '../../src/index.js';
import { call, openSse, serveAdminFor } from '../helpers/admin.js';
import { nextEvent, reached } from '../helpers/events.js';
import { useTempSpools } from '../helpers/spool.js';
import { until } from '../helpers/until.js';

const temp = useTempSpools();
const sse: { close(): void }[] = [];
afterEach(() => {
  for (const s of sse.splice(0)) s.close();
});

beforeAll(async () => {
  await buildDashboard();
});

/** A started spool: `work` completes, `orphan` has no consumer (its messages go dead). */
/** The admin handler over `source` (a spool with some calls changed) on a real server; its base URL. */
async function serveSource(source: AdminSource): Promise<string> {
  const handler = createAdminHandler(source);
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  temp.onCleanup(async () => {
    handler.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function running(options: Parameters<typeof serveAdminFor>[2] = {}) {
  const spool = temp.open({ config: { retention: { doneMs: 3_600_000, deadMs: null } } });
  spool.register('work', async () => {});
  await spool.start();
  return serveAdminFor(temp, spool, options);
}

/** Sends to `orphan` and waits until they are dead; resolves with their ids. */
async function deadLetters(spool: Spool, n: number): Promise<string[]> {
  const dead = reached(spool.events$, 'dead', n, 'orphan');
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await spool.send('orphan', { i, kind: 'orphan' }));
  await dead;
  return ids;
}

/** The database file and its WAL, hashed: "nothing changed" means byte-identical. */
function fileHash(path: string): string {
  const hash = createHash('sha256');
  for (const file of [path, `${path}-wal`]) if (existsSync(file)) hash.update(readFileSync(file));
  return hash.digest('hex');
}

describe('admin API: reading', () => {
  it('serves meta, stats, queues (idle ones with zeros) and one queue with its settings and layers', async () => {
    const { spool, base } = await running();
    await spool.settings.update({ queues: { idle: { maxAttempts: 7 } } });
    const done = reached(spool.events$, 'done', 2, 'work');
    await spool.send('work', { a: 1 });
    await spool.send('work', { a: 2 });
    await done;

    expect((await call(base, '/admin/api/meta')).body).toMatchObject({ readOnly: false, detached: false, states: ['pending', 'activating', 'processing', 'dead', 'done'] });
    const stats = await call(base, '/admin/api/stats');
    expect(stats.status).toBe(200);
    expect(stats.body.queues.work.done).toBe(2);
    expect(stats.body.pools.default.concurrency).toBe(4);

    const queues = (await call(base, '/admin/api/queues')).body.queues;
    expect(queues.map((q: { name: string }) => q.name)).toEqual(['idle', 'work']);
    expect(queues[0]).toMatchObject({ name: 'idle', counts: { pending: 0, activating: 0, processing: 0, dead: 0, done: 0 }, paused: false, accepting: true });

    const idle = (await call(base, '/admin/api/queues/idle')).body;
    const setting = (key: string) => idle.settings.find((s: { key: string[] }) => s.key.join('.') === key);
    expect(setting('maxAttempts')).toEqual({ key: ['maxAttempts'], value: 7, layer: 'override', own: true });
    expect(setting('timeoutMs')).toEqual({ key: ['timeoutMs'], value: null, layer: 'default', own: false });
    expect(setting('executor.concurrency')).toMatchObject({ value: 4, own: false });

    const missing = await call(base, '/admin/api/queues/nobody');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('QUEUE_NOT_FOUND');
  });

  it('pages messages newest first with keyset cursors, and filters by state, text, payload field, id prefix and time', async () => {
    const spool = temp.open();
    const { base } = await serveAdminFor(temp, spool);
    const ids: string[] = [];
    for (let i = 0; i < 120; i++) ids.push(await spool.send('pile', { orderId: 1000 + i, region: i % 2 ? 'eu' : 'us', note: `n${i}` }));

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { status: number; body: { messages: { id: string }[]; cursor: string | null } } = await call(base, `/admin/api/messages?queue=pile&limit=50${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(page.status).toBe(200);
      seen.push(...page.body.messages.map((m) => m.id));
      cursor = page.body.cursor;
      pages += 1;
    } while (cursor !== null);
    expect(pages).toBe(3);
    expect(seen).toEqual([...ids].reverse());

    const where = await call(base, `/admin/api/messages?where=${encodeURIComponent(JSON.stringify({ orderId: 1042 }))}`);
    expect(where.body.messages.map((m: { id: string }) => m.id)).toEqual([ids[42]]);
    const range = await call(base, `/admin/api/messages?where=${encodeURIComponent(JSON.stringify({ orderId: { gte: 1110 }, region: 'eu' }))}`);
    expect(range.body.messages.map((m: { payload: { orderId: number } }) => m.payload.orderId)).toEqual([1119, 1117, 1115, 1113, 1111]);
    const text = await call(base, '/admin/api/messages?text=n77%22');
    expect(text.body.messages.map((m: { id: string }) => m.id)).toEqual([ids[77]]);
    const prefix = await call(base, `/admin/api/messages?idPrefix=${ids[5]!.slice(0, 13)}`);
    expect(prefix.body.messages.map((m: { id: string }) => m.id)).toContain(ids[5]);
    const info = await spool.get(ids[60]!);
    const window = await call(base, `/admin/api/messages?queue=pile&from=${info!.createdAt}&to=${info!.createdAt + 1}&limit=500`);
    expect(window.body.messages.map((m: { id: string }) => m.id)).toContain(ids[60]);
    expect(window.body.messages.every((m: { createdAt: number }) => m.createdAt === info!.createdAt)).toBe(true);
    const dead = await call(base, '/admin/api/messages?state=dead');
    expect(dead.body).toEqual({ messages: [], cursor: null });
  });

  it('shows one message with its payload, error and history, and 404 for an unknown id', async () => {
    const { spool, base } = await running();
    const [id] = await deadLetters(spool, 1);
    const m = await call(base, `/admin/api/messages/${encodeURIComponent(id!)}`);
    expect(m.status).toBe(200);
    expect(m.body).toMatchObject({ id, queue: 'orphan', state: 'dead', payload: { i: 0, kind: 'orphan' }, lastError: { code: 'NO_CONSUMER' } });
    expect(m.body.history.map((h: { from: string | null; to: string }) => `${h.from}->${h.to}`)).toEqual(['null->pending', 'pending->activating', 'activating->dead']);
    expect(m.body.history.at(-1).code).toBe('NO_CONSUMER');
    const missing = await call(base, '/admin/api/messages/no-such-id');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('MESSAGE_NOT_FOUND');
  });

  it('shows a done and deleted message by the timeline the history keeps', async () => {
    const spool = temp.open(); // retention.doneMs 0: a done row is deleted at completion
    spool.register('work', async () => {});
    await spool.start();
    const { base } = await serveAdminFor(temp, spool);
    const done = reached(spool.events$, 'done', 1, 'work');
    const id = await spool.send('work', { a: 1 });
    await done;
    expect(await spool.get(id)).toBeUndefined();
    const m = await call(base, `/admin/api/messages/${id}`);
    expect(m.status).toBe(200);
    expect(m.body).toMatchObject({ id, queue: 'work', state: 'done', removed: { reason: 'done' } });
    expect(m.body.payload).toBeUndefined();
    expect(m.body.history.map((h: { from: string | null; to: string }) => `${h.from}->${h.to}`)).toEqual([
      'null->pending',
      'pending->activating',
      'activating->processing',
      'processing->done',
    ]);
  });

  it('serves the settings, their explanation, the live series and the statechart laid out from the machine', async () => {
    const { spool, base } = await running();
    const done = reached(spool.events$, 'done', 3, 'work');
    for (let i = 0; i < 3; i++) await spool.send('work', { i });
    await done;
    expect((await call(base, '/admin/api/settings')).body).toEqual(spool.settings.get());
    expect((await call(base, '/admin/api/settings/explain')).body).toEqual(spool.settings.explain());

    const series = (await call(base, '/admin/api/series')).body;
    expect(series.stepMs).toBe(1000);
    expect(series.sent.length).toBe(899);
    const perQueue = (await call(base, '/admin/api/series?queue=work')).body;
    expect(perQueue.sent.length).toBe(899);

    const chart = (await call(base, '/admin/api/machine')).body;
    const states = Object.keys(messageMachine.root.states);
    expect(chart.nodes.map((n: { id: string }) => n.id).sort()).toEqual([...states].sort());
    expect(chart.initial).toBe('pending');
    expect(chart.edges.find((e: { id: string }) => e.id === 'processing->pending').events).toEqual(['FAIL', 'DEFER', 'RECOVER']);
    for (const n of chart.nodes) expect(n.width).toBeGreaterThan(0);
  });
});

describe('admin API: changes', () => {
  it('updates and resets settings, and pauses, resumes, gates and resizes a queue through settings.update', async () => {
    const { spool, base } = await running();
    await spool.send('work', { warm: true });

    const patched = await call(base, '/admin/api/settings', { method: 'PATCH', body: { queueDefaults: { maxAttempts: 9 } } });
    expect(patched.status).toBe(200);
    expect(spool.settings.get().queueDefaults.maxAttempts).toBe(9);
    await call(base, '/admin/api/settings/reset', { body: { path: ['queueDefaults'] } });
    expect(spool.settings.get().queueDefaults.maxAttempts).toBe(3);

    expect((await call(base, '/admin/api/queues/work/pause', { method: 'POST' })).body.paused).toBe(true);
    expect(spool.settings.get().queues.work?.paused).toBe(true);
    expect((await call(base, '/admin/api/queues/work/resume', { method: 'POST' })).body.paused).toBe(false);
    expect((await call(base, '/admin/api/queues/work/accepting', { body: { accepting: false } })).body.accepting).toBe(false);
    await expect(spool.send('work', {})).rejects.toMatchObject({ code: 'NOT_ACCEPTING' });
    await call(base, '/admin/api/queues/work/accepting', { body: { accepting: true } });

    const resized = await call(base, '/admin/api/queues/work/concurrency', { body: { concurrency: 6 } });
    expect(resized.body.pool).toMatchObject({ name: 'work', own: true, concurrency: 6 });
    expect((await spool.stats()).pools.byQueue.work?.concurrency).toBe(6);
    const joined = await call(base, '/admin/api/queues/work/concurrency', { body: { concurrency: null } });
    expect(joined.body.pool).toMatchObject({ name: 'default', own: false });

    const own = await call(base, '/admin/api/queues/work/settings', { method: 'PATCH', body: { backoff: { delayMs: 50 } } });
    expect(own.body.settings.find((s: { key: string[] }) => s.key.join('.') === 'backoff.delayMs')).toMatchObject({ value: 50, layer: 'override', own: true });
    const reset = await call(base, '/admin/api/queues/work/settings/reset', { body: { key: ['backoff'] } });
    expect(reset.body.settings.find((s: { key: string[] }) => s.key.join('.') === 'backoff.delayMs')).toMatchObject({ value: 1000, own: false });

    expect((await call(base, '/admin/api/concurrency', { body: { concurrency: 7 } })).body.executor.concurrency).toBe(7);
    expect((await spool.stats()).pools.default.concurrency).toBe(7);
    expect((await call(base, '/admin/api/accepting', { body: { accepting: false } })).body.accepting).toBe(false);
    expect(spool.settings.get().accepting).toBe(false);
  });

  it("a queue without its own accepting shows the spool-wide one it inherits, with that one's layer", async () => {
    const { spool, base } = await running();
    await spool.send('quiet', { warm: true });
    const accepting = async () =>
      (await call(base, '/admin/api/queues/quiet')).body.settings.find((s: { key: string[] }) => s.key.join('.') === 'accepting');
    expect(await accepting()).toEqual({ key: ['accepting'], value: true, layer: 'default', own: false });
    await call(base, '/admin/api/accepting', { body: { accepting: false } });
    await expect(spool.send('quiet', {})).rejects.toMatchObject({ code: 'NOT_ACCEPTING' });
    expect(await accepting()).toEqual({ key: ['accepting'], value: false, layer: 'override', own: false });
    // The queue's own value is still its own.
    await call(base, '/admin/api/queues/quiet/accepting', { body: { accepting: true } });
    expect(await accepting()).toEqual({ key: ['accepting'], value: true, layer: 'override', own: true });
  });

  it('requeues one message, a selection and a filter, and purges a queue by state', async () => {
    const { spool, base } = await running();
    const ids = await deadLetters(spool, 5);
    // Each requeued orphan goes dead → pending, then dead again (it has no consumer); subscribe first.
    let again = reached(spool.events$, 'dead', 1, 'orphan');
    const back = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.id === ids[0] && e.from === 'dead' && e.to === 'pending');
    expect((await call(base, `/admin/api/messages/${ids[0]}/requeue`, { method: 'POST' })).body).toEqual({ requeued: 1 });
    await back;
    await again;

    again = reached(spool.events$, 'dead', 2, 'orphan');
    expect((await call(base, '/admin/api/messages/requeue', { body: { ids: [ids[1], ids[2]] } })).body).toEqual({ requeued: 2 });
    await again;

    again = reached(spool.events$, 'dead', 1, 'orphan');
    const byField = await call(base, '/admin/api/messages/requeue', { body: { filter: { queue: 'orphan', where: { i: 4 } } } });
    expect(byField.body).toEqual({ requeued: 1 });
    await again;
    again = reached(spool.events$, 'dead', 5, 'orphan');
    const all = await call(base, '/admin/api/messages/requeue', { body: { filter: { queue: 'orphan' } } });
    expect(all.body).toEqual({ requeued: 5 });
    await again;

    const purged = await call(base, '/admin/api/queues/orphan/purge', { body: { state: 'dead' } });
    expect(purged.body).toEqual({ removed: 5 });
    expect((await spool.stats()).queues.orphan?.dead ?? 0).toBe(0);
    await deadLetters(spool, 2);
    expect((await call(base, '/admin/api/messages/delete', { body: { filter: { queue: 'orphan', state: 'dead' } } })).body).toEqual({ removed: 2 });
  });

  it('a filtered delete leaves what changed state after its page was read (a letter requeued meanwhile)', async () => {
    const spool = temp.open({ config: { retention: { doneMs: 3_600_000, deadMs: null } } });
    await spool.start();
    const ids = await deadLetters(spool, 3);
    await spool.stop();
    // Another process requeues each page of dead letters right after the filter walk reads it.
    const racing: AdminSource = Object.assign(Object.create(spool) as Spool, {
      async browse(query: Parameters<Spool['browse']>[0]) {
        const page = await spool.browse(query);
        await spool.requeue({ ids: page.messages.map((m) => m.id) });
        return page;
      },
    });
    const base = await serveSource(racing);
    const res = await call(base, '/admin/api/messages/delete', { body: { filter: { queue: 'orphan', state: 'dead', text: 'orphan' } } });
    expect(res.body).toEqual({ removed: 0 });
    for (const id of ids) expect((await spool.get(id))?.state).toBe('pending');
    // remove() itself takes the fence: the state, and the queue.
    expect(await spool.remove([ids[0]!], { state: 'dead' })).toBe(0);
    expect(await spool.remove([ids[0]!], { state: 'pending', queue: 'elsewhere' })).toBe(0);
    expect(await spool.remove([ids[0]!], { state: 'pending', queue: 'orphan' })).toBe(1);
  });

  it("a filtered requeue fences each page on the filter's queue, as the filtered delete does", async () => {
    const spool = temp.open();
    await spool.start();
    const ids = await deadLetters(spool, 3);
    await spool.stop();
    const asked: unknown[] = [];
    const recording: AdminSource = Object.assign(Object.create(spool) as Spool, {
      async requeue(filter: Parameters<Spool['requeue']>[0]) {
        asked.push(filter);
        return spool.requeue(filter);
      },
    });
    const base = await serveSource(recording);
    const res = await call(base, '/admin/api/messages/requeue', { body: { filter: { queue: 'orphan', text: 'orphan' } } });
    expect(res.body).toEqual({ requeued: 3 });
    expect(asked).toEqual([{ ids: expect.arrayContaining(ids), queue: 'orphan' }]);
    for (const id of ids) expect((await spool.get(id))?.state).toBe('pending');
  });

  it('deletes messages by id, one or a selection, announcing message.removed with reason deleted', async () => {
    const { spool, base } = await running();
    const [a, b, c] = await deadLetters(spool, 3);
    const removed: string[] = [];
    const sub = spool.events$.subscribe((e) => {
      if (e.type === 'message.removed' && e.reason === 'deleted') removed.push(e.id);
    });
    const one = await call(base, `/admin/api/messages/${a}/delete`, { method: 'POST' });
    expect(one.body).toEqual({ removed: 1 });
    expect(await spool.get(a!)).toBeUndefined();
    const again = await call(base, `/admin/api/messages/${a}/delete`, { method: 'POST' });
    expect(again.body).toEqual({ removed: 0 });
    const many = await call(base, '/admin/api/messages/delete', { body: { ids: [b, c] } });
    expect(many.body).toEqual({ removed: 2 });
    sub.unsubscribe();
    expect(removed).toEqual([a, b, c]);
    expect((await spool.stats()).queues.orphan).toEqual({ pending: 0, activating: 0, processing: 0, dead: 0, done: 0 });
  });
});

describe('admin API: bad input', () => {
  // Each is refused with a 4xx and its code, and the database file stays byte-identical.
  const cases: { name: string; method?: string; path: string; body?: unknown; rawBody?: string; status: number; code: string }[] = [
    { name: 'limit 0', path: '/admin/api/messages?limit=0', status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'limit 501', path: '/admin/api/messages?limit=501', status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'limit not a number', path: '/admin/api/messages?limit=ten', status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'unknown state', path: '/admin/api/messages?state=lost', status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'bad queue name', path: '/admin/api/messages?queue=a%20b', status: 400, code: 'INVALID_QUEUE_NAME' },
    { name: 'forged cursor', path: '/admin/api/messages?cursor=bm9wZQ', status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'where not JSON', path: '/admin/api/messages?where=%7Bx', status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'where hostile path', path: `/admin/api/messages?where=${encodeURIComponent(JSON.stringify({ "a') OR 1=1 --": 1 }))}`, status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'where unknown operator', path: `/admin/api/messages?where=${encodeURIComponent(JSON.stringify({ a: { like: '%' } }))}`, status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'unknown parameter', path: '/admin/api/messages?sort=asc', status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'settings patch out of range', method: 'PATCH', path: '/admin/api/settings', body: { executor: { concurrency: 0 } }, status: 400, code: 'INVALID_SETTINGS' },
    { name: 'settings patch unknown key', method: 'PATCH', path: '/admin/api/settings', body: { nope: 1 }, status: 400, code: 'INVALID_SETTINGS' },
    { name: 'settings patch not an object', method: 'PATCH', path: '/admin/api/settings', body: [1], status: 400, code: 'INVALID_SETTINGS' },
    { name: 'settings reset path not segments', path: '/admin/api/settings/reset', body: { path: 'queues.email' }, status: 400, code: 'INVALID_SETTINGS' },
    { name: 'body not JSON', path: '/admin/api/settings/reset', rawBody: '{"path":', status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'body over 1 MiB', method: 'PATCH', path: '/admin/api/settings', rawBody: JSON.stringify({ x: 'y'.repeat(1 << 20) }), status: 413, code: 'INVALID_ARGUMENT' },
    { name: 'queue concurrency 0', path: '/admin/api/queues/pile/concurrency', body: { concurrency: 0 }, status: 400, code: 'INVALID_SETTINGS' },
    { name: 'queue concurrency a string', path: '/admin/api/queues/pile/concurrency', body: { concurrency: 'many' }, status: 400, code: 'INVALID_SETTINGS' },
    { name: 'queue accepting not boolean', path: '/admin/api/queues/pile/accepting', body: { accepting: 'no' }, status: 400, code: 'INVALID_SETTINGS' },
    { name: 'queue settings patch invalid', method: 'PATCH', path: '/admin/api/queues/pile/settings', body: { maxAttempts: -1 }, status: 400, code: 'INVALID_SETTINGS' },
    { name: 'queue settings unknown key', method: 'PATCH', path: '/admin/api/queues/pile/settings', body: { colour: 'red' }, status: 400, code: 'INVALID_SETTINGS' },
    { name: 'pause with fields', path: '/admin/api/queues/pile/pause', body: { paused: false }, status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'purge in flight', path: '/admin/api/queues/pile/purge', body: { state: 'processing' }, status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'purge without state', path: '/admin/api/queues/pile/purge', body: {}, status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'unknown queue', path: '/admin/api/queues/ghost/pause', body: {}, status: 404, code: 'QUEUE_NOT_FOUND' },
    { name: 'invalid queue name', path: '/admin/api/queues/bad%24name/pause', body: {}, status: 400, code: 'INVALID_QUEUE_NAME' },
    { name: 'selection with ids and filter', path: '/admin/api/messages/requeue', body: { ids: ['a'], filter: {} }, status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'selection empty ids', path: '/admin/api/messages/delete', body: { ids: [] }, status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'selection ids not strings', path: '/admin/api/messages/requeue', body: { ids: [1, 2] }, status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'filter with a cursor', path: '/admin/api/messages/delete', body: { filter: { queue: 'pile', cursor: 'x' } }, status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'filter hostile where', path: '/admin/api/messages/delete', body: { filter: { where: { 'a"); DROP TABLE messages; --': 1 } } }, status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'filter in flight', path: '/admin/api/messages/delete', body: { filter: { queue: 'pile', state: 'processing' } }, status: 409, code: 'MESSAGE_INFLIGHT' },
    { name: 'default pool 0', path: '/admin/api/concurrency', body: { concurrency: 0 }, status: 400, code: 'INVALID_SETTINGS' },
    { name: 'default pool missing', path: '/admin/api/concurrency', body: {}, status: 400, code: 'INVALID_SETTINGS' },
    { name: 'spool accepting not boolean', path: '/admin/api/accepting', body: { accepting: 1 }, status: 400, code: 'INVALID_SETTINGS' },
    { name: 'malformed escape in id', path: '/admin/api/messages/%E0%A4%A/requeue', body: {}, status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'unknown route', path: '/admin/api/nothing', status: 404, code: 'NOT_FOUND' },
    { name: 'wrong method', method: 'DELETE', path: '/admin/api/settings', status: 405, code: 'METHOD_NOT_ALLOWED' },
    { name: 'unknown SSE parameter', path: '/admin/api/events?since=1', status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'bad SSE queue filter', path: '/admin/api/events?queue=%2F%2F', status: 400, code: 'INVALID_QUEUE_NAME' },
    // A typo of message.state must not answer a stream of heartbeats only.
    { name: 'unknown SSE event type', path: '/admin/api/events?types=message.stat', status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'unknown SSE event type beside a known one', path: '/admin/api/events?types=admin.tick,message.stat', status: 400, code: 'INVALID_ARGUMENT' },
    // A typo must not answer the totals of every queue as if they were the one asked for.
    { name: 'unknown series parameter', path: '/admin/api/series?queues=pile', status: 400, code: 'INVALID_ARGUMENT' },
    { name: 'series queue given twice', path: '/admin/api/series?queue=pile&queue=other', status: 400, code: 'INVALID_ARGUMENT' },
  ];

  it.each(cases)('refuses $name with $status $code and changes nothing', async ({ method, path, body, rawBody, status, code }) => {
    // A spool that is never started writes only when asked: any change would show in the file.
    const spool = temp.open();
    await spool.settings.update({ queues: { pile: { maxAttempts: 4 } } });
    for (let i = 0; i < 3; i++) await spool.send('pile', { i });
    const { base } = await serveAdminFor(temp, spool);
    const before = fileHash(temp.path);
    const settingsBefore = JSON.stringify(spool.settings.get());
    const res = await call(base, path, { ...(method ? { method } : {}), ...(body !== undefined ? { body } : {}), ...(rawBody !== undefined ? { rawBody, headers: { 'content-type': 'application/json' } } : {}) });
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(res.body.error.code).toBe(code);
    expect(typeof res.body.error.message).toBe('string');
    expect(fileHash(temp.path)).toBe(before);
    expect(JSON.stringify(spool.settings.get())).toBe(settingsBefore);
  });
});

describe('admin API: security', () => {
  it('serves no path with dot segments or a leading //: /x/../admin/api/… must not slip past a guard the app put on /admin', async () => {
    const spool = temp.open();
    const handler = createAdminHandler(spool);
    // The app guards /admin and /metrics with its own login, on the path as sent, then mounts the handler.
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0]!;
      if ((path.startsWith('/admin') || path === '/metrics') && req.headers.cookie !== 'session=ok') {
        res.writeHead(401);
        res.end('login first');
        return;
      }
      handler(req, res, () => {
        res.writeHead(404);
        res.end('app 404');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    temp.onCleanup(async () => {
      handler.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    const port = (server.address() as AddressInfo).port;
    // node:http sends the path as given (fetch would resolve the dot segments first).
    const raw = (method: string, path: string, body?: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, method, path, headers: body === undefined ? {} : { 'content-type': 'application/json' } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end(body);
      });
    expect(await raw('GET', '/admin/api/settings')).toBe(401);
    for (const path of ['/x/../admin/api/settings', '/x/%2e%2e/admin/api/settings', '/x/.%2E/metrics', '/x/./../admin/']) {
      expect(await raw('GET', path), path).toBe(400);
    }
    expect(await raw('POST', '/x/../admin/api/accepting', '{"accepting":false}')).toBe(400);
    expect(spool.settings.get().accepting).toBe(true);
    // Paths that are not the handler's still go to the app.
    expect(await raw('GET', '/x/../elsewhere')).toBe(404);
    // A path that starts with // is a path (the app's router reads it so), not a host and a path:
    // //x/admin/api/settings is no request for /admin/api/settings.
    expect(await raw('GET', '//x/admin/api/settings')).toBe(404);
    expect(await raw('GET', '//x/metrics')).toBe(404);
    expect(await raw('POST', '//x/admin/api/accepting', '{"accepting":false}')).toBe(404);
    expect(spool.settings.get().accepting).toBe(true);
  });

  it('mounted with neither token nor allowedHosts, serves a request to a loopback address only under a loopback Host (DNS rebinding)', async () => {
    const { spool, base } = await running();
    const port = Number(new URL(base).port);
    // fetch sets Host itself: a raw request says what a rebinding page's browser sends.
    const raw = (method: string, path: string, host: string, body?: string) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const headers = { host, ...(body === undefined ? {} : { origin: `http://${host}`, 'content-type': 'application/json' }) };
        const req = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        });
        req.on('error', reject);
        req.end(body);
      });
    const rebound = await raw('POST', '/admin/api/accepting', `attacker.example:${port}`, '{"accepting":false}');
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.text).error.code).toBe('FORBIDDEN_HOST');
    expect(spool.settings.get().accepting).toBe(true);
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`]) expect((await raw('GET', '/admin/api/meta', host)).status).toBe(200);
  });

  it('needs the token everywhere (page, assets, API, SSE, metrics), as a Bearer header or ?token=, compared exactly', async () => {
    const { base } = await running({ token: 's3cret-token' });
    for (const path of ['/admin/', '/admin/assets/app.js', '/admin/api/stats', '/admin/api/events', '/metrics']) {
      const none = await call(base, path);
      expect(none.status, path).toBe(401);
      expect(none.body.error.code).toBe('UNAUTHORIZED');
      expect((await call(base, path, { headers: { authorization: 'Bearer s3cret-toke' } })).status, path).toBe(401);
      expect((await call(base, `${path}?token=s3cret-token-and-more`)).status, path).toBe(401);
    }
    expect((await call(base, '/admin/api/stats', { headers: { authorization: 'Bearer s3cret-token' } })).status).toBe(200);
    expect((await call(base, '/admin/api/stats?token=s3cret-token')).status).toBe(200);
    expect((await call(base, '/metrics', { headers: { authorization: 'bearer s3cret-token' } })).status).toBe(200);
    const page = await call(base, '/admin/?token=s3cret-token');
    expect(page.status).toBe(200);
    // The page passes its token on to the assets it loads.
    expect(page.text).toContain('assets/app.js?token=s3cret-token');
    expect((await call(base, '/admin/assets/app.js?token=s3cret-token')).status).toBe(200);
    const stream = openSse(`${base}/admin/api/events?token=s3cret-token`);
    sse.push(stream);
    await stream.next((f) => f.retry !== undefined);
    expect(stream.status).toBe(200);
  });

  it("takes a token with a '+' (base64) typed unencoded into the page's URL, and the page's calls with it", async () => {
    const token = 'ab+cd/ef==';
    const { base } = await running({ token });
    // The address bar sends the + as is; a query string reads it as a space.
    const page = await call(base, `/admin/?token=${token}`);
    expect(page.status).toBe(200);
    const asset = /assets\/app\.js\?token=[^"']+/.exec(page.text)![0];
    expect((await call(base, `/admin/${asset}`)).status).toBe(200);
    // The page reads its token from location.search (URLSearchParams): "ab cd/ef==".
    const seen = new URLSearchParams(`token=${token}`).get('token')!;
    expect((await call(base, '/admin/api/stats', { headers: { authorization: `Bearer ${seen}` } })).status).toBe(200);
    expect((await call(base, `/admin/api/stats?token=${encodeURIComponent(seen)}`)).status).toBe(200);
    expect((await call(base, `/admin/api/stats?token=${encodeURIComponent(token)}`)).status).toBe(200);
    // Still exact otherwise.
    for (const wrong of ['ab+cd/ef=', 'ab-cd/ef==', 'abcd/ef==', 'ab  cd/ef==']) {
      expect((await call(base, '/admin/api/stats', { headers: { authorization: `Bearer ${wrong}` } })).status, wrong).toBe(401);
    }
  });

  it('refuses every change in read-only mode with 403 and serves every read', async () => {
    const { spool, base } = await running({ readOnly: true });
    const [id] = await deadLetters(spool, 1);
    const before = JSON.stringify(spool.settings.get());
    const changes: [string, string, unknown][] = [
      ['PATCH', '/admin/api/settings', { executor: { concurrency: 9 } }],
      ['POST', '/admin/api/settings/reset', {}],
      ['POST', '/admin/api/accepting', { accepting: false }],
      ['POST', '/admin/api/concurrency', { concurrency: 9 }],
      ['POST', '/admin/api/queues/orphan/pause', {}],
      ['POST', '/admin/api/queues/orphan/resume', {}],
      ['POST', '/admin/api/queues/orphan/accepting', { accepting: false }],
      ['POST', '/admin/api/queues/orphan/concurrency', { concurrency: 2 }],
      ['PATCH', '/admin/api/queues/orphan/settings', { maxAttempts: 2 }],
      ['POST', '/admin/api/queues/orphan/settings/reset', {}],
      ['POST', '/admin/api/queues/orphan/purge', { state: 'dead' }],
      ['POST', '/admin/api/messages/requeue', { ids: [id] }],
      ['POST', '/admin/api/messages/delete', { ids: [id] }],
      ['POST', `/admin/api/messages/${id}/requeue`, {}],
      ['POST', `/admin/api/messages/${id}/delete`, {}],
    ];
    for (const [method, path, body] of changes) {
      const res = await call(base, path, { method, body });
      expect(res.status, path).toBe(403);
      expect(res.body.error.code).toBe('READ_ONLY');
    }
    expect(JSON.stringify(spool.settings.get())).toBe(before);
    expect((await spool.get(id!))?.state).toBe('dead');
    for (const path of ['/admin/api/stats', '/admin/api/queues', '/admin/api/queues/orphan', `/admin/api/messages/${id}`, '/admin/api/messages', '/admin/api/settings', '/admin/api/settings/explain', '/admin/api/meta', '/metrics', '/admin/']) {
      expect((await call(base, path)).status, path).toBe(200);
    }
    expect((await call(base, '/admin/api/meta')).body.readOnly).toBe(true);
  });

  it('takes changes only as JSON and only from its own origin (CSRF)', async () => {
    const { spool, base } = await running();
    const host = new URL(base).host;
    const form = await call(base, '/admin/api/accepting', { rawBody: 'accepting=false', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(form.status).toBe(415);
    expect(form.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    const plain = await call(base, '/admin/api/accepting', { rawBody: '{"accepting":false}', headers: { 'content-type': 'text/plain' } });
    expect(plain.status).toBe(415);
    const foreign = await call(base, '/admin/api/accepting', { body: { accepting: false }, headers: { origin: 'http://evil.example' } });
    expect(foreign.status).toBe(403);
    expect(foreign.body.error.code).toBe('FORBIDDEN_ORIGIN');
    const crossSite = await call(base, '/admin/api/accepting', { body: { accepting: false }, headers: { 'sec-fetch-site': 'cross-site' } });
    expect(crossSite.status).toBe(403);
    expect(spool.settings.get().accepting).toBe(true);

    const own = await call(base, '/admin/api/accepting', { body: { accepting: false }, headers: { origin: `http://${host}`, 'sec-fetch-site': 'same-origin' } });
    expect(own.status).toBe(200);
    expect(spool.settings.get().accepting).toBe(false);
    // A script without a browser's Origin (curl) may change things too.
    expect((await call(base, '/admin/api/accepting', { body: { accepting: true } })).status).toBe(200);
  });

  it('serves only allowed Host names when asked to (DNS rebinding)', async () => {
    const { base } = await running({ allowedHosts: ['127.0.0.1'] });
    expect((await call(base, '/admin/api/stats')).status).toBe(200);
    // fetch() will not send a forged Host header; node:http will.
    const rebound = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(`${base}/admin/api/stats`, { headers: { host: 'evil.example' } }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => (body += c)).on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject).end();
    });
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body).error.code).toBe('FORBIDDEN_HOST');
  });
});

describe('admin API: the page and the event stream', () => {
  it('serves the dashboard and its bundled assets, redirects /admin, and passes other paths to next()', async () => {
    const { base } = await running();
    const redirect = await call(base, '/admin?x=1');
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get('location')).toBe('admin/?x=1');
    const page = await call(base, '/admin/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(page.text).toContain('<div id="app">');
    expect(page.text).not.toMatch(/https?:\/\//);
    const js = await call(base, '/admin/assets/app.js');
    expect(js.headers.get('content-type')).toContain('text/javascript');
    expect(js.text.length).toBeGreaterThan(10_000);
    expect((await call(base, '/admin/assets/app.css')).headers.get('content-type')).toContain('text/css');
    expect((await call(base, '/admin/assets/..%2Fpackage.json')).status).toBe(404);
    expect((await call(base, '/elsewhere')).status).toBe(404);
  });

  it('streams events as SSE, filtered by queue, with a tick carrying counts, heartbeats, and replay after Last-Event-ID', async () => {
    const { spool, base } = await running({ heartbeatMs: 50, tickMs: 100 });
    const all = openSse(`${base}/admin/api/events`);
    const onlyWork = openSse(`${base}/admin/api/events?queue=work&types=message.state,admin.tick`);
    sse.push(all, onlyWork);
    await all.next((f) => f.retry === 2000);
    await onlyWork.next((f) => f.retry === 2000);

    await deadLetters(spool, 1);
    const id = await spool.send('work', { hello: 1 });
    await onlyWork.nextEvent((e) => e.type === 'message.state' && e.id === id && e.to === 'done');
    expect(onlyWork.events().filter((e) => e.type !== 'admin.tick').every((e) => e.queue === 'work' && e.type === 'message.state')).toBe(true);
    expect(all.events().some((e) => e.queue === 'orphan')).toBe(true);
    const tick = await onlyWork.nextEvent((e) => e.type === 'admin.tick' && e.stats?.queues?.work?.done >= 1);
    expect(tick.stats.pools.default.concurrency).toBe(4);
    await all.next((f) => f.comment === 'heartbeat');

    // Reconnect from a known event: everything after it arrives again, nothing before it.
    const mark = await all.next((f) => f.data !== undefined && JSON.parse(f.data).id === id && JSON.parse(f.data).to === 'pending');
    all.close();
    const later = await spool.send('work', { later: true });
    await reached(spool.events$, 'done', 1, 'work');
    const resumed = openSse(`${base}/admin/api/events?types=message.state`, { 'last-event-id': mark.id! });
    sse.push(resumed);
    await resumed.nextEvent((e) => e.id === later && e.from === null);
    expect(resumed.events().some((e) => e.id === id && e.from === null)).toBe(false);
    expect(resumed.events().some((e) => e.id === id && e.to === 'done')).toBe(true);

    const stale = openSse(`${base}/admin/api/events`, { 'last-event-id': 'feedface-1' });
    sse.push(stale);
    await stale.nextEvent((e) => e.type === 'admin.reset');
  });

  it('ends its streams and timers on close()', async () => {
    const spool = temp.open();
    const { base, handler } = await serveAdminFor(temp, spool, { heartbeatMs: 20, tickMs: 20 });
    const stream = openSse(`${base}/admin/api/events`);
    sse.push(stream);
    await stream.nextEvent((e) => e.type === 'admin.tick');
    handler.close();
    await stream.ended;
    // 204: EventSource stops reconnecting to a stream that will say nothing more.
    const after = await call(base, '/admin/api/events');
    expect(after.status).toBe(204);
    expect(after.text).toBe('');
  });

  it('serves no stream to a client that left before the handler ran (an awaiting middleware in front): no timers, no counts read', async () => {
    const spool = temp.open();
    let counted = 0;
    const counting: AdminSource = Object.assign(Object.create(spool) as Spool, {
      async stats() {
        counted += 1;
        return spool.stats();
      },
    });
    const handler = createAdminHandler(counting, { heartbeatMs: 20, tickMs: 20 });
    let handled: Promise<void> | undefined;
    const server = createServer((req, res) => {
      // An auth or session middleware awaits something; meanwhile the client goes away.
      handled = new Promise<void>((done) =>
        res.on('close', () => {
          handler(req, res);
          // The handler's own awaits are microtasks: done once they have all run.
          setImmediate(done);
        }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    temp.onCleanup(async () => {
      handler.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    const stream = openSse(`http://127.0.0.1:${(server.address() as AddressInfo).port}/admin/api/events`);
    // Aborted before any answer: the fetch itself rejects.
    stream.ready.catch(() => {});
    await until(() => handled !== undefined, 'the stream request arrived');
    stream.close();
    await handled;
    // A client kept for a closed response would start the tick (a stats() read now and every
    // tickMs) and the heartbeat, and nothing would ever stop them.
    expect(counted).toBe(0);
  });

  it('ends a stream opened after the spool closed at once, as one opened after close()', async () => {
    const spool = temp.open();
    const { base } = await serveAdminFor(temp, spool, { heartbeatMs: 20, tickMs: 20 });
    const live = openSse(`${base}/admin/api/events`);
    sse.push(live);
    await live.nextEvent((e) => e.type === 'admin.tick');
    await spool.close();
    await live.ended;
    // An EventSource reconnects: it must not hang on a spool that will say nothing more.
    const after = await call(base, '/admin/api/events');
    expect(after.status).toBe(204);
    expect(after.text).toBe('');
  });

  it('answers HEAD on every GET route of the API with the headers of its GET and no body', async () => {
    const { base } = await running();
    for (const path of ['/admin/api/meta', '/admin/api/stats', '/admin/api/queues', '/admin/api/settings', '/admin/api/messages?limit=1']) {
      const get = await call(base, path);
      // Not call(): it would parse the (empty) JSON body.
      const head = await fetch(base + path, { method: 'HEAD' });
      expect(head.status, path).toBe(200);
      expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
      expect(await head.text()).toBe('');
    }
    // A change stays POST/PATCH only: HEAD on it is still 405.
    expect((await fetch(`${base}/admin/api/accepting`, { method: 'HEAD' })).status).toBe(405);
  });

  it('answers HEAD on the event stream with its headers and an ended response', async () => {
    const { base } = await running({ heartbeatMs: 20, tickMs: 20 });
    const res = await call(base, '/admin/api/events', { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    expect(res.text).toBe('');
  });

  it('cuts off a client that stopped reading once its unsent output passes 1 MiB; a new connection is served', { timeout: 30_000 }, async () => {
    const { spool, server, base } = await running({ heartbeatMs: 5, tickMs: 5 });
    // 300 queues make each tick's counts about 20 KB: a client that reads nothing falls behind fast.
    for (let q = 0; q < 300; q++) await spool.send(`queue-${q}`, { q });
    const responses: ServerResponse[] = [];
    server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
      if (req.url?.startsWith('/admin/api/events')) responses.push(res);
    });
    const socket = connect(Number(new URL(base).port), '127.0.0.1');
    temp.onCleanup(() => socket.destroy());
    let highest = 0;
    socket.pause();
    socket.write('GET /admin/api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await until(() => responses.length === 1, 'the stream request arrived');
    const res = responses[0]!;
    // Once the socket's buffers are full, what the server still writes stays in its memory: the
    // stream is cut before that passes the cap by more than one write (a tick of these counts).
    await until(
      () => {
        highest = Math.max(highest, res.writableLength);
        return res.destroyed;
      },
      'the server cut the stream',
      20_000,
    );
    expect(highest).toBeLessThan((1 << 20) + 64 * 1024);
    // EventSource then reconnects with its Last-Event-ID, which the replay serves.
    const again = openSse(`${base}/admin/api/events`);
    sse.push(again);
    await again.nextEvent((e) => e.type === 'admin.tick');
  });
});
