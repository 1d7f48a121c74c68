/**
 * Rolling-window arithmetic for the load controls (control.ts), pure: no clock, no timers, no
 * settings. Times are plain numbers (control.ts feeds the monotonic clock, in ms).
 *
 * A window of `perMs` at time `t` is the half-open interval (t − perMs, t]: a start at `s` counts
 * until `s + perMs`, and stops counting at that instant. Every interval [a, a + perMs) then holds at
 * most as many starts as the window allowed, which is what "at most max per rolling perMs" means.
 */

/** A first-in, first-out queue of numbers on a growable ring buffer (no allocation per push). */
export class NumberQueue {
  private buf: Float64Array;
  private head = 0;
  private size = 0;

  /** An empty queue with room for `capacity` numbers before it first grows. */
  constructor(capacity = 16) {
    this.buf = new Float64Array(Math.max(4, capacity));
  }

  /** How many numbers it holds. */
  get length(): number {
    return this.size;
  }

  /** The `i`-th oldest number (0: the oldest); undefined out of range. */
  at(i: number): number | undefined {
    if (i < 0 || i >= this.size) return undefined;
    return this.buf[(this.head + i) % this.buf.length];
  }

  /** Appends `value`, `count` times. */
  push(value: number, count = 1): void {
    if (this.size + count > this.buf.length) this.grow(this.size + count);
    for (let i = 0; i < count; i++) this.buf[(this.head + this.size++) % this.buf.length] = value;
  }

  /** Removes the oldest number. */
  shift(): number | undefined {
    if (this.size === 0) return undefined;
    const value = this.buf[this.head]!;
    this.head = (this.head + 1) % this.buf.length;
    this.size -= 1;
    return value;
  }

  /** Empties the queue. */
  clear(): void {
    this.head = 0;
    this.size = 0;
  }

  private grow(atLeast: number) {
    let capacity = this.buf.length * 2;
    while (capacity < atLeast) capacity *= 2;
    const next = new Float64Array(capacity);
    for (let i = 0; i < this.size; i++) next[i] = this.buf[(this.head + i) % this.buf.length]!;
    this.buf = next;
    this.head = 0;
  }
}

/**
 * Handler starts of one queue, for a rate limit of `max` starts per rolling `perMs`. It keeps every
 * start inside the window and, outside it, the newest ones up to `max` in all: whether one more may
 * start depends only on the max-th newest start, so a window made longer (or a limit set again)
 * still sees every start it must count. Its memory is bounded by `max` and the window's starts.
 */
export class StartWindow {
  private readonly starts = new NumberQueue();

  /** Records `count` starts at `at` (times must not go back; the monotonic clock never does). */
  record(at: number, count: number): void {
    if (count > 0) this.starts.push(at, count);
  }

  /** Starts inside the window ending at `now`. */
  count(now: number, perMs: number): number {
    return this.starts.length - this.firstInside(now - perMs);
  }

  /** How many more may start at `now` under `max` per `perMs` (never negative). */
  allowance(now: number, max: number, perMs: number): number {
    this.prune(now, perMs, max);
    return Math.max(0, max - this.count(now, perMs));
  }

  /**
   * The earliest time at which one more may start: `now` when one may start now; otherwise the
   * moment enough of the oldest starts leave the window (when a lowered `max` left more than `max`
   * inside it, several must leave).
   */
  nextAllowedAt(now: number, max: number, perMs: number): number {
    this.prune(now, perMs, max);
    const first = this.firstInside(now - perMs);
    const n = this.starts.length - first;
    if (n < max) return now;
    return this.starts.at(first + n - max)! + perMs;
  }

  /** Forgets the starts outside the window ending at `now` beyond the newest `keep` in all. */
  prune(now: number, perMs: number, keep: number): void {
    const edge = now - perMs;
    while (this.starts.length > keep && this.starts.at(0)! <= edge) this.starts.shift();
  }

  /** Forgets every start (the queue lost its limit). */
  clear(): void {
    this.starts.clear();
  }

  /** The index of the oldest start after `edge` (the length when none is): they are in time order. */
  private firstInside(edge: number): number {
    let lo = 0;
    let hi = this.starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.starts.at(mid)! <= edge) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/**
 * Busy time of one queue: the sum, over its handlers, of the time each held its executor slot,
 * counted inside a rolling window. Two handlers running 100 ms each spend 200 ms.
 */
export class BusyWindow {
  /** Finished intervals, in the order they ended: [start, end] pairs, flattened. */
  private readonly done = new NumberQueue();
  /** Sum of end − start over `done`. */
  private doneSum = 0;
  /** The longest finished interval still kept: only intervals this long can straddle the edge. */
  private longest = 0;
  /** Running handlers: key → start. */
  private readonly running = new Map<unknown, number>();

  /** A handler (any key, e.g. its in-flight entry) began at `at`. */
  begin(key: unknown, at: number): void {
    this.running.set(key, at);
  }

  /**
   * The handler of `key` ended at `at` (a key never begun is ignored). Intervals that left the
   * window (now − perMs, now] are dropped here, so memory stays bounded even when nobody asks for
   * the busy time.
   */
  end(key: unknown, at: number, perMs: number): void {
    const start = this.running.get(key);
    if (start === undefined) return;
    this.running.delete(key);
    const end = Math.max(start, at);
    this.prune(at - perMs);
    this.done.push(start);
    this.done.push(end);
    this.doneSum += end - start;
    this.longest = Math.max(this.longest, end - start);
  }

  /** Handlers running now. */
  get active(): number {
    return this.running.size;
  }

  /** Busy time inside the window (now − perMs, now], running handlers counted up to `now`. */
  busy(now: number, perMs: number): number {
    const edge = now - perMs;
    this.prune(edge);
    let sum = this.doneSum;
    // Intervals that began before the edge count only their part inside the window. Ends are in
    // order, starts are not; but only an interval at least as long as the distance from the edge
    // to its end can straddle it, so the scan stops at the first end beyond edge + longest.
    for (let i = 0; i < this.done.length; i += 2) {
      const end = this.done.at(i + 1)!;
      if (end > edge + this.longest) break;
      const start = this.done.at(i)!;
      if (start < edge) sum -= edge - start;
    }
    for (const start of this.running.values()) sum += Math.min(now - start, perMs);
    return sum;
  }

  /**
   * The earliest whole ms at or after `now` at which the busy time falls below `busyMs`, if the
   * running handlers keep running; null when they alone would keep it at or above `busyMs` for as
   * long as they run (a settle then asks again). Busy time is piecewise linear in time: finished
   * intervals slide out of the window at slope −1 between start + perMs and end + perMs, running ones
   * grow at slope +1 until start + perMs, so each segment between breakpoints is solved exactly.
   */
  nextBelow(now: number, busyMs: number, perMs: number): number | null {
    let value = this.busy(now, perMs);
    if (value < busyMs) return now;
    // Slope changes: −1 from each finished interval's start + perMs (if later than now), back to
    // 0 at its end + perMs; +1 from now for each running one until its start + perMs.
    const changes = new Map<number, number>();
    const add = (at: number, delta: number) => changes.set(at, (changes.get(at) ?? 0) + delta);
    let slope = 0;
    for (let i = 0; i < this.done.length; i += 2) {
      const start = this.done.at(i)!;
      const end = this.done.at(i + 1)!;
      const outFrom = start + perMs;
      const outTo = end + perMs;
      if (outTo <= now) continue;
      if (outFrom <= now) slope -= 1;
      else add(outFrom, -1);
      add(outTo, +1);
    }
    for (const start of this.running.values()) {
      const full = start + perMs;
      if (full <= now) continue;
      slope += 1;
      add(full, -1);
    }
    const points = [...changes.keys()].sort((a, b) => a - b);
    let at = now;
    for (let i = 0; i <= points.length; i++) {
      const until = points[i] ?? Infinity;
      if (slope < 0) {
        // value + slope · (t − at) < busyMs  ⇔  t > at + (value − busyMs) / −slope
        const t = at + Math.floor((value - busyMs) / -slope) + 1;
        if (t <= until) return t;
      }
      if (until === Infinity) return null;
      value += slope * (until - at);
      at = until;
      if (value < busyMs) return at;
      slope += changes.get(until)!;
    }
    return null;
  }

  /** Forgets finished intervals (running handlers stay tracked until they end). */
  clearFinished(): void {
    this.done.clear();
    this.doneSum = 0;
    this.longest = 0;
  }

  private prune(edge: number) {
    while (this.done.length > 0 && this.done.at(1)! <= edge) {
      const start = this.done.shift()!;
      const end = this.done.shift()!;
      this.doneSum -= end - start;
    }
    if (this.done.length === 0) this.longest = 0;
  }
}
