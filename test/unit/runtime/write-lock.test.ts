import { execFileSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { newWriteLockBuffer, ownerWriteLock, workerWriteLock } from '../../../src/runtime/write-lock.js';

/** A committer's hold, recorded: hold() returns the release. */
function holds() {
  const log: string[] = [];
  let open = 0;
  return {
    log,
    get open() {
      return open;
    },
    hold: () => {
      open += 1;
      log.push('hold');
      return () => {
        open -= 1;
        log.push('release');
      };
    },
  };
}

const turn = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('write lock', () => {
  it('lets the owner commit while the worker does not hold it, and counts its commits', () => {
    const buffer = newWriteLockBuffer();
    const h = holds();
    const owner = ownerWriteLock(buffer, h.hold, 1000);
    const worker = workerWriteLock(buffer);
    expect(worker.ownerCommits()).toBe(0);
    expect(owner.enter()).toBe(true);
    owner.leave();
    expect(owner.enter()).toBe(true);
    owner.leave();
    expect(worker.ownerCommits()).toBe(2);
    expect(h.log).toEqual([]);
  });

  it('holds the owner commit that meets a worker step, and releases it as soon as the step ends', async () => {
    const buffer = newWriteLockBuffer();
    const h = holds();
    const owner = ownerWriteLock(buffer, h.hold, 5000);
    const worker = workerWriteLock(buffer);
    const inside = worker.holding(() => {
      const entered = owner.enter();
      // A second flush while held finds the hold already taken.
      return [entered, owner.enter()];
    });
    expect(inside).toEqual([false, false]);
    expect(h.open).toBe(1);
    await turn();
    expect(h.log).toEqual(['hold', 'release']);
    expect(owner.enter()).toBe(true);
    owner.leave();
    expect(worker.ownerCommits()).toBe(1);
  });

  it('lets the owner go on without the lock once a worker step outlasts the longest wait', async () => {
    const buffer = newWriteLockBuffer();
    const h = holds();
    const owner = ownerWriteLock(buffer, h.hold, 10);
    const worker = workerWriteLock(buffer);
    // A worker step that holds the lock across turns of this thread (slot LOCK = WORKER), and
    // longer than the owner waits: a stuck worker.
    const slots = new Int32Array(buffer);
    Atomics.store(slots, 0, 2);
    expect(owner.enter()).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(h.log).toEqual(['hold', 'release']);
    // The same step still holds it: the owner commits without it (SQLite's own lock decides),
    // and the commit still counts, so the worker's quiet() cannot mistake this for a quiet moment.
    expect(owner.enter()).toBe(true);
    owner.leave();
    expect(worker.ownerCommits()).toBe(1);
    expect(Atomics.load(slots, 0)).toBe(2);
    // The worker's next step is waited for again.
    Atomics.store(slots, 0, 0);
    worker.holding(() => expect(owner.enter()).toBe(false));
    await turn();
    expect(h.log).toEqual(['hold', 'release', 'hold', 'release']);
    expect(owner.enter()).toBe(true);
    owner.leave();
    expect(worker.ownerCommits()).toBe(2);
  });

  it('counts a wait that began on WANT against the episode the worker then holds', async () => {
    const buffer = newWriteLockBuffer();
    const h = holds();
    const owner = ownerWriteLock(buffer, h.hold, 10);
    const slots = new Int32Array(buffer);
    // The worker wants the lock (WANT = 1) and is then stuck holding it as episode 1.
    Atomics.store(slots, 2, 1);
    expect(owner.enter()).toBe(false);
    Atomics.store(slots, 0, 2);
    Atomics.store(slots, 1, 1);
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(h.log).toEqual(['hold', 'release']);
    // Past the limit for this episode: no second wait of maxWaitMs for the same stuck step.
    expect(owner.enter()).toBe(true);
    owner.leave();
    expect(h.log).toEqual(['hold', 'release']);
  });

  it('releases a waiting commit at dispose (the worker is gone)', async () => {
    const buffer = newWriteLockBuffer();
    const h = holds();
    const owner = ownerWriteLock(buffer, h.hold, 60_000);
    // A worker that takes the lock and never lets go.
    const slots = new Int32Array(buffer);
    Atomics.store(slots, 0, 2);
    expect(owner.enter()).toBe(false);
    owner.dispose();
    await turn();
    expect(h.log).toEqual(['hold', 'release']);
    expect(owner.enter()).toBe(true);
    owner.leave();
  });

  it('keeps the process alive while a commit waits: a script whose last send waits still commits it', () => {
    // A pending Atomics.waitAsync keeps no process alive; the owner's timer does. The child has
    // nothing else to wait for: without the timer it would exit before the release.
    const module = pathToFileURL(fileURLToPath(new URL('../../../src/runtime/write-lock.ts', import.meta.url))).href;
    const script = `import { newWriteLockBuffer, ownerWriteLock } from ${JSON.stringify(module)};
      const buffer = newWriteLockBuffer();
      new Int32Array(buffer)[0] = 2; // a worker holds the lock and never lets go
      const owner = ownerWriteLock(buffer, () => { console.log('held'); return () => console.log('released'); }, 50);
      console.log('entered', owner.enter());`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(out.trim().split('\n')).toEqual(['held', 'entered false', 'released']);
  });

  it('makes the owner let a waiting worker in before its next commit, across real threads', async () => {
    const buffer = newWriteLockBuffer();
    const h = holds();
    const owner = ownerWriteLock(buffer, h.hold, 5000);
    expect(owner.enter()).toBe(true);
    // The worker thread wants the lock while the owner holds it, then holds it 30 ms. It uses the
    // lock's slot layout directly (a worker cannot load TypeScript here): WANT=2, LOCK=0.
    const thread = new Worker(
      `const { workerData, parentPort } = require('node:worker_threads');
       const s = new Int32Array(workerData);
       Atomics.store(s, 2, 1);
       parentPort.postMessage('wanting');
       while (Atomics.compareExchange(s, 0, 0, 2) !== 0) Atomics.wait(s, 0, 1, 5);
       Atomics.store(s, 2, 0); Atomics.notify(s, 2); Atomics.add(s, 1, 1);
       parentPort.postMessage('holding');
       Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 30);
       Atomics.store(s, 0, 0); Atomics.notify(s, 0);`,
      { eval: true, workerData: buffer },
    );
    const messages: string[] = [];
    const holding = new Promise<void>((resolve) =>
      thread.on('message', (m: string) => {
        messages.push(m);
        if (m === 'holding') resolve();
      }),
    );
    await new Promise<void>((resolve) => thread.once('message', () => resolve()));
    // The worker now wants the lock: the owner's next commit must not take it again.
    owner.leave();
    expect(owner.enter()).toBe(false);
    await holding;
    await new Promise<void>((resolve) => thread.once('exit', () => resolve()));
    await turn();
    expect(h.log).toEqual(['hold', 'release']);
    expect(owner.enter()).toBe(true);
    owner.leave();
    expect(messages).toEqual(['wanting', 'holding']);
  });
});
