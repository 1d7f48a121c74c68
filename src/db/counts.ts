/**
 * Row counts per queue and state, kept without a trigger or an index on `messages`: the repository
 * records a delta for every row it inserts, moves or deletes, and the deltas of a transaction are
 * written to `queue_counts` just before it commits (one upsert per queue and state touched, not
 * one per row). Savepoints that roll back take their deltas with them, so the table always agrees
 * with `SELECT queue, state, count(*) FROM messages GROUP BY 1, 2` (a test and the crash checker
 * compare the two).
 */
import type Database from 'better-sqlite3';
import type { MessageState } from '../../machines/message.machine.js';
import { onTransaction } from './transaction.js';

/** The pending deltas of the current transaction on one connection. */
export interface CountDeltas {
  /** Records `delta` rows of `queue` in `state`. */
  add(queue: string, state: MessageState, delta: number): void;
  /** The delta recorded so far for one queue and state. */
  pending(queue: string, state: MessageState): number;
}

/** Attaches count deltas to a connection. */
export function attachCountDeltas(sqlite: Database.Database): CountDeltas {
  const upsert = sqlite.prepare(
    'INSERT INTO queue_counts (queue, state, n) VALUES (?, ?, ?) ON CONFLICT (queue, state) DO UPDATE SET n = n + excluded.n',
  );
  // queue → state → delta. Nested maps, so a queue name never has to be joined into a key.
  let deltas = new Map<string, Map<MessageState, number>>();
  let size = 0;

  onTransaction(sqlite, {
    beforeCommit() {
      if (size === 0) return;
      for (const [queue, states] of deltas) for (const [state, n] of states) if (n !== 0) upsert.run(queue, state, n);
      deltas = new Map();
      size = 0;
    },
    rolledBack() {
      deltas = new Map();
      size = 0;
    },
    mark() {
      if (size === 0) return null;
      const copy = new Map<string, Map<MessageState, number>>();
      for (const [queue, states] of deltas) copy.set(queue, new Map(states));
      return { deltas: copy, size };
    },
    restore(mark) {
      const saved = mark as { deltas: Map<string, Map<MessageState, number>>; size: number } | null;
      deltas = saved?.deltas ?? new Map();
      size = saved?.size ?? 0;
    },
  });

  return {
    add(queue, state, delta) {
      let states = deltas.get(queue);
      if (!states) deltas.set(queue, (states = new Map()));
      states.set(state, (states.get(state) ?? 0) + delta);
      size += 1;
    },
    pending: (queue, state) => deltas.get(queue)?.get(state) ?? 0,
  };
}
