/**
 * examples/embedding/app.ts as a real child process: a POST over 127.0.0.1 is queued and handled
 * in the same process, and SIGTERM closes the server, then the spool, with a clean exit.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnChild, type Child } from '../helpers/child.js';
import { countRows } from '../helpers/read-db.js';
import { tempDb } from '../helpers/temp-db.js';

const APP = fileURLToPath(new URL('../../examples/embedding/app.ts', import.meta.url));

let cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** Starts the example on a free port and a temp database; resolves once it listens. */
async function startApp(): Promise<{ app: Child; url: string; db: string }> {
  const db = tempDb('embedding.db');
  const app = spawnChild(APP, [], { PORT: '0', SPOOL_DB: db.path });
  cleanups.push(db.cleanup, () => app.kill());
  const listening = await app.line(/^listening on http:\/\/127\.0\.0\.1:\d+$/);
  return { app, url: listening.slice('listening on '.length), db: db.path };
}

async function post(url: string, body: string): Promise<{ status: number; json: unknown }> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return { status: response.status, json: await response.json() };
}

describe('the embedding example (examples/embedding/app.ts)', { timeout: 60_000 }, () => {
  it('queues from a route, handles in the same process, and exits 0 after SIGTERM closes server and spool', async () => {
    const { app, url, db } = await startApp();

    const accepted = await post(`${url}/signup`, JSON.stringify({ email: 'a@b.c' }));
    expect(accepted.status).toBe(202);
    const { queued } = accepted.json as { queued: string };
    await app.line(`handled ${queued} {"to":"a@b.c","subject":"Welcome"}`);

    const refused = await post(`${url}/signup`, JSON.stringify({ name: 'no email' }));
    expect(refused).toEqual({ status: 400, json: { error: 'Expected a JSON body with an "email" string' } });

    app.process.kill('SIGTERM');
    // A clean exit on its own: the server and the spool left no handle behind.
    expect(await app.exited).toEqual({ code: 0, signal: null });
    expect(app.lines.slice(-2)).toEqual(['SIGTERM: shutting down', 'closed']);
    // The handled message completed and was deleted; nothing else was stored.
    expect(countRows(db)).toBe(0);
  });
});
