import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startAdminServer } from '../../src/admin/server.js';
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
});
