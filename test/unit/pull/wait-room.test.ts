/**
 * The wait room (pull/wait-room.ts): local readiness wakes only that queue's waiters; another
 * process's commit (a write to the -wal file) wakes only the waiters of queues whose arrivals
 * counter moved; the safety poll wakes everyone when a delay or lease came due, else only the
 * waiters whose arrivals moved (missed file events); close ends every wait.
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
  const due = { now: false };
  const room = createWaitRoom({
    dbPath,
    clock,
    pollIntervalMs: () => 1000,
    arrivals: (queue) => {
      reads.push(queue);
      return arrivals.get(queue) ?? 0;
    },
    poll: (queue) => {
      reads.push(queue);
      return { arrivals: arrivals.get(queue) ?? 0, due: due.now };
    },
  });
  /** Stands for another process's commit: the -wal file changes. */
  const commitElsewhere = () => appendFileSync(`${dbPath}-wal`, 'x');
  return { room, clock, arrivals, reads, due, commitElsewhere };
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

  it('prime() reads a queue once before the first attempt, so the first commit elsewhere wakes only if it moved', async () => {
    const { room, arrivals, reads, commitElsewhere } = setup();
    arrivals.set('q', 5);
    room.prime(['q']);
    room.prime(['q']);
    expect(reads).toEqual(['q']);
    const quiet = track(room.wait(new Set(['q']), null));
    const other = room.wait(new Set(['other']), null);
    arrivals.set('other', 1);
    commitElsewhere();
    await other;
    expect(quiet.woken).toBe(false);
    arrivals.set('q', 6);
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

  it('wakes a waiter at its own deadline; the poll wakes only waiters whose arrivals moved, or all when something came due', async () => {
    const { room, clock, arrivals, reads, due } = setup();
    const a = track(room.wait(new Set(['a']), null));
    const b = track(room.wait(new Set(['b']), clock.now() + 300));
    clock.advance(300);
    await Promise.resolve();
    expect(b.woken).toBe(true);
    expect(a.woken).toBe(false);
    // First poll: a first read of 'a' counts as moved (the room cannot know what it missed).
    clock.advance(700);
    await Promise.resolve();
    expect(a.woken).toBe(true);
    // An idle waiter: the next poll reads its counter and lets it sleep.
    const idle = track(room.wait(new Set(['a']), null));
    reads.length = 0;
    clock.advance(1000);
    await Promise.resolve();
    expect(reads).toEqual(['a']);
    expect(idle.woken).toBe(false);
    // A missed arrival wakes it at the poll.
    arrivals.set('a', 1);
    clock.advance(1000);
    await Promise.resolve();
    expect(idle.woken).toBe(true);
    // A delay or lease come due (in any queue) wakes everyone at the poll.
    const c = track(room.wait(new Set(['c']), null));
    const d = track(room.wait(new Set(['d']), null));
    clock.advance(1000); // first reads of c and d
    await Promise.resolve();
    const c2 = track(room.wait(new Set(['c']), null));
    clock.advance(1000);
    await Promise.resolve();
    expect(c2.woken).toBe(false);
    due.now = true;
    clock.advance(1000);
    await Promise.resolve();
    expect([c.woken, d.woken, c2.woken]).toEqual([true, true, true]);
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
