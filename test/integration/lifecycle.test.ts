/** start/stop/close: idempotent, shared in-flight promises, stop semantics, nothing left open. */
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { firstValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createSpool, SpoolError, type Message, type SpoolEvent } from '../../src/index.js';
import { nextEvent, reached } from '../helpers/events.js';
import { rejection } from '../helpers/errors.js';
import { ROOT } from '../helpers/build.js';
import { createGate } from '../helpers/gate.js';
import { readDb } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';

const spools = useTempSpools();

/** Lets pending callbacks, immediates and I/O run a few times (no timed wait). */
async function turns(n = 5) {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

function resourceCounts(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const type of process.getActiveResourcesInfo()) counts.set(type, (counts.get(type) ?? 0) + 1);
  return counts;
}

/** File descriptors of this process that point into `dir` (Linux only; empty elsewhere). */
function fdsUnder(dir: string): string[] {
  if (!existsSync('/proc/self/fd')) return [];
  const found: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(dir)) found.push(target);
    } catch {
      // The fd closed between listing and reading it.
    }
  }
  return found;
}

/** Two concurrent calls get the same promise; a later call after it settled is a no-op. */
async function expectShared(call: () => Promise<void>) {
  const first = call();
  const second = call();
  expect(second).toBe(first);
  await Promise.all([first, second]);
  await call();
}

describe('idempotent lifecycle', () => {
  it('concurrent start(), stop() and close() calls share one promise each; repeats are no-ops', async () => {
    const spool = spools.open();
    spool.register('email', () => {});
    await expectShared(() => spool.start());

    const done = reached(spool.events$, 'done', 1);
    await spool.send('email', 1);
    await done;

    await expectShared(() => spool.stop());

    // Restart after stop resumes processing.
    await spool.start();
    const again = reached(spool.events$, 'done', 1);
    await spool.send('email', 2);
    await again;

    await expectShared(() => spool.close());
    await spool.stop();
  });

  it('reports one status through its life: idle, starting, running, stopping, idle, closing, closed', async () => {
    const spool = spools.open();
    expect(spool.status).toBe('idle');
    const starting = spool.start();
    expect(spool.status).toBe('starting');
    await starting;
    expect(spool.status).toBe('running');
    const stopping = spool.stop();
    expect(spool.status).toBe('stopping');
    await stopping;
    expect(spool.status).toBe('idle');
    await spool.start();
    const closing = spool.close();
    expect(spool.status).toBe('closing');
    await closing;
    expect(spool.status).toBe('closed');
  });

  it('the last of start() and stop() wins: start(); stop(); start() ends running, stop(); start(); stop() ends idle', async () => {
    const spool = spools.open();
    spool.register('email', () => {});
    const calls = [spool.start(), spool.stop(), spool.start()];
    expect(spool.status).toBe('stopping');
    await Promise.all(calls);
    expect(spool.status).toBe('running');
    // It claims: the awaited start() was not undone by the stop before it.
    const done = reached(spool.events$, 'done', 1);
    await spool.send('email', 1);
    await done;

    const more = [spool.stop(), spool.start(), spool.stop()];
    await Promise.all(more);
    expect(spool.status).toBe('idle');
    expect(spool.supervisor.getSnapshot().value).toBe('stopped');

    // A start that a stop has already undone runs (recovery and all) while the status says
    // 'stopping', never 'starting'.
    const statuses = new Set<string>();
    const sub = spool.events$.subscribe(() => statuses.add(spool.status));
    await Promise.all([spool.start(), spool.stop()]);
    sub.unsubscribe();
    expect(statuses.has('stopping')).toBe(true);
    expect(statuses.has('starting')).toBe(false);
    expect(spool.status).toBe('idle');
  });

  it('stop() and close() on a never-started spool resolve', async () => {
    const spool = spools.open();
    await spool.stop();
    await spool.close();
    await spool.close();
  });

  it('a failed start() (LOCKED) is shared by concurrent callers and leaves the spool retryable', async () => {
    const spool = spools.open();
    const owner = createSpool({ path: spools.path });
    await owner.start();
    try {
      const a = spool.start();
      const b = spool.start();
      expect(b).toBe(a);
      await expect(a).rejects.toMatchObject({ code: 'LOCKED' });
      await expect(b).rejects.toMatchObject({ code: 'LOCKED' });
    } finally {
      await owner.close();
    }
    await spool.start();
  });
});

describe('start() when the file refuses a write that is not a busy lock', () => {
  it('rejects with STORAGE_ERROR, a SpoolError, never the raw SqliteError', async () => {
    // Boot recovery must update the row a stop abandoned in flight; a trigger (the fault) refuses it.
    const first = spools.open();
    const gate = createGate();
    first.register('jobs', () => gate.wait());
    await first.start();
    const processing = reached(first.events$, 'processing', 1);
    await first.send('jobs', 1);
    await processing;
    await first.close({ timeoutMs: 0 });
    gate.open();
    spools.connect().exec(`CREATE TRIGGER fault BEFORE UPDATE ON messages BEGIN SELECT RAISE(ABORT, 'injected fault'); END`);

    const second = spools.open();
    second.register('jobs', () => {});
    const started = await second.start().catch((e: unknown) => e);
    expect(started).toBeInstanceOf(SpoolError);
    expect(started).toMatchObject({ code: 'STORAGE_ERROR', cause: { code: 'SQLITE_CONSTRAINT_TRIGGER' } });
  });
});

describe('stop()', () => {
  it('stops claiming but keeps storing sends; start() resumes', async () => {
    const spool = spools.open();
    const handled: unknown[] = [];
    spool.register('email', (m) => {
      handled.push(m.payload);
    });
    await spool.start();
    await spool.stop();
    const id = await spool.send('email', 'while stopped');
    await turns();
    expect(handled).toEqual([]);
    expect((await spool.get(id))?.state).toBe('pending');
    const done = reached(spool.events$, 'done', 1);
    await spool.start();
    await done;
    expect(handled).toEqual(['while stopped']);
  });

  it('keeps one bound while another connection holds the write lock: the timeout or 500 ms, whichever is later, not 500 ms more', async () => {
    // The supervisor's drain waited up to the bound, then the lifecycle drained for another 500 ms.
    const spool = spools.open();
    const gate = createGate();
    spool.register('email', () => gate.wait());
    await spool.start();
    const processing = reached(spool.events$, 'processing', 2);
    await spool.sendBatch('email', [1, 2]);
    await processing;
    const other = spools.connect();
    other.exec('BEGIN IMMEDIATE');
    gate.open();
    const started = performance.now();
    await spool.stop({ timeoutMs: 0 });
    const took = performance.now() - started;
    other.exec('ROLLBACK');
    expect(took).toBeGreaterThanOrEqual(450);
    expect(took).toBeLessThan(900);
  });

  it('called from a handler without awaiting it, waits for that handler, and its message completes', async () => {
    const spool = spools.open();
    let stopped: Promise<void> | undefined;
    spool.register('email', () => {
      stopped = spool.stop();
    });
    await spool.start();
    const id = await spool.send('email', 1);
    await nextEvent(spool.events$, (e) => e.type === 'message.state' && e.id === id && e.to === 'done');
    await stopped;
    expect(spool.status).toBe('idle');
    expect(await spool.get(id)).toBeUndefined();
  });

  it('waits for in-flight handlers to finish before resolving', async () => {
    const spool = spools.open();
    const gate = createGate();
    const order: string[] = [];
    spool.register('email', async () => {
      await gate.wait();
      order.push('handler finished');
    });
    await spool.start();
    const processing = reached(spool.events$, 'processing', 2);
    const ids = await spool.sendBatch('email', [1, 2]);
    await processing;

    const stopped = spool.stop().then(() => order.push('stop resolved'));
    await turns();
    expect(order).toEqual([]);
    gate.open();
    await stopped;
    expect(order).toEqual(['handler finished', 'handler finished', 'stop resolved']);
    // The handlers' completions landed before stop() resolved.
    for (const id of ids) expect(await spool.get(id)).toBeUndefined();
  });

  it('aborts handlers still running after timeoutMs (reason STOPPED); their rows stay processing and the next start() reruns them', async () => {
    const spool = spools.open();
    const runs: { message: Message; signal: AbortSignal }[] = [];
    spool.register('email', async (message, { signal }) => {
      runs.push({ message, signal });
      if (message.deliveries === 1) {
        // Ignores everything until aborted, like a handler stuck on I/O.
        await new Promise((resolve) => signal.addEventListener('abort', resolve));
      }
    });
    const events: SpoolEvent[] = [];
    spool.events$.subscribe((e) => events.push(e));
    await spool.start();
    const processing = reached(spool.events$, 'processing', 1);
    const id = await spool.send('email', { n: 1 });
    await processing;

    const stale = nextEvent(spool.events$, (e) => e.type === 'message.stale' && e.id === id);
    await spool.stop({ timeoutMs: 50 });
    expect(runs).toHaveLength(1);
    const { signal } = runs[0]!;
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(SpoolError);
    expect((signal.reason as SpoolError).code).toBe('STOPPED');
    // The abandoned handler's late return is ignored, not settled.
    expect(await stale).toMatchObject({ type: 'message.stale', id, attempt: 1 });
    expect((await spool.get(id))?.state).toBe('processing');
    expect(readDb(spools.path, (other) => other.prepare('SELECT state, deliveries FROM messages WHERE id = ?').get(id))).toEqual({ state: 'processing', deliveries: 1 });
    expect(events.some((e) => e.type === 'message.state' && e.id === id && e.to === 'done')).toBe(false);

    const recovered = nextEvent(spool.events$, (e) => e.type === 'spool.recovered');
    const done = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.id === id && e.to === 'done');
    await spool.start();
    expect(await recovered).toMatchObject({ type: 'spool.recovered', pending: 1, dead: 0 });
    await done;
    expect(runs).toHaveLength(2);
    expect(runs[1]!.message).toMatchObject({ id, attempt: 1, deliveries: 2, payload: { n: 1 } });
    expect(runs[1]!.signal.aborted).toBe(false);
    const transitions = events.filter((e) => e.type === 'message.state' && e.id === id).map((e) => (e.type === 'message.state' ? `${e.from}→${e.to}` : ''));
    expect(transitions).toEqual([
      'null→pending',
      'pending→activating',
      'activating→processing',
      'processing→pending',
      'pending→activating',
      'activating→processing',
      'processing→done',
    ]);
    // The timeline says why the first attempt ended without an outcome: the stop gave up on it.
    const kept = await spool.removedHistory(id);
    expect(kept!.history.filter((h) => h.code !== undefined)).toEqual([expect.objectContaining({ from: 'processing', to: 'pending', code: 'STOPPED', attempt: 1 })]);
    expect(spool.telemetry().failed).toMatchObject({ STOPPED: 1 });
  });

  it('a start() while an abandoned handler still runs here reruns its message only once it returns, and holds its group', async () => {
    const spool = spools.open();
    const gate = createGate();
    const log: string[] = [];
    spool.register<{ n: number }>('email', async (message) => {
      log.push(`start ${message.payload.n}/${message.deliveries}`);
      // Ignores its abort signal: it returns when the gate opens, long after the stop gave up.
      if (message.deliveries === 1 && message.payload.n === 1) await gate.wait();
      log.push(`end ${message.payload.n}/${message.deliveries}`);
    });
    await spool.start();
    const processing = reached(spool.events$, 'processing', 1);
    await spool.sendBatch('email', [{ n: 1 }, { n: 2 }], { group: 'g' });
    await processing;
    await spool.stop({ timeoutMs: 10 });

    const recovered = nextEvent(spool.events$, (e) => e.type === 'spool.recovered');
    await spool.start();
    // Left in flight: its handler still runs in this process.
    expect(await recovered).toMatchObject({ pending: 0, dead: 0 });
    // Claims run (another queue's message comes and goes), yet neither 1 nor its group's 2 starts.
    spool.register('other', () => {});
    const otherDone = reached(spool.events$, 'done', 1, 'other');
    await spool.send('other', {});
    await otherDone;
    expect(log).toEqual(['start 1/1']);

    const bothDone = reached(spool.events$, 'done', 2, 'email');
    gate.open();
    await bothDone;
    expect(log).toEqual(['start 1/1', 'end 1/1', 'start 1/2', 'end 1/2', 'start 2/1', 'end 2/1']);
  });

  it('a row held across a second stop is still abandoned, not crashed, at the start after', async () => {
    // One counted crash would be the last: the message would go dead with CRASH_LOOP.
    const spool = spools.open({ config: { queueDefaults: { maxCrashes: 1 } } });
    const gate = createGate();
    const runs: number[] = [];
    spool.register('email', async (message) => {
      runs.push(message.deliveries);
      if (message.deliveries === 1) await gate.wait();
    });
    await spool.start();
    const processing = reached(spool.events$, 'processing', 1);
    const id = await spool.send('email', {});
    await processing;
    await spool.stop({ timeoutMs: 10 });
    await spool.start(); // held: its handler still runs
    await spool.stop({ timeoutMs: 10 });
    gate.open(); // it returns while the spool is stopped
    await new Promise((resolve) => setTimeout(resolve, 20));
    const done = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.id === id && e.to === 'done');
    await spool.start();
    await done;
    expect(runs).toEqual([1, 2]);
    const kept = await spool.removedHistory(id);
    expect(kept!.history.filter((h) => h.code !== undefined).map((h) => h.code)).toEqual(['STOPPED']);
  });

  it('a held handler that returns while a later stop waits for others is not counted a crash', async () => {
    const spool = spools.open({ config: { queueDefaults: { maxCrashes: 1 } } });
    const gateA = createGate();
    const gateB = createGate();
    spool.register<{ n: string }>('email', async (message) => {
      if (message.payload.n === 'A' && message.deliveries === 1) await gateA.wait();
      if (message.payload.n === 'B') await gateB.wait();
    });
    await spool.start();
    let processing = reached(spool.events$, 'processing', 1);
    const a = await spool.send('email', { n: 'A' });
    await processing;
    await spool.stop({ timeoutMs: 10 });
    await spool.start(); // A is held: its handler still runs
    processing = reached(spool.events$, 'processing', 1);
    await spool.send('email', { n: 'B' });
    await processing;
    const stopping = spool.stop({ timeoutMs: 5000 });
    gateA.open(); // A returns while the stop waits for B
    await new Promise((resolve) => setTimeout(resolve, 20));
    gateB.open();
    await stopping;
    const settled = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.id === a && (e.to === 'done' || e.to === 'dead'));
    await spool.start();
    expect(await settled).toMatchObject({ to: 'done' });
  });

  it('an abandoned handler that never returns holds its row only until its timeoutMs has passed', async () => {
    const spool = spools.open({ config: { processor: { pollIntervalMs: 50 }, queues: { email: { timeoutMs: 300 } } } });
    const log: string[] = [];
    spool.register<{ n: number }>('email', async (message) => {
      log.push(`start ${message.payload.n}/${message.deliveries}`);
      // Hangs for good on its first delivery, deaf to its signal.
      if (message.deliveries === 1 && message.payload.n === 1) await new Promise(() => {});
    });
    await spool.start();
    const processing = reached(spool.events$, 'processing', 1);
    const [first] = await spool.sendBatch('email', [{ n: 1 }, { n: 2 }], { group: 'g' });
    await processing;
    await spool.stop({ timeoutMs: 10 });
    const recovered = nextEvent(spool.events$, (e) => e.type === 'spool.recovered');
    const bothDone = reached(spool.events$, 'done', 2, 'email', 10_000);
    await spool.start();
    expect(await recovered).toMatchObject({ pending: 0, dead: 0 });
    // Past the 300 ms deadline, the poll returns it to pending: it runs again, then its group goes on.
    await bothDone;
    expect(log).toEqual(['start 1/1', 'start 1/2', 'start 2/1']);
    const kept = await spool.removedHistory(first!);
    expect(kept!.history.filter((h) => h.code !== undefined)).toEqual([expect.objectContaining({ from: 'processing', to: 'pending', code: 'STOPPED' })]);
  });
});

describe('close()', () => {
  it('leaves no handles, timers or file descriptors behind; the file can be deleted and reopened', async () => {
    await turns();
    const before = resourceCounts();
    const spool = spools.open({ config: { processor: { pollIntervalMs: 50 }, maintenance: { intervalMs: 100 } } });
    const { path } = spools;
    const gate = createGate();
    spool.register('email', () => gate.wait());
    spool.register('sms', () => {});
    await spool.start();
    const processing = reached(spool.events$, 'processing', 1, 'email');
    await spool.send('email', 1);
    await spool.send('sms', 1, { delayMs: 60_000 });
    await processing;
    // While running, the poll and delayed timers and the open files are visible to both probes.
    expect(resourceCounts().get('Timeout') ?? 0).toBeGreaterThan(before.get('Timeout') ?? 0);
    if (existsSync('/proc/self/fd')) expect(fdsUnder(spools.dir).length).toBeGreaterThan(0);

    const closing = spool.close();
    gate.open();
    await closing;
    await turns();

    // The test runner may hold a transient handle of its own; a leak of ours persists across turns.
    let leaked: [string, number][] = [];
    for (let round = 0; round < 20; round++) {
      leaked = [...resourceCounts()].filter(([type, n]) => n > (before.get(type) ?? 0));
      if (leaked.length === 0) break;
      await turns();
    }
    expect(leaked).toEqual([]);
    expect(fdsUnder(spools.dir)).toEqual([]);

    for (const suffix of ['', '-wal', '-shm', '.lock']) rmSync(`${path}${suffix}`, { force: true });
    const raw = new Database(path);
    try {
      raw.pragma('busy_timeout = 0');
      raw.exec('BEGIN EXCLUSIVE; CREATE TABLE probe (x); COMMIT');
    } finally {
      raw.close();
    }
    rmSync(path);
    const reopened = createSpool({ path });
    try {
      reopened.register('email', () => {});
      await reopened.start();
      const done = reached(reopened.events$, 'done', 1);
      await reopened.send('email', 1);
      await done;
    } finally {
      await reopened.close();
    }
  });

  it('completes events$, settings$ and open watches', async () => {
    const spool = spools.open();
    const gate = createGate();
    spool.register('email', () => gate.wait());
    await spool.start();
    const processing = reached(spool.events$, 'processing', 1);
    const id = await spool.send('email', 1);
    await processing;

    const eventsEnd = firstValueFrom(spool.events$.pipe(toArray()));
    const settingsEnd = firstValueFrom(spool.settings.settings$.pipe(toArray()));
    const watchEnd = firstValueFrom(spool.watch(id).pipe(toArray()));
    const closing = spool.close();
    gate.open();
    await closing;
    const events = await eventsEnd;
    expect(events.some((e) => e.type === 'message.state' && e.to === 'done')).toBe(true);
    expect((await settingsEnd).length).toBeGreaterThanOrEqual(1);
    expect(await watchEnd).toEqual(['processing', 'done']);
    // Subscribing after close completes at once.
    expect(await firstValueFrom(spool.events$.pipe(toArray()))).toEqual([]);
  });

  it('close() while a handler hangs aborts it after the stop timeout and still closes', async () => {
    const spool = spools.open();
    let signal: AbortSignal | undefined;
    spool.register('email', (_m, ctx) => {
      signal = ctx.signal;
      return new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
    });
    await spool.start();
    const processing = reached(spool.events$, 'processing', 1);
    const id = await spool.send('email', 1);
    await processing;
    await spool.stop({ timeoutMs: 20 });
    await spool.close();
    expect(signal?.aborted).toBe(true);
    expect(readDb(spools.path, (other) => other.prepare('SELECT state FROM messages WHERE id = ?').get(id))).toEqual({ state: 'processing' });
  });
  // Guards: start() called while close() waited for a handler used to resolve (it only checked
  // `closed`), restarting the supervisor behind close(): its poll and maintenance timers outlived
  // close() and kept firing on a closed database.
  it('start() while close() waits for a handler rejects with CLOSED; close() resolves and leaves no timers', async () => {
    await turns();
    const before = resourceCounts();
    const spool = spools.open({ config: { processor: { pollIntervalMs: 50 }, maintenance: { intervalMs: 100 } } });
    const gate = createGate();
    spool.register('email', () => gate.wait());
    await spool.start();
    const processing = reached(spool.events$, 'processing', 1);
    await spool.send('email', 1);
    await processing;

    const closing = spool.close();
    await turns();
    const restart = spool.start();
    gate.open();
    expect((await rejection(restart)).code).toBe('CLOSED');
    await closing;
    // A start() after close() still rejects too.
    expect((await rejection(spool.start())).code).toBe('CLOSED');
    await turns();

    let leaked: [string, number][] = [];
    for (let round = 0; round < 20; round++) {
      leaked = [...resourceCounts()].filter(([type, n]) => n > (before.get(type) ?? 0));
      if (leaked.length === 0) break;
      await turns();
    }
    expect(leaked).toEqual([]);
  });

  it('start() while close({ timeoutMs }) aborts a hung handler rejects with CLOSED and leaves no timers', async () => {
    await turns();
    const before = resourceCounts();
    const spool = spools.open({ config: { processor: { pollIntervalMs: 50 }, maintenance: { intervalMs: 100 } } });
    spool.register('email', (_m, ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', resolve)));
    await spool.start();
    const processing = reached(spool.events$, 'processing', 1);
    await spool.send('email', 1);
    await processing;

    const closing = spool.close({ timeoutMs: 30 });
    await turns();
    expect((await rejection(spool.start())).code).toBe('CLOSED');
    await closing;
    await turns();

    let leaked: [string, number][] = [];
    for (let round = 0; round < 20; round++) {
      leaked = [...resourceCounts()].filter(([type, n]) => n > (before.get(type) ?? 0));
      if (leaked.length === 0) break;
      await turns();
    }
    expect(leaked).toEqual([]);
  });
});

describe('a producer process', () => {
  it('exits on its own after an awaited sweep(), with the sweep done (its worker holds the process only while it sweeps)', () => {
    const index = pathToFileURL(`${ROOT}dist/src/index.js`).href;
    const script = `
      import { createSpool } from ${JSON.stringify(index)};
      const spool = createSpool({ path: process.argv[2], config: { retention: { doneMs: 0 } } });
      await spool.send('q', 1);
      const swept = await spool.sweep();
      process.stdout.write(JSON.stringify(swept));
    `;
    // A module file, as an app is: under -e the old fault did not show.
    const file = join(spools.dir, 'producer.mjs');
    writeFileSync(file, script);
    const run = spawnSync(process.execPath, [file, spools.path], { encoding: 'utf8', timeout: 20_000 });
    // Before, the sweep's worker kept the process alive until killed (a 'message' listener refs its port).
    expect(run.signal).toBeNull();
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ deleted: 0 });
  });
});
