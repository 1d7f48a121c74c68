/**
 * Boot recovery (the seed's "on start-up Activating/Processing go back to Pending"): every in-flight
 * row returns to pending, or to dead with CRASH_LOOP once it has been in flight at `maxCrashes`
 * crashes, in ONE transaction before the first claim. A row that a graceful stop abandoned
 * (`owner = 'stopped'`) is recovered without counting a crash. Unreadable rows go to dead.
 *
 * A row whose abandoned handler still runs in this process (a stop gave up on it, and start()
 * came before it returned) is left in flight: recovering it would run the message twice at once,
 * and its group's next message beside it. It is recovered when that handler returns, or once
 * its `timeoutMs` deadline has passed (`recoverAbandoned`, from the supervisor).
 */
import type { MessageState, StoredError } from '../../machines/message.machine.js';
import { compiledMessageMachine as machine, type MessageMachineState } from '../../machines/compiled.js';
import { crashPoint } from '../crash-points.js';
import { ABANDONED, type MessageRow } from '../db/repository.js';
import { runTransaction } from '../db/transaction.js';
import { policyFor } from '../settings/schema.js';
import type { Claimer } from './claim.js';
import { rowState, transitionRow } from './message-codec.js';
import type { Announcer, SupervisorDeps } from './types.js';

/** A recovered row's change, announced after its commit. */
interface Recovered {
  row: MessageRow;
  to: MessageState;
  attempt: number;
  error: StoredError | null;
}

/**
 * Returns one in-flight row to pending (or dead), inside the caller's transaction; a crash is
 * counted unless a graceful stop marked the row (or `crashed` says otherwise).
 */
function recoverRow(deps: SupervisorDeps, claimer: Claimer, row: MessageRow, now: number, crashed = row.owner !== ABANDONED): Recovered | undefined {
  let state: MessageMachineState;
  try {
    state = rowState(row);
  } catch (error) {
    return claimer.corrupt(row, error, now, null) ? { row, to: 'dead', attempt: row.attempt, error: { code: 'CORRUPT_ROW', message: (error as Error).message } } : undefined;
  }
  const { maxCrashes } = policyFor(deps.settings.get(), row.queue);
  const next = machine.step(state, { type: 'RECOVER', at: now, maxCrashes, crashed });
  const to = next.value;
  // The timeline and the failed-attempt counts say why the attempt ended without an outcome.
  const code = to === 'dead' ? 'CRASH_LOOP' : crashed ? 'CRASHED' : 'STOPPED';
  if (!deps.repo.write(transitionRow(row, { state: row.state, token: row.leaseToken }, next, { token: null, owner: null }, now, { code }))) return undefined;
  return { row, to, attempt: next.context.attempt, error: next.context.lastError?.code === 'CRASH_LOOP' && to === 'dead' ? next.context.lastError : null };
}

function announceAll(announce: Announcer, recovered: readonly Recovered[], now: number): void {
  for (const a of recovered) {
    if (a.error) announce.error(a.row.id, a.row.queue, a.error, now);
    announce.state(a.row.id, a.row.queue, a.row.state, a.to, a.attempt, now);
  }
}

/**
 * Runs boot recovery, leaving the rows in `running` (seq → lease token of a handler this process
 * still runs); throws a raw SQLITE_BUSY (retried by the caller) having changed nothing.
 */
export function recover(deps: SupervisorDeps, claimer: Claimer, announce: Announcer, running: ReadonlyMap<number, string> = new Map()): { pending: number; dead: number } {
  const { repo, clock, events } = deps;
  const now = clock.now();
  const recovered: Recovered[] = [];
  runTransaction(deps.sqlite, () => {
    for (;;) {
      // The rows left in flight come back every time: ask for as many more.
      const all = repo.inflight(500 + running.size);
      const rows = all.filter((row) => running.get(row.seq) !== row.leaseToken);
      for (const row of all) if (row.owner === ABANDONED && running.get(row.seq) === row.leaseToken) repo.unmarkAbandoned(row.seq, row.leaseToken);
      if (rows.length === 0) break;
      for (const row of rows) {
        const done = recoverRow(deps, claimer, row, now);
        if (done) recovered.push(done);
        crashPoint('recovery.midway');
      }
    }
  });
  announceAll(announce, recovered, now);
  const dead = recovered.filter((a) => a.to === 'dead').length;
  const result = { pending: recovered.length - dead, dead };
  // Emitted on every boot, zeros included, so an app can tell "nothing to recover" apart.
  events.emit({ type: 'spool.recovered', ...result, at: now });
  return result;
}

/**
 * The abandoned handler of row `seq` (lease `token`) returned while this process runs the spool:
 * its row, still in flight as the stop left it, is recovered as boot recovery would have.
 * Queued on the group commit; `done` runs after the commit with the queue of a row that went
 * back to pending (to claim it), if one did.
 */
export function recoverAbandoned(deps: SupervisorDeps, claimer: Claimer, announce: Announcer, seq: number, token: string, done: (queue: string | undefined) => void): void {
  let recovered: Recovered | undefined;
  deps.committer.enqueue({
    kind: 'transition',
    run: () => {
      // Its token says it is still the attempt this process abandoned (a pull lease has another).
      const row = deps.repo.bySeq(seq);
      recovered = row && row.state !== 'pending' && row.leaseToken === token ? recoverRow(deps, claimer, row, deps.clock.now(), false) : undefined;
    },
    committed: () => {
      if (recovered) announceAll(announce, [recovered], deps.clock.now());
      done(recovered?.to === 'pending' ? recovered.row.queue : undefined);
    },
  });
}
