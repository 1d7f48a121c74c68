/**
 * Boot recovery (the seed's "on start-up Activating/Processing go back to Pending"): every in-flight
 * row returns to pending, or to dead with CRASH_LOOP once it has been in flight at `maxCrashes`
 * crashes, in ONE transaction before the first claim. A row that a graceful stop abandoned
 * (`owner = 'stopped'`) is recovered without counting a crash. Unreadable rows go to dead.
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

/** Runs boot recovery; throws a raw SQLITE_BUSY (retried by the caller) having changed nothing. */
export function recover(deps: SupervisorDeps, claimer: Claimer, announce: Announcer): { pending: number; dead: number } {
  const { repo, clock, events, settings } = deps;
  const now = clock.now();
  const announced: { row: MessageRow; to: MessageState; attempt: number; error: StoredError | null }[] = [];
  runTransaction(deps.sqlite, () => {
    for (;;) {
      const rows = repo.inflight(500);
      if (rows.length === 0) break;
      for (const row of rows) {
        let state: MessageMachineState;
        try {
          state = rowState(row);
        } catch (error) {
          claimer.corrupt(row, error, now, null);
          announced.push({ row, to: 'dead', attempt: row.attempt, error: { code: 'CORRUPT_ROW', message: (error as Error).message } });
          continue;
        }
        const { maxCrashes } = policyFor(settings.get(), row.queue);
        const crashed = row.owner !== ABANDONED;
        const next = machine.step(state, { type: 'RECOVER', at: now, maxCrashes, crashed });
        const to = next.value;
        // The timeline and the failed-attempt counts say why the attempt ended without an outcome.
        const code = to === 'dead' ? 'CRASH_LOOP' : crashed ? 'CRASHED' : 'STOPPED';
        repo.write(transitionRow(row, { state: row.state, token: row.leaseToken }, next, { token: null, owner: null }, now, { code }));
        announced.push({ row, to, attempt: next.context.attempt, error: next.context.lastError?.code === 'CRASH_LOOP' && to === 'dead' ? next.context.lastError : null });
        crashPoint('recovery.midway');
      }
    }
  });
  let dead = 0;
  for (const a of announced) {
    if (a.to === 'dead') dead += 1;
    if (a.error) announce.error(a.row.id, a.row.queue, a.error, now);
    announce.state(a.row.id, a.row.queue, a.row.state, a.to, a.attempt, now);
  }
  const result = { pending: announced.length - dead, dead };
  // Emitted on every boot, zeros included, so an app can tell "nothing to recover" apart.
  events.emit({ type: 'spool.recovered', ...result, at: now });
  return result;
}
