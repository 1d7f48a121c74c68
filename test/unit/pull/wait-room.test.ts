/**
 * The wait room (pull/wait-room.ts): local readiness wakes only that queue's waiters; another
 * process's commit (a write to the -wal file) wakes only the waiters of queues whose arrivals
 * counter moved; the safety poll wakes everyone once per interval; close ends every wait.
 */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createWaitRoom } from '../../../src/pull/wait-room.js';
import { createTestClock } from '../../helpers/test-clock.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'spool-room-'));
  dirs.push(dir);
  const dbPath = join(dir, 'spool.db');
  writeFileSync(dbPath, '');
  writeFileSync(`${dbPath}-wal`, '');
  const clock = createTestClock();
  const arrivals = new Map<string, number>();
  const reads: string[] = [];
  const room = createWaitRoom({
    dbPath,
    clock,
    pollIntervalMs: () => 1000,
    arrivals: (queue) => {
      reads.push(queue);
      return arrivals.get(queue) ?? 0;
    },
  });
  /** Stands for another process's commit: the -wal file changes. */
  const commitElsewhere = () => appendFileSync(`${dbPath}-wal`, 'x');
  return { room, clock, arrivals, reads, commitElsewhere };
}

/** A wait whose settlement the test can observe without awaiting it. */
function track(promise: Promise<void>) {
  const state = { woken: false };
  void promise.then(() => (state.woken = true));
  return state;
}

describe('wait room', () => {
  it('wakes only the waiters of a queue made ready by this handle', async () => {
    const { room } = setup();
    const a = track(room.wait(new Set(['a']), null));
    const b = room.wait(new Set(['b', 'c']), null);
    room.ready('c');
    await b;
    expect(a.woken).toBe(false);
    room.close();
  });

  it("wakes on another process's commit only the waiters whose queue's arrivals moved", async () => {
    const { room, arrivals, commitElsewhere } = setup();
    // The first commit seen teaches the room the counters (a first read counts as moved).
    await Promise.all([room.wait(new Set(['quiet']), null), room.wait(new Set(['busy']), null), Promise.resolve(commitElsewhere())]);
    const quiet = track(room.wait(new Set(['quiet']), null));
    const busy = room.wait(new Set(['busy']), null);
    arrivals.set('busy', 1);
    commitElsewhere();
    await busy;
    // Both were checked in the same pass: the quiet queue's waiter sleeps on.
    expect(quiet.woken).toBe(false);
    arrivals.set('quiet', 1);
    commitElsewhere();
    await expect.poll(() => quiet.woken).toBe(true);
    room.close();
  });

  it('skips the wait when anything woke since the caller looked (its generation)', async () => {
    const { room } = setup();
    const seen = room.generation;
    room.ready('other');
    await room.wait(new Set(['a']), null, undefined, seen);
    room.close();
  });

  it('wakes every waiter once per poll interval, and at its own deadline', async () => {
    const { room, clock } = setup();
    const a = track(room.wait(new Set(['a']), null));
    const b = track(room.wait(new Set(['b']), clock.now() + 300));
    clock.advance(300);
    await Promise.resolve();
    expect(b.woken).toBe(true);
    expect(a.woken).toBe(false);
    clock.advance(700);
    await Promise.resolve();
    expect(a.woken).toBe(true);
    room.close();
  });

  it('close() ends every wait and later waits resolve at once', async () => {
    const { room } = setup();
    const waiting = room.wait(new Set(['a']), null);
    room.close();
    await waiting;
    await room.wait(new Set(['a']), null);
  });
});
