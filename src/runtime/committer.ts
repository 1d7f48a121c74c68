/**
 * Group commit. Every write of a tick (sends, transitions of many actors, a claim) is queued
 * here and committed in one IMMEDIATE transaction on the next turn of the event loop; only then
 * are the callers resolved and the changes announced. A failing item does not fail the others:
 * the batch is retried with a savepoint per item. A busy database is retried asynchronously
 * (never a long blocking busy wait), and a full disk fails sends fast while transitions wait.
 *
 * Failure episodes are reported once, not once per try: a disk that stays full would otherwise
 * flood `events$` with the same error ten times a second.
 *
 * A commit resolves its callers only while the database file is still the one at its path
 * (`intact()`): after `rm spool.db`, commits land in an unlinked file that vanishes at close, so
 * they are refused with STORAGE_LOST, and so is every later write.
 */
import type Database from 'better-sqlite3';
import { messageOf, SpoolError } from '../errors.js';
import type { EventBus } from '../events.js';
import type { Clock } from '../clock.js';
import type { Durability } from '../db/client.js';
import { isBusy, isFull, runSavepoint, runTransaction } from '../db/transaction.js';
import type { CommitGuard } from './write-lock.js';

/** One unit of work inside a group transaction. */
export interface Op<T = unknown> {
  /** 'send' ops fail fast on a full disk; 'transition' ops are retried until they land. */
  kind: 'send' | 'transition';
  /** Runs inside the transaction. Must be synchronous. */
  run(): T;
  /** After the commit, with run()'s result. */
  committed?(result: T): void;
  /** When the op will not land. */
  failed?(error: SpoolError): void;
  /**
   * False for the runtime's own writes that no caller awaits (a push handler's settle). Under
   * `durability: 'full'`, a group of only such writes (and the claim) commits without an fsync
   * of its own: the next fsynced commit or checkpoint makes it durable (see the README's
   * Durability). Every other op is durable when it resolves.
   */
  durable?: boolean;
}

/** Work the owner adds to every group transaction (the supervisor's claim). */
export interface GroupHook<T, P = unknown> {
  /** Before the transaction: what run() would do, or null for nothing (no savepoint then). */
  plan(): P | null;
  /** Inside the transaction, after the queued ops, in its own savepoint. */
  run(plan: P): T;
  committed(result: T): void;
  /** The hook's savepoint rolled back (the ops still committed); it is retried after a pause. */
  failed(error: SpoolError): void;
}

/** How long a busy batch keeps retrying before its sends reject with STORAGE_BUSY, ms. */
export const BUSY_GIVE_UP_MS = 30_000;
/** The pause between retries of a busy write, ms. */
export const RETRY_DELAY_MS = 25;
/** The pause before a failed claim or a failed (e.g. full) group runs again, ms. */
export const FAILURE_RETRY_MS = 100;

/**
 * Commits run from microtasks per event-loop turn, at most (see schedule()). One: the first write
 * of a turn commits at once (an idle send waits for nothing), and writes from the turn's other
 * I/O callbacks (eight HTTP requests read in one poll phase, say) share one commit at the turn's
 * end. Measured with 8 keep-alive SQS clients: 8 allowed gave 1,040 Receive+DeleteBatch pairs/s,
 * 1 gave 1,410; the library's drains and latency did not move, pull-c8 rose about 20%.
 */
export const MAX_CHAINED = 1;
const MICROTASK = Symbol('microtask');

/** Upper bounds (ms) of the group-commit duration histogram buckets. */
export const COMMIT_BUCKETS_MS = [0.25, 0.5, 1, 2, 5, 10, 25, 50, 100, 250, 1000] as const;

/** What the committer counted since it was made (telemetry). */
export interface CommitTelemetry {
  /** Group transactions that committed, and their summed duration in ms. */
  count: number;
  sumMs: number;
  /** Per COMMIT_BUCKETS_MS bound, the commits that took at most that long (not cumulative). */
  buckets: number[];
  /** Writes that met a locked database (each try counts). */
  storageBusy: number;
}

/** The group committer. */
export interface Committer {
  /** Commit count, durations and busy tries since it was made. */
  readonly telemetry: CommitTelemetry;
  enqueue<T>(op: Op<T>): void;
  /** Asks for a group transaction even with no queued ops (to run the hook). */
  wake(): void;
  setHook(hook: GroupHook<unknown> | undefined): void;
  /**
   * Resolves once everything queued so far has landed or failed, or after `timeoutMs` (what is
   * still queued then stays queued: `close()` fails it).
   */
  drain(timeoutMs?: number): Promise<void>;
  /** Checks that the database file is still ours; on loss, refuses every write from now on. */
  verify(): boolean;
  /** True once the database file was found deleted or replaced. */
  readonly lost: boolean;
  /** Called after every group commit that landed (maintenance counts them). */
  onCommitted(listener: (() => void) | undefined): void;
  /**
   * Holds commits (writes queue up, nothing is lost) until the returned release is called: the
   * write lock's wait while the maintenance worker holds it (write-lock.ts).
   */
  hold(): () => void;
  /** Taken around each group commit's transaction (the write lock shared with the maintenance worker). */
  guard(guard: CommitGuard | undefined): void;
  /** Cancels timers; queued sends are rejected with CLOSED. */
  close(): void;
}

/**
 * Creates a committer over one connection; `intact` tells whether the file is still ours, and
 * `durability` is the connection's (under 'full', groups that nobody awaits skip their fsync).
 */
export function createCommitter(sqlite: Database.Database, events: EventBus, clock: Clock, intact: () => boolean = () => true, durability: Durability = 'normal'): Committer {
  const syncSwitch = durability === 'full' ? relaxableSync(sqlite) : undefined;
  let queue: Op[] = [];
  let hook: GroupHook<unknown> | undefined;
  let wanted = false;
  let scheduled: NodeJS.Immediate | NodeJS.Timeout | typeof MICROTASK | undefined;
  let scheduledKind: 'immediate' | 'timeout' | 'microtask' = 'immediate';
  /** Commits run from microtasks since the event loop last turned. */
  let chained = 0;
  const endChain = () => {
    chained = 0;
  };
  let hookRetry: NodeJS.Timeout | undefined;
  let busySince: number | undefined;
  let busyRetries = 0;
  let closed = false;
  let lost = false;
  /** Open failure episodes: reported when they begin, cleared by the next success. */
  let hookFailing = false;
  let groupFailing = false;
  let idleWaiters: (() => void)[] = [];
  let commitListener: (() => void) | undefined;
  let held = false;
  let guardNow: CommitGuard | undefined;
  /** The guard this flush entered, left when its transaction ends. */
  let entered: CommitGuard | undefined;
  const leaveGuard = () => {
    const g = entered;
    entered = undefined;
    g?.leave();
  };
  /** True while a flush (and the callbacks of its commit) runs. */
  let flushing = false;
  const telemetry: CommitTelemetry = { count: 0, sumMs: 0, buckets: COMMIT_BUCKETS_MS.map(() => 0), storageBusy: 0 };

  /**
   * When to commit. A write from the caller's own code (a send, not a write made by the
   * callbacks of another commit) commits in a microtask, at the end of the caller's current job:
   * an idle send needs no event-loop turn, and every write queued before that microtask runs
   * still joins the group. Writes made while a commit's callbacks run (a settle after a handler
   * returned at once, a send from a handler) wait for the next turn of the event loop
   * (setImmediate): code awaiting the first commit resumes before the next one announces
   * anything. At most MAX_CHAINED microtask commits run per turn: later writes of the same turn
   * group at its end, and the host's I/O and timers are never starved.
   */
  function schedule(delayMs = 0) {
    if (scheduled || closed || held) return;
    if (delayMs > 0) {
      scheduledKind = 'timeout';
      scheduled = setTimeout(flush, delayMs);
    } else if (!flushing && chained < MAX_CHAINED) {
      scheduledKind = 'microtask';
      scheduled = MICROTASK;
      if (chained++ === 0) setImmediate(endChain);
      queueMicrotask(flush);
    } else {
      scheduledKind = 'immediate';
      scheduled = setImmediate(flush);
    }
  }

  function settleIdle() {
    if (queue.length === 0 && !scheduled) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  function flush() {
    scheduled = undefined;
    // A flush scheduled before a hold began waits for the release too: a commit that lands while
    // the worker's checkpoint pass runs would leave the WAL longer than the pass saw, and the
    // pass's "all copied" would then not let the next commit restart the WAL. The release
    // schedules it again.
    if (closed || held) return;
    // A guard that says no took a hold, whose release schedules this flush again.
    if (guardNow && !guardNow.enter()) return;
    entered = guardNow;
    flushing = true;
    try {
      flushNow();
    } finally {
      flushing = false;
      leaveGuard();
    }
  }

  function flushNow() {
    const ops = queue;
    queue = [];
    if (lost) {
      wanted = false;
      failLost(ops);
      return settleIdle();
    }
    const hookNow = hook;
    let plan: unknown = null;
    if (wanted && hookNow !== undefined) {
      try {
        plan = hookNow.plan();
      } catch (error) {
        plan = null;
        hookFailed(hookNow, error);
      }
    }
    const runHook = plan !== null;
    wanted = false;
    if (ops.length === 0 && !runHook) return settleIdle();
    let results: unknown[];
    let hookResult: unknown;
    let hookError: unknown;
    const started = performance.now();
    const relaxed = syncSwitch !== undefined && ops.every(awaitedByNone);
    if (relaxed) syncSwitch.relax();
    try {
      results = runTransaction(sqlite, () => {
        const out = ops.map((op) => op.run());
        if (runHook) {
          // A failing claim must neither sink the group's other writes nor be retried in a
          // tight loop: its own savepoint rolls back alone, and it runs again after a pause.
          try {
            hookResult = runSavepoint(sqlite, () => hookNow!.run(plan));
          } catch (error) {
            // SQLite rolled the whole transaction back (SQLITE_FULL, IOERR, NOMEM), or the lock
            // is held: the group fails as a whole and takes the failure path below.
            if (!sqlite.inTransaction || isBusy(error)) throw error;
            hookError = error;
          }
        }
        return out;
      });
    } catch (error) {
      if (relaxed) syncSwitch.restore();
      // Under the guard still: handleFailure's item-by-item pass is a transaction too.
      handleFailure(ops, error, runHook);
      leaveGuard();
      return settleIdle();
    }
    leaveGuard();
    if (relaxed) syncSwitch.restore();
    if (!verify()) {
      // Committed into a file that is no longer at its path: as good as never stored.
      failLost(ops);
      return settleIdle();
    }
    const tookMs = performance.now() - started;
    telemetry.count += 1;
    telemetry.sumMs += tookMs;
    let bucket = 0;
    while (bucket < COMMIT_BUCKETS_MS.length && tookMs > COMMIT_BUCKETS_MS[bucket]!) bucket++;
    // Slower than the last bound: counted in count and sumMs only (the +Inf bucket).
    if (bucket < telemetry.buckets.length) telemetry.buckets[bucket]! += 1;
    busySince = undefined;
    busyRetries = 0;
    groupFailing = false;
    commitListener?.();
    for (let i = 0; i < ops.length; i++) afterCommit(() => ops[i]!.committed?.(results[i]));
    if (runHook && hookError === undefined) {
      hookFailing = false;
      afterCommit(() => hookNow!.committed(hookResult));
    } else if (runHook) {
      hookFailed(hookNow!, hookError);
    }
    settleIdle();
  }

  /** One throwing callback must not keep the others of the same commit from running. */
  function afterCommit(callback: () => void) {
    try {
      callback();
    } catch (error) {
      events.emit({ type: 'error', code: 'STORAGE_ERROR', message: `A callback after commit threw: ${messageOf(error)}`, at: clock.now() });
    }
  }

  /** The claim failed: tell its owner once per episode, and run it again after a pause. */
  function hookFailed(failing: GroupHook<unknown>, error: unknown) {
    if (!hookFailing) {
      hookFailing = true;
      afterCommit(() => failing.failed(toStorageError(error)));
    }
    retryHookLater();
  }

  function retryHookLater() {
    hookRetry ??= setTimeout(() => {
      hookRetry = undefined;
      wanted = true;
      schedule();
    }, FAILURE_RETRY_MS);
  }

  function handleFailure(ops: Op[], error: unknown, hookWanted: boolean) {
    if (isBusy(error)) {
      busySince ??= clock.now();
      busyRetries += 1;
      telemetry.storageBusy += 1;
      events.emit({ type: 'storage.busy', retries: busyRetries, at: clock.now() });
      const giveUp = clock.now() - busySince > BUSY_GIVE_UP_MS;
      const keep = giveUp ? rejectSends(ops, new SpoolError('STORAGE_BUSY', `The database stayed locked by another connection for over ${BUSY_GIVE_UP_MS} ms`, { cause: error })) : ops;
      queue = keep.concat(queue);
      wanted ||= hookWanted;
      return schedule(RETRY_DELAY_MS);
    }
    busySince = undefined;
    if (hookWanted && hook) {
      // The claim went down with the group (a full disk rolls everything back). It runs again
      // after a pause, never at once, so a disk that stays full cannot spin it at 100% CPU.
      // Alone in the group, the failure was its own: report it (once per episode).
      if (ops.length === 0) hookFailed(hook, error);
      else retryHookLater();
    }
    if (ops.length === 0) return;
    // Isolate the failing items: one savepoint each, so one bad item cannot sink the group.
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    try {
      runTransaction(sqlite, () => {
        for (const op of ops) {
          try {
            outcomes.push({ ok: true, value: runSavepoint(sqlite, () => op.run()) });
          } catch (itemError) {
            // SQLite may roll back the whole transaction (SQLITE_FULL, IOERR, NOMEM): then later
            // items would each run and commit on their own, outside it. Stop; nothing stands.
            if (!sqlite.inTransaction) throw itemError;
            outcomes.push({ ok: false, error: itemError });
          }
        }
      });
    } catch (groupError) {
      // Even the isolated pass could not commit (e.g. the disk is full): nothing landed.
      return failAll(ops, groupError);
    }
    if (!verify()) return failLost(ops);
    const retry: Op[] = [];
    let waitsOn: unknown;
    ops.forEach((op, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) afterCommit(() => op.committed?.(outcome.value));
      else if (op.kind === 'transition' && (isFull(outcome.error) || isBusy(outcome.error))) {
        retry.push(op);
        waitsOn ??= outcome.error;
      } else op.failed?.(toStorageError(outcome.error));
    });
    if (retry.length) {
      // SQLite may fail just the statement (a table with triggers journals each statement) and
      // keep the transaction: the settles then wait here, and are reported as in failAll.
      reportWaiting(toStorageError(waitsOn));
      queue = retry.concat(queue);
      schedule(FAILURE_RETRY_MS);
    }
  }

  function failAll(ops: Op[], error: unknown) {
    const spoolError = toStorageError(error);
    const retry = rejectSends(ops, spoolError);
    if (retry.length > 0) reportWaiting(spoolError);
    queue = retry.concat(queue);
    if (queue.length) schedule(FAILURE_RETRY_MS);
  }

  /** Rejected sends tell their callers; settles that must wait are reported, once per episode. */
  function reportWaiting(error: SpoolError) {
    if (groupFailing) return;
    groupFailing = true;
    events.emit({ type: 'error', code: error.code, message: `${error.message}; writes are retried until they land`, at: clock.now() });
  }

  function rejectSends(ops: Op[], error: SpoolError): Op[] {
    const keep: Op[] = [];
    for (const op of ops) {
      if (op.kind === 'send') op.failed?.(error);
      else keep.push(op);
    }
    return keep;
  }

  function lostError(): SpoolError {
    return new SpoolError('STORAGE_LOST', 'The database file was deleted or replaced while the spool ran; nothing more is stored, and nothing written since was kept');
  }

  function failLost(ops: Op[]) {
    const error = lostError();
    for (const op of ops) afterCommit(() => op.failed?.(error));
  }

  function verify(): boolean {
    if (lost) return false;
    let ok: boolean;
    try {
      ok = intact();
    } catch {
      ok = false;
    }
    if (ok) return true;
    lost = true;
    events.emit({ type: 'error', code: 'STORAGE_LOST', message: `${lostError().message}. Sends are refused and nothing is claimed; close the spool and restore the file`, at: clock.now() });
    return false;
  }

  return {
    telemetry,
    enqueue(op) {
      if (closed) {
        op.failed?.(new SpoolError('CLOSED', 'The spool is closed'));
        return;
      }
      if (lost) {
        op.failed?.(lostError());
        return;
      }
      queue.push(op as Op);
      schedule();
    },
    wake() {
      if (lost) return;
      wanted = true;
      schedule();
    },
    setHook(next) {
      hook = next;
    },
    drain(timeoutMs = Infinity) {
      if (queue.length === 0 && !scheduled) return Promise.resolve();
      return new Promise((resolve) => {
        let timer: NodeJS.Timeout | undefined;
        const done = () => {
          clearTimeout(timer);
          idleWaiters = idleWaiters.filter((w) => w !== done);
          resolve();
        };
        idleWaiters.push(done);
        if (Number.isFinite(timeoutMs)) timer = setTimeout(done, timeoutMs);
      });
    },
    verify,
    get lost() {
      return lost;
    },
    onCommitted(listener) {
      commitListener = listener;
    },
    guard(g) {
      guardNow = g;
    },
    hold() {
      held = true;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        held = false;
        if (queue.length || wanted) schedule();
      };
    },
    close() {
      closed = true;
      clearTimeout(hookRetry);
      hookRetry = undefined;
      if (scheduled) {
        // Clear by kind: clearImmediate() on a Timeout corrupts Node's immediate queue, and no
        // setImmediate callback in the process runs again. A queued microtask finds `closed`.
        if (scheduledKind === 'timeout') clearTimeout(scheduled as NodeJS.Timeout);
        else if (scheduledKind === 'immediate') clearImmediate(scheduled as NodeJS.Immediate);
        scheduled = undefined;
      }
      const error = new SpoolError('CLOSED', 'The spool closed before this write landed');
      for (const op of queue) op.failed?.(error);
      queue = [];
      settleIdle();
    },
  };
}


/** Maps a storage failure to a coded SpoolError. */
export function toStorageError(error: unknown): SpoolError {
  if (error instanceof SpoolError) return error;
  if (isFull(error)) return new SpoolError('STORAGE_FULL', 'The database is full (disk or max_page_count); nothing was stored', { cause: error });
  if (isBusy(error)) return new SpoolError('STORAGE_BUSY', 'The database is locked by another connection', { cause: error });
  return new SpoolError('STORAGE_ERROR', `Storage failed: ${messageOf(error)}`, { cause: error });
}

const awaitedByNone = (op: Op): boolean => op.durable === false;

/**
 * Switches a 'full' connection to `synchronous=NORMAL` for one commit and back. Between
 * transactions only (SQLite refuses it inside one), so every other transaction of the connection
 * (admin operations, the storage's own) keeps FULL. In WAL mode a later fsync of the log covers
 * every frame before it, so once a later commit is fsynced, every relaxed one before it is too.
 * SQLite applies this pragma while it prepares it, so each switch is an exec, not a prepared run.
 */
function relaxableSync(sqlite: Database.Database): { relax(): void; restore(): void } {
  return {
    relax: () => sqlite.exec('PRAGMA synchronous = NORMAL'),
    restore: () => sqlite.exec('PRAGMA synchronous = FULL'),
  };
}
