/**
 * Where pull consumers wait for messages, event-driven, never by busy polling:
 * - this handle's own commits that make a message claimable (a send, a retry due now, an abort,
 *   an expired lease, a requeue, a group's next head) wake the waiters of that queue at once;
 * - another process's commits are seen through a file-system watch on the database's directory
 *   (its -wal file changes at every commit), debounced by WATCH_DEBOUNCE_MS. A commit there may
 *   be of any queue, so the room first reads the arrivals counter of each waited queue (one small
 *   read for all its waiters) and wakes only the waiters of queues that got something: a waiter
 *   on a quiet queue sleeps through another queue's traffic;
 * - a waiter also wakes at the time it asked for (the nearest delayed message or lease expiry it
 *   knows of, or its own timeout), and at every `processor.pollIntervalMs` the room checks, as a
 *   safety net, for arrivals it missed and for delays and leases come due: an idle waiter on one
 *   queue costs one small read per poll interval.
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Clock, TimerHandle } from '../clock.js';
import { MAX_TIMER_MS } from '../clock.js';

/** How long a burst of file-system events is gathered into one wake-up, ms. */
export const WATCH_DEBOUNCE_MS = 2;

interface Waiter {
  queues: ReadonlySet<string>;
  wake(): void;
}

/**
 * Creates the wait room for the database at `dbPath`; `arrivals(queue)` reads that queue's arrivals
 * counter, and `poll(queue)` reads it together with whether a delayed message or a pull lease has
 * come due in any queue, in one statement.
 */
export function createWaitRoom(o: {
  dbPath: string;
  clock: Clock;
  pollIntervalMs(): number;
  arrivals(queue: string): number;
  poll(queue: string): { arrivals: number; due: boolean };
}) {
  const waiters = new Set<Waiter>();
  let watcher: FSWatcher | undefined;
  let debounce: NodeJS.Timeout | undefined;
  let poll: TimerHandle | undefined;
  let closed = false;
  /** Grows at every wake-up, so a caller that checked for messages can tell one came since. */
  let generation = 0;
  const base = basename(o.dbPath);
  /** The arrivals counter of each waited queue when the room last read it. */
  const seen = new Map<string, number>();

  function wakeAll() {
    generation += 1;
    for (const w of [...waiters]) w.wake();
  }

  /**
   * Another process committed (or the poll came): wakes the waiters of the queues whose arrivals
   * moved. At a poll, the first queue's read also asks whether a delay or a lease came due in any
   * queue (one statement), and then every waiter looks.
   */
  function committedElsewhere(atPoll = false) {
    const moved = new Set<string>();
    let due = false;
    try {
      for (const w of waiters) {
        for (const queue of w.queues) {
          if (moved.has(queue)) continue;
          let n: number;
          if (atPoll) {
            atPoll = false;
            const read = o.poll(queue);
            n = read.arrivals;
            due = read.due;
          } else n = o.arrivals(queue);
          // A queue read for the first time counts as moved: the room cannot know what it missed.
          if (seen.get(queue) !== n) moved.add(queue);
          seen.set(queue, n);
        }
      }
    } catch {
      return wakeAll(); // Unreadable now (busy, closing): let every waiter look for itself.
    }
    if (due) return wakeAll();
    if (moved.size === 0) return;
    generation += 1;
    for (const w of [...waiters]) if ([...moved].some((queue) => w.queues.has(queue))) w.wake();
  }

  function startWatching() {
    if (watcher || closed) return;
    try {
      watcher = watch(dirname(o.dbPath), { persistent: false }, (_event, file) => {
        if (file !== null && file !== base && file !== `${base}-wal`) return;
        debounce ??= setTimeout(() => {
          debounce = undefined;
          committedElsewhere();
        }, WATCH_DEBOUNCE_MS);
      });
      watcher.on('error', () => stopWatching());
    } catch {
      // No watch on this file system: the poll still wakes every waiter.
      watcher = undefined;
    }
    schedulePoll();
  }

  function schedulePoll() {
    if (poll !== undefined || closed) return;
    poll = o.clock.setTimeout(() => {
      poll = undefined;
      if (waiters.size === 0) return;
      // Only the waiters whose queues got something (a missed file event) look, or all of them
      // when a delay or a lease came due: an idle waiter on one queue costs one small read per
      // poll, not a lease attempt.
      committedElsewhere(true);
      schedulePoll();
    }, o.pollIntervalMs());
  }

  function stopWatching() {
    watcher?.close();
    watcher = undefined;
    clearTimeout(debounce);
    debounce = undefined;
    if (poll !== undefined) o.clock.clearTimeout(poll);
    poll = undefined;
  }

  return {
    /** Wakes the waiters of `queue` (a commit of this handle made a message claimable there). */
    ready(queue: string) {
      generation += 1;
      for (const w of [...waiters]) if (w.queues.has(queue)) w.wake();
    },
    /**
     * Reads the arrivals counter of each of `queues` the room has not read yet. Called before a
     * lease attempt, so that a later change of the counter means something arrived after it: the
     * first commit seen elsewhere then wakes only the waiters it concerns.
     */
    prime(queues: Iterable<string>) {
      try {
        for (const queue of queues) if (!seen.has(queue)) seen.set(queue, o.arrivals(queue));
      } catch {
        // Unreadable now: the first commit seen will count the queue as moved.
      }
    },
    /** The current generation: pass it to wait() to skip the wait if anything woke since. */
    get generation() {
      return generation;
    },
    /** Wakes every waiter. */
    wakeAll,
    /**
     * Resolves when one of `queues` may have a message, at `until` (epoch ms, wall clock: the
     * injected clock's timers), or when `signal` aborts, whichever comes first.
     */
    wait(queues: ReadonlySet<string>, until: number | null, signal?: AbortSignal, seen = generation): Promise<void> {
      if (closed || signal?.aborted || seen !== generation) return Promise.resolve();
      return new Promise<void>((resolve) => {
        let timer: TimerHandle | undefined;
        const waiter: Waiter = { queues, wake: () => done() };
        const onAbort = () => done();
        function done() {
          if (!waiters.delete(waiter)) return;
          if (timer !== undefined) o.clock.clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          if (waiters.size === 0) stopWatching();
          resolve();
        }
        waiters.add(waiter);
        signal?.addEventListener('abort', onAbort, { once: true });
        if (until !== null) timer = o.clock.setTimeout(done, Math.min(MAX_TIMER_MS, Math.max(0, until - o.clock.now())));
        startWatching();
      });
    },
    /** Ends every wait and stops watching. */
    close() {
      closed = true;
      wakeAll();
      stopWatching();
    },
  };
}

/** The wait room's type. */
export type WaitRoom = ReturnType<typeof createWaitRoom>;
