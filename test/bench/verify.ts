/**
 * The Spool check, in its own untimed run (inspection and events cost time): a drain at
 * concurrency 8 where every message must have run its full XState lifecycle with a persisted
 * snapshot. Counts the message actors that ran and reached their final state, the announced
 * transitions, and reads snapshots from the database before, during and after the drain.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { InspectionEvent } from 'xstate';
import { deferred, payload, tempDir, type Durability } from './common.js';
import { openAppSpool, SPOOL_QUEUE } from './systems/spool.js';

/** What the check saw. */
export interface SpoolCheck {
  n: number;
  durability: Durability;
  /** Pending rows whose snapshot says pending, before start(). */
  pendingSnapshotsBefore: number;
  /** Message actors created (inspection `@xstate.actor`, the supervisor excluded). */
  actorsStarted: number;
  /** Message actors whose snapshot reached status done. */
  actorsDone: number;
  /** message.state events by target state. */
  transitions: Record<string, number>;
  /** In-flight rows read from the database inside the handler. */
  sampled: number;
  /** Of those, rows whose state, snapshot value, attempt, deliveries or lease token were wrong. */
  sampleMismatches: number;
  /** Rows left after the drain (done rows are deleted). */
  rowsAfter: number;
  /** Handed-out message ids that were not decimal strings (ids are the row's seq). */
  badIds: number;
  ok: boolean;
}

/** Runs the check. */
export async function verifySpool(n: number, durability: Durability, base?: string): Promise<SpoolCheck> {
  const tmp = tempDir(base);
  const path = join(tmp.dir, 'check.db');
  const actors = new Set<string>();
  const done = new Set<string>();
  const inspect = (event: InspectionEvent) => {
    if ((event.actorRef as { id?: string }).id === 'supervisor') return;
    if (event.type === '@xstate.actor') actors.add(event.actorRef.sessionId);
    else if (event.type === '@xstate.snapshot' && (event.snapshot as { status?: string }).status === 'done') done.add(event.actorRef.sessionId);
  };
  // The app setting of the timed runs (started, queue paused, events$ counted), plus inspection.
  const app = await openAppSpool({ path, durability, concurrency: 8, inspect });
  const transitions: Record<string, number> = {};
  const subscription = app.spool.events$.subscribe((e) => {
    if (e.type === 'message.state') transitions[e.to] = (transitions[e.to] ?? 0) + 1;
  });
  let reader: Database.Database | undefined;
  try {
    // A producer sending one by one to the running spool.
    for (let i = 0; i < n; i++) await app.spool.send(SPOOL_QUEUE, payload(i));
    reader = new Database(path, { readonly: true });
    const pendingSnapshotsBefore = reader
      .prepare(`SELECT count(*) FROM messages WHERE state = 'pending' AND json_extract(snapshot, '$.value') = 'pending'`)
      .pluck()
      .get() as number;
    const rowOf = reader.prepare(
      `SELECT state, json_extract(snapshot, '$.value') AS value, json_extract(snapshot, '$.context.attempt') AS attempt,
         json_extract(snapshot, '$.context.deliveries') AS deliveries, lease_token AS token FROM messages WHERE id = ?`,
    );
    const every = Math.max(1, Math.floor(n / 200));
    let handled = 0;
    let sampled = 0;
    let sampleMismatches = 0;
    const all = deferred();
    let badIds = 0;
    await app.resume(async (message) => {
      if (!/^[0-9]+$/.test(message.id)) badIds += 1;
      if (message.payload.i % every === 0) {
        // The claim committed before the handler started, so the row must already say processing.
        const row = rowOf.get(message.id) as { state: string; value: string; attempt: number; deliveries: number; token: string | null } | undefined;
        sampled += 1;
        if (row?.state !== 'processing' || row.value !== 'processing' || row.attempt !== 1 || row.deliveries !== 1 || !row.token) sampleMismatches += 1;
      }
      if (++handled === n) all.resolve();
    });
    await all.promise;
    // Every completion announced (each after its commit), then the rows are read.
    await app.untilDone(n);
    await app.spool.stop();
    const rowsAfter = reader.prepare('SELECT count(*) FROM messages').pluck().get() as number;
    const check: SpoolCheck = {
      n,
      durability,
      pendingSnapshotsBefore,
      actorsStarted: actors.size,
      actorsDone: done.size,
      transitions,
      sampled,
      sampleMismatches,
      rowsAfter,
      badIds,
      ok: false,
    };
    check.ok =
      pendingSnapshotsBefore === n &&
      check.actorsStarted === n &&
      check.actorsDone === n &&
      ['pending', 'activating', 'processing', 'done'].every((s) => transitions[s] === n) &&
      sampled > 0 &&
      sampleMismatches === 0 &&
      rowsAfter === 0 &&
      badIds === 0;
    return check;
  } finally {
    reader?.close();
    subscription.unsubscribe();
    await app.close();
    tmp.cleanup();
  }
}
