/**
 * Badly behaved handlers. One that hangs past its timeoutMs costs only that attempt. One that kills
 * its process (process.exit, an uncaught throw from a timer) is redelivered after each restart with
 * the delivery counted, and goes to dead with CRASH_LOOP after maxCrashes; every other message
 * completes. The crashing handlers run in real child processes.
 */
import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createSpool, SpoolError, type SpoolEvent } from '../../src/index.js';
import { bundledEntry, NODE_CHILD_FLAGS } from '../helpers/bundle.js';
import { nextEvent, reached } from '../helpers/events.js';
import { createGate } from '../helpers/gate.js';
import { useTempSpools } from '../helpers/spool.js';
import { tempDb } from '../helpers/temp-db.js';
import { createTestClock } from '../helpers/test-clock.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CRASHER = fileURLToPath(new URL('./fixtures/faults-crasher.ts', import.meta.url));

const spools = useTempSpools();

describe('a handler that hangs past its timeout', () => {
  it('costs only that attempt: the retry completes, other messages run meanwhile, the late return is stale', async () => {
    const clock = createTestClock();
    const spool = spools.open({
      clock,
      config: { queues: { slow: { timeoutMs: 1000, maxAttempts: 3, backoff: { type: 'fixed', delayMs: 0, maxDelayMs: 0, jitter: false } } } },
    });
    const hang = createGate();
    const calls: { attempt: number; signal: AbortSignal }[] = [];
    spool.register('slow', async (message, { signal }) => {
      calls.push({ attempt: message.attempt, signal });
      // Ignores its signal on purpose: a handler that never gives up.
      if (message.attempt === 1) await hang.wait();
    });
    const fastDone: string[] = [];
    spool.register('fast', (message) => {
      fastDone.push(message.id);
    });
    await spool.start();
    const seen: SpoolEvent[] = [];
    const sub = spool.events$.subscribe((e) => seen.push(e));

    const processing = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.queue === 'slow' && e.to === 'processing');
    const slowId = await spool.send('slow', { n: 1 });
    await processing;

    // While the first attempt hangs, the rest of the spool keeps working.
    const fastAll = reached(spool.events$, 'done', 10, 'fast');
    const fast = await Promise.all(Array.from({ length: 10 }, (_, n) => spool.send('fast', { n })));
    await fastAll;
    expect(fastDone.sort()).toEqual([...fast].sort());
    expect((await spool.get(slowId))?.state).toBe('processing');

    const timedOut = nextEvent(spool.events$, (e) => e.type === 'message.error' && e.id === slowId);
    const done = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.id === slowId && e.to === 'done');
    clock.advance(1000);
    expect(await timedOut).toMatchObject({ code: 'TIMEOUT' });
    await done;
    expect(calls.map((c) => c.attempt)).toEqual([1, 2]);
    expect(calls[0]!.signal.aborted).toBe(true);
    expect(calls[0]!.signal.reason).toBeInstanceOf(SpoolError);
    expect((calls[0]!.signal.reason as SpoolError).code).toBe('TIMEOUT');
    expect(calls[1]!.signal.aborted).toBe(false);

    // The hung attempt returns at last: it no longer holds the message, so nothing changes.
    const stale = nextEvent(spool.events$, (e) => e.type === 'message.stale' && e.id === slowId);
    hang.open();
    expect(await stale).toMatchObject({ attempt: 1 });
    sub.unsubscribe();
    const slowStates = seen.filter((e) => e.type === 'message.state' && e.id === slowId).map((e) => (e as { to: string }).to);
    // One timed-out attempt, one retry: nothing else.
    expect(slowStates).toEqual(['pending', 'activating', 'processing', 'pending', 'activating', 'processing', 'done']);
    expect(await spool.get(slowId)).toBeUndefined();
  });
});

interface Line {
  kind: 'event' | 'handled' | 'crash' | 'started' | 'idle' | 'check-failed';
  [key: string]: unknown;
}

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  lines: Line[];
  stderr: string;
}

/** Runs the crasher to its end (crash or clean exit), keeping every stdout line. */
function runCrasher(path: string, mode: 'exit' | 'throw'): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...NODE_CHILD_FLAGS, bundledEntry(CRASHER), path, mode], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`The crasher did not finish within 20 s; stdout:\n${out}\nstderr:\n${stderr}`));
    }, 20_000);
    // 'close' (not 'exit'): every line written before the crash has been read by then.
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const lines = out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Line);
      resolve({ code, signal, lines, stderr });
    });
  });
}

const handledBy = (run: Run, id: string) => run.lines.filter((l) => l.kind === 'handled' && l.id === id);
const stateEvents = (run: Run, id: string) =>
  run.lines.filter((l) => l.kind === 'event' && l.type === 'message.state' && l.id === id).map((l) => `${String(l.from)}>${String(l.to)}`);

// The two modes run side by side (each on its own file): most of their time is child start-up.
describe.concurrent.each(['exit', 'throw'] as const)('a handler that kills its process (%s)', (mode) => {
  it('is redelivered after each restart with the delivery counted, then dead with CRASH_LOOP; the rest completes', async ({ expect }) => {
    const file = tempDb();
    // A producer stores the work; the crasher (a separate process) owns the spool.
    const producer = createSpool({ path: file.path });
    const boom = await producer.send('boom', { kind: mode });
    const sticky = await producer.send('ok', { sticky: true });
    const ok = await Promise.all(Array.from({ length: 5 }, (_, n) => producer.send('ok', { n })));
    await producer.close();
    const inspector = new Database(file.path, { readonly: true });
    const row = (id: string) =>
      inspector.prepare('SELECT state, attempt, deliveries, last_error AS lastError FROM messages WHERE id = ?').get(id) as
        | { state: string; attempt: number; deliveries: number; lastError: string | null }
        | undefined;

    try {
      const runs: Run[] = [];
      const afterRun: ReturnType<typeof row>[] = [];
      for (let i = 0; i < 6 && runs.at(-1)?.code !== 0; i++) {
        runs.push(await runCrasher(file.path, mode));
        afterRun.push(row(boom));
      }

      // maxCrashes = 3: three runs die inside the boom handler, the fourth boots it to dead.
      expect(runs.map((r) => r.code), runs.at(-1)?.stderr).toEqual([1, 1, 1, 0]);
      expect(runs.slice(0, 3).every((r) => r.lines.some((l) => l.kind === 'crash' && l.id === boom))).toBe(true);
      if (mode === 'throw') expect(runs[0]!.stderr).toContain('an uncaught exception from a timer');
      expect(runs.flatMap((r) => r.lines).filter((l) => l.kind === 'check-failed')).toEqual([]);

      // Each crash leaves the row in flight on disk, with the delivery counted.
      expect(afterRun.slice(0, 3).map((r) => [r?.state, r?.deliveries, r?.attempt])).toEqual([
        ['processing', 1, 1],
        ['processing', 2, 1],
        ['processing', 3, 1],
      ]);
      // Each restart returns it to pending and hands it out again, the delivery counted.
      for (const n of [1, 2]) {
        expect(stateEvents(runs[n]!, boom).slice(0, 1)).toEqual(['processing>pending']);
        expect(handledBy(runs[n]!, boom)).toMatchObject([{ deliveries: n + 1, attempt: 1 }]);
        expect(runs[n]!.lines.find((l) => l.type === 'spool.recovered')).toMatchObject({ dead: 0 });
      }
      // The fourth boot finds its third crash and sends it to dead without running it again.
      const last = runs[3]!;
      expect(handledBy(last, boom)).toEqual([]);
      expect(stateEvents(last, boom)).toEqual(['processing>dead']);
      expect(last.lines.find((l) => l.type === 'message.error' && l.id === boom)).toMatchObject({ code: 'CRASH_LOOP' });
      expect(last.lines.find((l) => l.type === 'spool.recovered')).toMatchObject({ pending: 0, dead: 1 });
      expect(row(boom)).toMatchObject({ state: 'dead', deliveries: 3 });
      expect(JSON.parse(row(boom)!.lastError!)).toMatchObject({ code: 'CRASH_LOOP' });

      // Every other message completed once; the one in flight at the first crash was recovered and ran again.
      for (const id of ok) {
        expect(runs.flatMap((r) => handledBy(r, id))).toHaveLength(1);
        expect(runs.flatMap((r) => stateEvents(r, id))).toContain('processing>done');
        expect(row(id)).toBeUndefined();
      }
      expect(runs.flatMap((r) => handledBy(r, sticky)).map((l) => l.deliveries)).toEqual([1, 2]);
      expect(stateEvents(runs[1]!, sticky)).toEqual(['processing>pending', 'pending>activating', 'activating>processing', 'processing>done']);
      expect(row(sticky)).toBeUndefined();
      expect(inspector.pragma('integrity_check', { simple: true })).toBe('ok');
      expect((inspector.prepare('SELECT COUNT(*) AS n FROM messages').get() as { n: number }).n).toBe(1);
    } finally {
      inspector.close();
      file.cleanup();
    }
  });
});
