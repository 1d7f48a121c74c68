import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAdminHandler } from '../../src/admin/handler.js';
import { resolveAdminOptions } from '../../src/admin/options.js';
import { loopbackHosts } from '../../src/loopback.js';
import { serveAdmin, startAdminServer } from '../../src/admin/server.js';
import { call, openSse } from '../helpers/admin.js';
import { nextEvent } from '../helpers/events.js';
import { useTempSpools } from '../helpers/spool.js';

const temp = useTempSpools();

describe('startAdminServer (npx spool admin --db file)', () => {
  it('serves a file another process owns on 127.0.0.1, detached, and closes gracefully with a stream open', async () => {
    const owner = temp.open();
    owner.register('work', async () => {});
    await owner.start();
    await owner.settings.update({ queues: { work: { maxAttempts: 2 } } });

    const admin = await startAdminServer({ db: temp.path, port: 0 });
    expect(admin.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/admin\/$/);
    const base = admin.url.replace(/\/admin\/$/, '');
    expect((await call(base, '/admin/api/meta')).body.detached).toBe(true);
    expect((await call(base, '/admin/api/queues/work')).body.settings.find((s: { key: string[] }) => s.key[0] === 'maxAttempts').value).toBe(2);
    // Counts come from the file, whoever wrote them.
    await owner.send('work2', { from: 'owner' });
    expect((await call(base, '/admin/api/stats')).body.queues.work2).toBeDefined();
    // A change through the admin server lands in the file, where the owner finds it.
    const seen = nextEvent(owner.events$, (e) => e.type === 'settings.changed' && e.source === 'external');
    expect((await call(base, '/admin/api/queues/work/pause', { method: 'POST' })).status).toBe(200);
    await seen;
    expect(owner.settings.get().queues.work?.paused).toBe(true);

    const stream = openSse(`${base}/admin/api/events`);
    await stream.nextEvent((e) => e.type === 'admin.tick');
    await admin.close();
    await stream.ended;
    await expect(fetch(`${base}/admin/api/meta`)).rejects.toThrow();
  });

  it('refuses a missing file, and a port that is taken, with coded errors', async () => {
    await expect(startAdminServer({ db: join(temp.dir, 'missing.db') })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    temp.open();
    await temp.open().settings.update({ accepting: true });
    const first = await startAdminServer({ db: temp.path, port: 0 });
    temp.onCleanup(() => first.close());
    await expect(startAdminServer({ db: temp.path, port: first.port })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
  });

  it('takes any loopback address for one: Host headers naming another host get 403', async () => {
    expect(loopbackHosts('::1')).toEqual(['127.0.0.1', 'localhost', '[::1]']);
    expect(loopbackHosts('[::1]')).toEqual(['127.0.0.1', 'localhost', '[::1]']);
    expect(loopbackHosts('0:0:0:0:0:0:0:1')).toContain('[0:0:0:0:0:0:0:1]');
    expect(loopbackHosts('LOCALHOST')).toContain('localhost');
    for (const other of ['0.0.0.0', '::', '10.0.0.1', 'example.com', '::2', 'fe80::1', '128.0.0.1']) expect(loopbackHosts(other), other).toBeUndefined();

    // 127.0.0.2 is loopback too (Linux routes 127.0.0.0/8 to lo).
    const admin = await serveAdmin(temp.open(), { host: '127.0.0.2', port: 0 });
    temp.onCleanup(() => admin.close());
    const get = (host: string) => rawGet(admin.port, '127.0.0.2', '/admin/api/meta', host);
    expect(await get(`127.0.0.2:${admin.port}`)).toMatch(/^HTTP\/1\.1 200/);
    expect(await get(`localhost:${admin.port}`)).toMatch(/^HTTP\/1\.1 200/);
    expect(await get(`evil.example:${admin.port}`)).toMatch(/^HTTP\/1\.1 403/);
    // A fully qualified "localhost." is localhost; loopbackAliases add names on loopback sockets.
    expect(await get(`localhost.:${admin.port}`)).toMatch(/^HTTP\/1\.1 200/);
    const aliased = await serveAdmin(temp.open(), { host: '127.0.0.2', port: 0, allowedHosts: undefined, loopbackAliases: ['Queues.Local.'] });
    temp.onCleanup(() => aliased.close());
    expect(await rawGet(aliased.port, '127.0.0.2', '/admin/api/meta', `queues.local:${aliased.port}`)).toMatch(/^HTTP\/1\.1 200/);
    expect(() => resolveAdminOptions({ allowedHosts: ['proxy.local:8080'] })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
    expect(() => resolveAdminOptions({ loopbackAliases: ['::1'] })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
    // allowedHosts given as undefined keeps the check.
    const again = await serveAdmin(temp.open(), { host: '127.0.0.2', port: 0, allowedHosts: undefined });
    temp.onCleanup(() => again.close());
    expect(await rawGet(again.port, '127.0.0.2', '/admin/api/meta', `evil.example:${again.port}`)).toMatch(/^HTTP\/1\.1 403/);
  });

  it('refuses a closeTimeoutMs a Node timer cannot keep, closing what it was given', async () => {
    const spool = temp.open();
    let closed = 0;
    await expect(serveAdmin(spool, { port: 0, closeTimeoutMs: 2 ** 31 }, () => void (closed += 1))).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    expect(closed).toBe(1);
  });

  it('cuts a connection that never finishes its request once closeTimeoutMs has passed', async () => {
    const admin = await serveAdmin(temp.open(), { port: 0, closeTimeoutMs: 100 });
    const socket = connect(admin.port, '127.0.0.1');
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    // Half a request: the server waits for the rest of its headers.
    socket.write('GET /admin/api/meta HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    await new Promise((resolve) => setTimeout(resolve, 50));
    await admin.close();
    await closed;
  });

  it('refuses heartbeatMs and tickMs beyond what a Node timer keeps (2^31 − 1 ms)', () => {
    for (const key of ['heartbeatMs', 'tickMs'] as const) {
      expect(() => resolveAdminOptions({ [key]: 2 ** 31 })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS', message: expect.stringContaining(key) }));
      expect(resolveAdminOptions({ [key]: 2 ** 31 - 1 })[key]).toBe(2 ** 31 - 1);
    }
  });
});

/** One GET over a raw socket with the given Host header; resolves with the status line. */
describe('the handler behind a JSON body parser (Express app.use(express.json()) before it)', () => {
  /**
   * A server that runs a body parser first, as body-parser's json() does: it reads a JSON request
   * to its end and (unless `leaveNoBody`) sets req.body, then calls the admin handler.
   */
  async function behindParser(leaveNoBody = false) {
    const spool = temp.open();
    const admin = createAdminHandler(spool);
    const server = createServer(async (req, res) => {
      if ((req.headers['content-type'] ?? '').startsWith('application/json')) {
        let text = '';
        for await (const chunk of req) text += chunk;
        if (!leaveNoBody) Object.assign(req, { body: text === '' ? {} : JSON.parse(text), _body: true });
      }
      admin(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    temp.onCleanup(async () => {
      admin.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    return { spool, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  }

  it('applies the change the parser read into req.body', async () => {
    const { spool, base } = await behindParser();
    const res = await call(base, '/admin/api/settings', { method: 'PATCH', body: { accepting: false } });
    expect(res.status).toBe(200);
    expect(spool.settings.get().accepting).toBe(false);
  });

  it('answers 500 BODY_ALREADY_READ, changing nothing, when the body was read and no req.body was left', async () => {
    const { spool, base } = await behindParser(true);
    const res = await call(base, '/admin/api/settings', { method: 'PATCH', body: { accepting: false } });
    expect(res.status).toBe(500);
    expect(res.body.error.code).toBe('BODY_ALREADY_READ');
    expect(spool.settings.get().accepting).toBe(true);
  });
});

function rawGet(port: number, address: string, path: string, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, address);
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
      if (text.includes('\r\n')) {
        socket.destroy();
        resolve(text.slice(0, text.indexOf('\r\n')));
      }
    });
    socket.on('error', reject);
    socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  });
}
