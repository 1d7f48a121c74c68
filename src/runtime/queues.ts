/**
 * Which queues the claim looks at. `known` holds every queue seen (rows, settings, handlers);
 * `hot` the ones that may have ready rows. A claim that drains a queue cools it, a send or a due
 * retry heats it, and the poll heats every known queue (rows written by other processes).
 */

/** The claim's view of queues. */
export interface QueueTracker {
  readonly hot: Set<string>;
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
  return {
    hot,
    know: (queue) => void known.add(queue),
    heat(queue) {
      known.add(queue);
      hot.add(queue);
    },
    heatAll() {
      for (const queue of known) hot.add(queue);
    },
  };
}
