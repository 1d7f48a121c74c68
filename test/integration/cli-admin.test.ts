/**
 * `spool admin --db file`: the built bin serves the dashboard's API for a file that this test
 * process owns (started spool), prints its URL as JSON, honours --token and --read-only, acts on
 * rows beside the owner, and stops cleanly on SIGTERM and SIGINT.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/build.js';
import { call } from '../helpers/admin.js';
import { reached } from '../helpers/events.js';
import { useTempSpools } from '../helpers/spool.js';

const spools = useTempSpools();

/** Spawns `spool admin` and resolves with its URL once it listens (its first stdout line). */
async function startAdmin(args: string[], env: Record<string, string> = {}): Promise<{ child: ChildProcess; url: string; base: string; exited: Promise<number | null>; stderr: () => string }> {
  const child = spawn(process.execPath, ['bin/spool.mjs', 'admin', '--db', spools.path, '--port', '0', ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  spools.onCleanup(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const line = stdout.split('\n')[0];
      if (stdout.includes('\n')) resolve((JSON.parse(line!) as { url: string }).url);
    });
    void exited.then((code) => reject(new Error(`spool admin exited (${code}) before listening: ${stderr}`)));
  });
  return { child, url, base: url.replace(/\/admin\/$/, ''), exited, stderr: () => stderr };
}

describe('spool admin', () => {
  it('serves the API for a file another process runs, acts on its rows, and stops on SIGTERM', async () => {
    const owner = spools.open();
    const dead = reached(owner.events$, 'dead', 2, 'orphan');
    await owner.send('orphan', { n: 1 });
    await owner.send('orphan', { n: 2 });
    await owner.start();
    await dead;

    const admin = await startAdmin([]);
    expect(admin.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/admin\/$/);
    const stats = await call(admin.base, '/admin/api/stats');
    expect(stats.status).toBe(200);
    expect(stats.body.queues.orphan).toEqual({ pending: 0, activating: 0, processing: 0, dead: 2, done: 0 });
    const page = await call(admin.base, '/admin/api/messages?queue=orphan&state=dead');
    expect(page.body.messages).toHaveLength(2);
    const [newest] = page.body.messages as { id: string }[];
    const message = await call(admin.base, `/admin/api/messages/${newest!.id}`);
    expect(message.body.history.map((h: { to: string }) => h.to)).toEqual(['pending', 'activating', 'dead']);

    // An action on rows from the admin process: the owner runs the requeued message.
    const removed = await call(admin.base, `/admin/api/messages/${newest!.id}/delete`, { method: 'POST', headers: { origin: admin.base } });
    expect(removed.body).toEqual({ removed: 1 });
    expect(await owner.get(newest!.id)).toBeUndefined();

    admin.child.kill('SIGTERM');
    expect(await admin.exited).toBe(0);
    expect(admin.stderr()).toContain('stopped');
  });

  it('needs the token when given one, refuses changes when read-only, and stops on SIGINT', async () => {
    const owner = spools.open();
    await owner.send('jobs', 1);
    const admin = await startAdmin(['--token', 's3cret', '--read-only']);
    expect((await call(admin.base, '/admin/api/stats')).status).toBe(401);
    const auth = { authorization: 'Bearer s3cret' };
    expect((await call(admin.base, '/admin/api/stats', { headers: auth })).body.queues.jobs.pending).toBe(1);
    const change = await call(admin.base, '/admin/api/queues/jobs/purge', { body: { state: 'pending' }, headers: { ...auth, origin: admin.base } });
    expect(change.status).toBe(403);
    expect((await owner.stats()).queues.jobs!.pending).toBe(1);
    admin.child.kill('SIGINT');
    expect(await admin.exited).toBe(0);
  });

  it('takes the token from SPOOL_ADMIN_TOKEN, out of its command line', async () => {
    await spools.open().send('jobs', 1);
    const admin = await startAdmin([], { SPOOL_ADMIN_TOKEN: 'from-env' });
    expect(admin.stderr()).not.toContain('warning');
    expect((await call(admin.base, '/admin/api/stats')).status).toBe(401);
    expect((await call(admin.base, '/admin/api/stats', { headers: { authorization: 'Bearer from-env' } })).status).toBe(200);
    admin.child.kill('SIGTERM');
    expect(await admin.exited).toBe(0);
  });

  it('refuses a missing file and a bad port with a coded message', async () => {
    const missing = spawn(process.execPath, ['bin/spool.mjs', 'admin', '--db', `${spools.dir}/none.db`], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    missing.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
    expect(await new Promise((resolve) => missing.on('exit', resolve))).toBe(1);
    expect(err).toContain('INVALID_ARGUMENT');
    const badPort = spawn(process.execPath, ['bin/spool.mjs', 'admin', '--db', spools.path, '--port', '70000'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    expect(await new Promise((resolve) => badPort.on('exit', resolve))).toBe(2);
  });
});
