/**
 * Which queues the claim looks at. `known` holds every queue seen (rows, settings, handlers);
 * `hot` the ones that may have ready rows. A claim that drains a queue cools it, a send or a due
 * retry heats it, and the poll heats every known queue (rows written by other processes).
 *
 * `unclaimed` keeps, per hot queue, the candidate rows a claim over several queues read but did
 * not take, so that the next claim reads them from here instead of querying every queue again
 * (with many hot queues, one query each per claim made a drain O(queues²)). Heating a queue
 * forgets its rows (a send, a retry, a promotion, a return may add better ones), and so does
 * `heatAll` (a poll, a settings change, a claim rolled back).
 */
import type { MessageRow } from '../db/repository.js';

/** Candidate rows of one queue, in claim order, that a claim read and left. */
export interface UnclaimedRows {
  rows: MessageRow[];
  /** The query returned fewer rows than asked: these were all the queue's candidates. */
  complete: boolean;
}

/** The claim's view of queues. */
export interface QueueTracker {
  readonly hot: Set<string>;
  /** Per hot queue, the candidates a claim read and left (see above). */
  readonly unclaimed: Map<string, UnclaimedRows>;
  /** Records a queue as known. */
  know(queue: string): void;
  /** Records a queue as known and possibly holding ready rows. */
  heat(queue: string): void;
  /** Every known queue may hold ready rows (after a poll, a settings change, a failed claim). */
  heatAll(): void;
}

/** Creates an empty tracker. */
export function createQueueTracker(): QueueTracker {
  const known = new Set<string>();
  const hot = new Set<string>();
  const unclaimed = new Map<string, UnclaimedRows>();
  return {
    hot,
    unclaimed,
    know: (queue) => void known.add(queue),
    heat(queue) {
      known.add(queue);
      hot.add(queue);
      unclaimed.delete(queue);
    },
    heatAll() {
      for (const queue of known) hot.add(queue);
      unclaimed.clear();
    },
  };
}
