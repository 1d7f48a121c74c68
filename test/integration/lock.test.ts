/** The owner lock: one running spool per file, in this process or any other; writers need no lock. */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spawnChild } from '../helpers/child.js';
import { rejection } from '../helpers/errors.js';
import { nextEvent } from '../helpers/events.js';
import { useTempSpools } from '../helpers/spool.js';

const OWNER = fileURLToPath(new URL('./fixtures/owner-child.ts', import.meta.url));

const spools = useTempSpools();

/** A child process that owns this test's file until it is killed (after the test at the latest). */
function owner() {
  const child = spawnChild(OWNER, [spools.path]);
  spools.onCleanup(() => child.kill());
  return child;
}

describe('owner lock in one process', () => {
  it('a second spool on the same file gets LOCKED; it can start once the first closes', async () => {
    const first = spools.open();
    const second = spools.open();
    await first.start();
    const error = await rejection(second.start());
    expect(error.code).toBe('LOCKED');
    expect(error.message).toContain(spools.path);
    // A failed start leaves the second spool usable: it retries cleanly once the owner is gone.
    await first.close();
    await second.start();
    expect((await rejection(spools.open().start())).code).toBe('LOCKED');
  });

  it('stop() keeps the lock; close() releases it', async () => {
    const first = spools.open();
    await first.start();
    await first.stop();
    expect((await rejection(spools.open().start())).code).toBe('LOCKED');
    await first.close();
    await spools.open().start();
  });
});

describe('owner lock across processes', () => {
  it('LOCKED while a child owns the file; after SIGKILL of the child, start() succeeds at once', async () => {
    const spool = spools.open();
    const child = owner();
    await child.line('ready');
    expect((await rejection(spool.start())).code).toBe('LOCKED');

    const exit = await child.kill();
    expect(exit.signal).toBe('SIGKILL');
    // No lease to wait out: the OS dropped the dead owner's file lock.
    await spool.start();
  });

  it('a child cannot start while this process owns the file', async () => {
    const spool = spools.open();
    await spool.start();
    const child = owner();
    const exit = await child.exited;
    expect(exit.code).not.toBe(0);
    await expect(child.line('ready', 1000)).rejects.toThrow(/LOCKED/);
  });
});

describe('writers without the lock', () => {
  it('a never-started spool sends while another spool in this process owns the file; the owner runs it via its poll', async () => {
    const ownerSpool = spools.open({ config: { processor: { pollIntervalMs: 50 } } });
    const handled: unknown[] = [];
    ownerSpool.register('jobs', (message) => {
      handled.push(message.payload);
    });
    await ownerSpool.start();

    const producer = spools.open();
    const done = nextEvent(ownerSpool.events$, (e) => e.type === 'message.state' && e.to === 'done', { timeoutMs: 10_000 });
    const id = await producer.send('jobs', { from: 'producer' });
    expect((await done) as { id: string }).toMatchObject({ id });
    expect(handled).toEqual([{ from: 'producer' }]);
    // The producer never took the lock: it can still not start while the owner runs.
    expect((await rejection(producer.start())).code).toBe('LOCKED');
  });

  it('a never-started spool sends while a child owns the file; the child handles it', async () => {
    const child = owner();
    await child.line('ready');
    const producer = spools.open();
    const ids = [await producer.send('jobs', 1), ...(await producer.sendBatch('jobs', [2, 3]))];
    for (const id of ids) await child.line(`handled ${id}`);
    // Settings changes need no lock either.
    await producer.settings.update({ executor: { concurrency: 7 } });
    expect(producer.settings.get().executor.concurrency).toBe(7);
  });
});
