/** The owner lock: one running spool per file, in this process or any other; writers need no lock. */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createSpool, SpoolError, type Spool } from '../../src/index.js';
import { spawnChild, type Child } from '../helpers/child.js';
import { nextEvent } from '../helpers/events.js';
import { tempDb } from '../helpers/temp-db.js';

const OWNER = fileURLToPath(new URL('./fixtures/owner-child.ts', import.meta.url));

const spools: Spool[] = [];
const children: Child[] = [];
let db: ReturnType<typeof tempDb> | undefined;

afterEach(async () => {
  await Promise.all(children.splice(0).map((c) => c.kill()));
  await Promise.all(spools.splice(0).map((s) => s.close()));
  db?.cleanup();
  db = undefined;
});

function open(config?: Record<string, unknown>) {
  db ??= tempDb();
  const spool = createSpool({ path: db.path, ...(config ? { config } : {}) });
  spools.push(spool);
  return spool;
}

function owner(path: string) {
  const child = spawnChild(OWNER, [path]);
  children.push(child);
  return child;
}

async function startError(spool: Spool): Promise<SpoolError> {
  try {
    await spool.start();
  } catch (error) {
    expect(error).toBeInstanceOf(SpoolError);
    return error as SpoolError;
  }
  throw new Error('expected start() to reject');
}

describe('owner lock in one process', () => {
  it('a second spool on the same file gets LOCKED; it can start once the first closes', async () => {
    const first = open();
    const second = open();
    await first.start();
    const error = await startError(second);
    expect(error.code).toBe('LOCKED');
    expect(error.message).toContain(db!.path);
    // A failed start leaves the second spool usable: it retries cleanly once the owner is gone.
    await first.close();
    await second.start();
    expect((await startError(open())).code).toBe('LOCKED');
  });

  it('stop() keeps the lock; close() releases it', async () => {
    const first = open();
    await first.start();
    await first.stop();
    expect((await startError(open())).code).toBe('LOCKED');
    await first.close();
    await open().start();
  });
});

describe('owner lock across processes', () => {
  it('LOCKED while a child owns the file; after SIGKILL of the child, start() succeeds at once', async () => {
    const spool = open();
    const child = owner(db!.path);
    await child.line('ready');
    expect((await startError(spool)).code).toBe('LOCKED');

    const exit = await child.kill();
    expect(exit.signal).toBe('SIGKILL');
    // No lease to wait out: the OS dropped the dead owner's file lock.
    await spool.start();
  });

  it('a child cannot start while this process owns the file', async () => {
    const spool = open();
    await spool.start();
    const child = owner(db!.path);
    const exit = await child.exited;
    expect(exit.code).not.toBe(0);
    await expect(child.line('ready', 1000)).rejects.toThrow(/LOCKED/);
  });
});

describe('writers without the lock', () => {
  it('a never-started spool sends while another spool in this process owns the file; the owner runs it via its poll', async () => {
    const ownerSpool = open({ processor: { pollIntervalMs: 50 } });
    const handled: unknown[] = [];
    ownerSpool.register('jobs', (message) => {
      handled.push(message.payload);
    });
    await ownerSpool.start();

    const producer = open();
    const done = nextEvent(ownerSpool.events$, (e) => e.type === 'message.state' && e.to === 'done', { timeoutMs: 10_000 });
    const id = await producer.send('jobs', { from: 'producer' });
    expect((await done) as { id: string }).toMatchObject({ id });
    expect(handled).toEqual([{ from: 'producer' }]);
    // The producer never took the lock: it can still not start while the owner runs.
    expect((await startError(producer)).code).toBe('LOCKED');
  });

  it('a never-started spool sends while a child owns the file; the child handles it', async () => {
    const child = owner(db ? db.path : (db = tempDb()).path);
    await child.line('ready');
    const producer = open();
    const ids = [await producer.send('jobs', 1), ...(await producer.sendBatch('jobs', [2, 3]))];
    for (const id of ids) await child.line(`handled ${id}`);
    // Settings changes need no lock either.
    await producer.settings.update({ executor: { concurrency: 7 } });
    expect(producer.settings.get().executor.concurrency).toBe(7);
  });
});
