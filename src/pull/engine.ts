/**
 * The pull engine of one spool handle: leases through the group committer (so concurrent waits
 * and ends share commits, as sends and settles do), waits in the wait room when there is nothing
 * to take, and settles leased messages by receipt. Both shapes build on it: Q4M owner-mode
 * consumers (consumer.ts) and SQS receive/delete/visibility (sqs.ts). It needs no owner lock:
 * any process can pull.
 */
import type { MessageMachineState } from '../../machines/compiled.js';
import type { MessageEvent } from '../../machines/message.machine.js';
import type { Clock } from '../clock.js';
import type { LeasedRow, MessageRow } from '../db/repository.js';
import type { EventBus } from '../events.js';
import type { QueueDirectory } from '../queues/directory.js';
import { SpoolError } from '../errors.js';
import { toStorageError } from '../runtime/committer.js';
import type { ControlGate } from '../runtime/control.js';
import { createLeaser, type LeaseRequest, type Leased, type Leaser } from '../runtime/lease.js';
import { announce, type Announcement } from '../runtime/transitions.js';
import type { SettingsRuntime } from '../settings/store.js';
import type { Storage } from '../storage.js';
import { createWaitRoom, type WaitRoom } from './wait-room.js';

/**
 * A lease as its holder names it: the message, the receipt's token, and (from the consumer that
 * leased it) the row's queue, group and attempt, so ending it needs no read of the row.
 */
export interface LeaseRef {
  id: string;
  seq: number | undefined;
  token: string;
  known?: LeasedRow;
  /** The queue the caller names (an SQS call): a receipt of another queue's message is refused. */
  queue?: string;
}

/** INVALID_RECEIPT for a receipt used on a queue its message is not in. */
function otherQueue(queue: string): SpoolError {
  return new SpoolError('INVALID_RECEIPT', `The receipt is not of a message in queue "${queue}"`, { details: { queue } });
}

/** What the engine needs from its spool. */
export interface PullEngineDeps {
  storage: Storage;
  settings: SettingsRuntime;
  directory: QueueDirectory;
  bus: EventBus;
  clock: Clock;
  random: () => number;
  /** A commit of this engine returned a message of `queue` to pending (the push runtime may claim it). */
  returned(queue: string): void;
  /** This engine handed out a lease that runs out at `at` (the owner's expiry timer). */
  leased(at: number): void;
  /** The owner's load control, while this handle runs the spool (other processes have none). */
  gate(): ControlGate | undefined;
  /**
   * Re-reads the settings when this handle does not poll (settings/idle-refresh.ts): a handle that
   * only pulls must see queue attributes changed elsewhere (a visibility timeout, a redrive policy).
   */
  refreshSettings(): void;
}

/** Work that runs in a lease attempt's commit, before it. */
type First = (l: Leaser, now: number, log: Announcement[]) => void;

/** What one lease attempt got, and when to look again if nothing. */
interface Attempt {
  leased: Leased[];
  nextAt: number | null;
}

/** A lease attempt waiting for its commit, with when it was made and how to answer it. */
interface Joiner {
  req: LeaseRequest;
  first: First | undefined;
  /** The clock when the caller made the attempt: its lease counts from no earlier. */
  now: number;
  resolve(result: Attempt): void;
  reject(error: unknown): void;
}

/** Creates the pull engine (nothing opened until first use). */
export function createPullEngine(deps: PullEngineDeps) {
  const { storage, settings, directory, bus, clock } = deps;
  let leaser: Leaser | undefined;
  let room: WaitRoom | undefined;
  let closed = false;
  /** Lease attempts that will share the next commit's pass, by their queue list. */
  const joining = new Map<string, Joiner[]>();
  function waitRoom(): WaitRoom {
    const { db, repo } = storage.open();
    room ??= createWaitRoom({
      dbPath: db.path, clock, pollIntervalMs: () => settings.get().processor.pollIntervalMs, arrivals: (queue) => repo.arrivals(queue),
      poll: (queue) => {
        const [arrivals, delayedAt, leaseAt] = repo.pollState(queue);
        const now = clock.now();
        return { arrivals, due: (delayedAt !== null && delayedAt <= now) || (leaseAt !== null && leaseAt <= now) };
      },
    });
    return room;
  }

  /** Runs `work` inside the next group commit; resolves with its result after the commit is announced. */
  function run<T>(work: (l: Leaser, now: number, log: Announcement[]) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      try {
        const { repo, committer } = storage.open();
        leaser ??= createLeaser({ repo, settings, directory, random: deps.random });
        const l = leaser;
        let log: Announcement[] = [];
        const now = clock.now();
        committer.enqueue({
          // A pull call reports a full disk at once, as a send does, rather than wait for room.
          kind: 'send',
          run: () => {
            log = [];
            return work(l, now, log);
          },
          committed: (result) => {
            announce(bus, log, now);
            // Messages that came back to pending (an abort, an expired lease): waiters may take them.
            for (const a of log) {
              if (a.kind !== 'state' || a.to !== 'pending') continue;
              ready(a.queue);
              deps.returned(a.queue);
            }
            resolve(result);
          },
          failed: reject,
        });
      } catch (error) {
        reject(toStorageError(error));
      }
    });
  }

  /** A commit of this handle made a message of `queue` claimable. */
  function ready(queue: string) {
    room?.ready(queue);
  }

  /** The load control let a held-back queue run again: every waiter looks once more. */
  function released() {
    room?.wakeAll();
  }

  /**
   * Leases up to `req.max` messages, waiting until at least one is there, the clock reaches
   * `until` (epoch ms, taken when the caller called; null: forever) or `signal` aborts. Resolves
   * [] on a timeout or an abort; a lease that lands after its caller aborted is given back at
   * once, so a caller that left holds nothing. `first` runs in the first attempt's commit, before
   * it (an owner-mode consumer ends what it owns there: one commit per message, not two), and
   * `firstCommitted` is called once that commit landed.
   */
  async function lease(
    req: LeaseRequest,
    options: { until: number | null; signal?: AbortSignal; first?: First; firstCommitted?: () => void },
  ): Promise<Leased[]> {
    const deadline = options.until;
    const queues = new Set(req.queues);
    let first = options.first;
    for (;;) {
      if (closed) throw new SpoolError('CLOSED', 'The spool closed while a consumer waited');
      if (options.signal?.aborted) {
        // Aborted before the first attempt: what `first` does still happens, on its own.
        if (first) {
          await run(first);
          options.firstCommitted?.();
        }
        return [];
      }
      deps.refreshSettings();
      // Read before the attempt: a message made ready while it commits skips the wait below.
      const seen = waitRoom().generation;
      waitRoom().prime(queues);
      const before = first;
      first = undefined;
      const { leased, nextAt } = await attempt(req, before);
      if (before) options.firstCommitted?.();
      if (options.signal?.aborted && leased.length) {
        await giveBack(leased);
        return [];
      }
      if (leased.length) {
        deps.leased(Math.min(...leased.map((m) => m.leaseExpiresAt)));
        return leased;
      }
      if (deadline !== null && clock.now() >= deadline) return [];
      const until = deadline === null ? nextAt : nextAt === null ? deadline : Math.min(deadline, nextAt);
      await waitRoom().wait(queues, until, options.signal, seen);
    }
  }

  /**
   * One lease attempt in the next group commit. Attempts on the same queues (and no `where`)
   * queued before that commit runs join one pass: each runs its `first`, then the due times are
   * read once and each candidate query serves them all, in the order they came. A loop of 8
   * consumers so costs one candidate query per commit, not 8, as the push claim does. A pass that
   * fails is run again as one commit item per attempt, so that one attempt's failure (its end of
   * what it owned, say) fails only that attempt, as when each ran alone.
   */
  function attempt(req: LeaseRequest, first: First | undefined): Promise<Attempt> {
    return new Promise<Attempt>((resolve, reject) => {
      const member: Joiner = { req, first, now: clock.now(), resolve, reject };
      if (req.where) return alone(member);
      const key = req.queues.join('\n');
      const members = joining.get(key);
      if (members) return void members.push(member);
      const group = [member];
      joining.set(key, group);
      // Once the pass runs (or fails without running), later attempts start the next one.
      const close = () => {
        if (joining.get(key) === group) joining.delete(key);
      };
      pass(group, close).then(
        (results) => group.forEach((m, i) => m.resolve(results[i]!)),
        (error) => {
          close();
          if (group.length === 1) member.reject(error);
          else group.forEach(alone);
        },
      );
    });
  }

  /** An attempt in a pass of its own: with a `where`, or again after its joined pass failed. */
  function alone(member: Joiner): void {
    pass([member]).then(([result]) => member.resolve(result!), member.reject);
  }

  /** Runs the attempts of one pass in one commit item: their `first`s, then one lease for all. */
  function pass(group: Joiner[], running?: () => void): Promise<Attempt[]> {
    return run((l, queued, log) => {
      running?.();
      // The latest caller's clock: a lease never starts before its caller asked for it.
      const now = group.reduce((at, m) => Math.max(at, m.now), queued);
      for (const m of group) m.first?.(l, now, log);
      const gate = deps.gate();
      const taken = l.lease(group.map((m) => (gate ? { ...m.req, gate } : m.req)), now, log);
      const nextAt = taken.some((leased) => leased.length === 0) ? nextEventAt(group[0]!.req.queues) : null;
      return taken.map((leased) => ({ leased, nextAt: leased.length ? null : nextAt }));
    });
  }

  /** The nearest time a message of `queues` may become claimable by itself (a delay, a lease). */
  function nextEventAt(queues: readonly string[]): number | null {
    const { repo } = storage.open();
    let at = leaser?.nextLeaseExpiry() ?? null;
    for (const queue of queues) {
      const delayed = repo.nextDelayedIn(queue);
      if (delayed !== null && (at === null || delayed < at)) at = delayed;
    }
    return at;
  }

  /** Returns leased messages to pending at once, without charging anything. */
  function giveBack(leased: Leased[]): Promise<unknown> {
    return Promise.all(leased.map((m) => settle({ id: m.row.id, seq: m.row.seq, token: m.token }, () => ({ type: 'DEFER', at: clock.now(), retryAt: clock.now() }))));
  }

  /**
   * Applies `event` to the message a lease (id, seq when known, token) names, if it still holds it.
   * Resolves with the row as it was, or undefined for a stale receipt (nothing changed, and
   * `message.stale` says so).
   */
  function settle(
    lease: LeaseRef,
    event: (row: MessageRow, state: MessageMachineState) => MessageEvent | 'complete',
  ): Promise<MessageRow | undefined> {
    /** A lease this settle made end sooner than it would have (a shorter visibility, an extend). */
    let shortened: { queue: string; at: number } | undefined;
    const watched: typeof event = (row, state) => {
      const chosen = event(row, state);
      if (chosen !== 'complete' && chosen.type === 'EXTEND' && (row.leaseExpiresAt === null || chosen.leaseExpiresAt < row.leaseExpiresAt)) {
        shortened = { queue: row.queue, at: chosen.leaseExpiresAt };
      }
      return chosen;
    };
    return run((l, now, log) => {
      shortened = undefined;
      return settleIn(l, lease, watched, now, log);
    }).then((row) => {
      // The owner's expiry timer and this handle's waiters armed for the old deadline: the message
      // comes back at the new one, without waiting for a receive, a wait's timeout or the poll.
      if (row && shortened) {
        deps.leased(shortened.at);
        ready(shortened.queue);
      }
      return row;
    });
  }

  /** Inside a commit: settle()'s work. */
  function settleIn(
    l: Leaser,
    lease: LeaseRef,
    event: (row: MessageRow, state: MessageMachineState) => MessageEvent | 'complete',
    now: number,
    log: Announcement[],
  ): MessageRow | undefined {
    const seq = lease.seq ?? storage.open().repo.byId(lease.id)?.seq;
    const { queue } = lease;
    const checked: typeof event = queue === undefined ? event : (row, state) => {
      if (row.queue !== queue) throw otherQueue(queue);
      return event(row, state);
    };
    const row = seq === undefined ? undefined : l.settleLease(seq, lease.token, checked, now, log);
    if (!row && seq !== undefined) stale(seq, log);
    return row;
  }

  /** Completes the message a lease names (an end, an SQS delete), if the lease still holds it. */
  function complete(lease: LeaseRef): Promise<unknown> {
    return run((l, now, log) => completeIn(l, lease, now, log));
  }

  /** Inside a commit: complete()'s work. */
  function completeIn(l: Leaser, lease: LeaseRef, now: number, log: Announcement[]): unknown {
    const seq = lease.seq ?? storage.open().repo.byId(lease.id)?.seq;
    let known = lease.known;
    if (seq !== undefined && known === undefined && lease.queue !== undefined) {
      // The read that completing would make anyway, made first to check the queue.
      known = storage.open().repo.leasedRow(seq, lease.token);
      if (known && known.queue !== lease.queue) throw otherQueue(lease.queue);
    }
    const done = seq === undefined ? undefined : l.completeLease(seq, lease.token, now, log, known);
    if (!done && seq !== undefined) stale(seq, log);
    return done;
  }

  function stale(seq: number, log: Announcement[]) {
    const current = storage.open().repo.bySeq(seq);
    if (current) log.push({ kind: 'stale', id: current.id, queue: current.queue, attempt: current.attempt });
  }

  /** Returns every pull lease that ran out to pending (the owner's timer and poll). */
  function expireLeases(): Promise<number> {
    return run((l, now, log) => l.expireDue(now, log));
  }

  return {
    lease,
    refreshSettings: deps.refreshSettings,
    settle,
    complete,
    completeIn,
    ready,
    released,
    expireLeases,
    /** Ends every wait (the spool is closing). */
    close() {
      closed = true;
      room?.close();
    },
  };
}

/** The engine's type. */
export type PullEngine = ReturnType<typeof createPullEngine>;
