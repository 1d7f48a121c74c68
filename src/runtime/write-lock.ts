/**
 * A write lock shared by the owner's thread and its maintenance worker, in a SharedArrayBuffer.
 * SQLite's own write lock already keeps their transactions apart, but a writer that finds it
 * taken sleeps in SQLite's busy handler (1, 2, 5, then 10 ms) and gives up at the busy timeout:
 * two threads taking turns missed each other's gaps, and the owner's commits waited 10-45 ms
 * behind sweep steps of 2-4 ms (measured in the retention test). With this lock, the owner's
 * committer never sleeps: while the worker holds it, the owner's commits wait (a committer hold,
 * nothing blocks its event loop) and resume the moment the worker lets go (Atomics.waitAsync).
 * The worker blocks in Atomics.wait, which only it pays for.
 *
 * The worker says it wants the lock (WANT) before it waits, and the owner then lets it in before
 * its next commit: a stream of back-to-back commits would otherwise always win the race.
 * Slots of the Int32Array: LOCK (FREE, OWNER or WORKER), EPISODE (counts the worker's holds),
 * WANT (1 while the worker waits for the lock), COMMITS (counts the owner's commits, so the worker
 * can tell a quiet moment).
 */

/** Atomics.waitAsync (Node 16 and later; TypeScript's ES2023 lib lacks it). */
type WaitAsync = (slots: Int32Array, index: number, value: number, timeoutMs: number) => { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };
const waitAsync = (slots: Int32Array, index: number, value: number, timeoutMs: number) => (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync(slots, index, value, timeoutMs);

const LOCK = 0;
const EPISODE = 1;
const WANT = 2;
const COMMITS = 3;
const FREE = 0;
const OWNER = 1;
const WORKER = 2;

/** The memory both sides share: pass it to the worker in its workerData. */
export function newWriteLockBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(4 * Int32Array.BYTES_PER_ELEMENT);
}

/** What the owner's committer calls around each group commit's transaction. */
export interface CommitGuard {
  /** True: the commit may run now (with the lock); false: it waits for a hold this took, which is released when the worker lets go. */
  enter(): boolean;
  /** The commit's transaction ended: lets go of the lock if enter() took it. */
  leave(): void;
}

/** The owner's side: a CommitGuard over `hold` (the committer's), and dispose() for when the worker is gone. */
export function ownerWriteLock(buffer: SharedArrayBuffer, hold: () => () => void, maxWaitMs: number): CommitGuard & { dispose(): void } {
  const slots = new Int32Array(buffer);
  /** enter() let the current commit through; with the lock (mine) or past a stuck worker. */
  let inside = false;
  let mine = false;
  let release: (() => void) | undefined;
  /** The episode of a worker hold that outlasted maxWaitMs (a stuck worker): commits go on without the lock until it ends. */
  let overdue = -1;

  const end = () => {
    const r = release;
    release = undefined;
    r?.();
  };

  return {
    enter() {
      if (release) return false;
      for (;;) {
        if (Atomics.load(slots, EPISODE) === overdue) {
          inside = true;
          return true;
        }
        let waited: ReturnType<WaitAsync>;
        if (Atomics.load(slots, WANT) === 0) {
          if (Atomics.compareExchange(slots, LOCK, FREE, OWNER) === FREE) {
            inside = true;
            mine = true;
            return true;
          }
          waited = waitAsync(slots, LOCK, WORKER, maxWaitMs);
        } else {
          waited = waitAsync(slots, WANT, 1, maxWaitMs);
        }
        // The slot changed since it was read: look again.
        if (!waited.async) continue;
        const taken = hold();
        release = taken;
        // A pending waitAsync keeps no process alive: the timer does (a script's last send must
        // still commit), and ends the wait of a stuck worker.
        // The episode is read when the wait ends: one that began on WANT has its number only once
        // the worker holds the lock.
        const timer = setTimeout(() => {
          overdue = Atomics.load(slots, EPISODE);
          if (release === taken) end();
        }, maxWaitMs + 1);
        void waited.value.then((outcome) => {
          clearTimeout(timer);
          if (outcome === 'timed-out') overdue = Atomics.load(slots, EPISODE);
          if (release === taken) end();
        });
        return false;
      }
    },
    leave() {
      if (!inside) return;
      inside = false;
      // Counted either way: a commit past a stuck worker is still one the worker's quiet() must see.
      Atomics.add(slots, COMMITS, 1);
      if (!mine) return;
      mine = false;
      Atomics.store(slots, LOCK, FREE);
      if (Atomics.load(slots, WANT) !== 0) Atomics.notify(slots, LOCK);
    },
    dispose() {
      inside = false;
      mine = false;
      Atomics.store(slots, WANT, 0);
      Atomics.store(slots, LOCK, FREE);
      Atomics.notify(slots, WANT);
      Atomics.notify(slots, LOCK);
      end();
    },
  };
}

/** The worker's side of the lock. */
export interface WorkerWriteLock {
  /** Runs `work` holding the lock, waiting (blocking this thread) for the owner's commit in progress to end. */
  holding<T>(work: () => T): T;
  /** How many commits the owner has made (it wraps; compare, never subtract). */
  ownerCommits(): number;
}

/** The worker's side over the shared memory. */
export function workerWriteLock(buffer: SharedArrayBuffer): WorkerWriteLock {
  const slots = new Int32Array(buffer);
  return {
    holding(work) {
      Atomics.store(slots, WANT, 1);
      // The owner notifies when it lets go; the timeout only bounds a missed wake-up.
      while (Atomics.compareExchange(slots, LOCK, FREE, WORKER) !== FREE) Atomics.wait(slots, LOCK, OWNER, 5);
      Atomics.store(slots, WANT, 0);
      Atomics.notify(slots, WANT);
      Atomics.add(slots, EPISODE, 1);
      try {
        return work();
      } finally {
        Atomics.store(slots, LOCK, FREE);
        Atomics.notify(slots, LOCK);
      }
    },
    ownerCommits: () => Atomics.load(slots, COMMITS),
  };
}
