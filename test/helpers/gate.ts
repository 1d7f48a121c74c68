/** Gates: hold handlers at a sync point, so concurrency is asserted without sleeps. */

/** A gate handlers await; `open()` lets all of them through. */
export function createGate() {
  let release!: () => void;
  const opened = new Promise<void>((resolve) => (release = resolve));
  return { wait: () => opened, open: () => release() };
}

/**
 * Counts handlers that arrived and holds them until released. `arrived(n)` resolves when n are
 * waiting (or have passed); `max` is the most that were ever inside at once.
 */
export function createBaton() {
  let inside = 0;
  let max = 0;
  let total = 0;
  let waiters: { n: number; resolve: () => void }[] = [];
  let gate = createGate();
  const notify = () => {
    waiters = waiters.filter((w) => (total >= w.n ? (w.resolve(), false) : true));
  };
  return {
    /** Call at the start of a handler; resolves when released. */
    async enter() {
      inside += 1;
      total += 1;
      max = Math.max(max, inside);
      notify();
      try {
        await gate.wait();
      } finally {
        inside -= 1;
      }
    },
    arrived(n: number) {
      return new Promise<void>((resolve) => {
        waiters.push({ n, resolve });
        notify();
      });
    },
    /** Releases everyone waiting now; later arrivals wait for the next release. */
    release() {
      const current = gate;
      gate = createGate();
      current.open();
    },
    /** Lets everyone through from now on. */
    openForever() {
      gate.open();
      const open = gate;
      gate = open;
    },
    get inside() {
      return inside;
    },
    get max() {
      return max;
    },
    get total() {
      return total;
    },
  };
}
