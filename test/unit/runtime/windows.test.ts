/** The rolling-window arithmetic of rate limits and time budgets, on plain numbers. */
import { describe, expect, it } from 'vitest';
import { BusyWindow, NumberQueue, StartWindow } from '../../../src/runtime/windows.js';

describe('NumberQueue', () => {
  it('keeps first-in first-out order across growth and wrap-around', () => {
    const q = new NumberQueue(4);
    const model: number[] = [];
    for (let i = 0; i < 200; i++) {
      q.push(i, (i % 3) + 1);
      for (let k = 0; k < (i % 3) + 1; k++) model.push(i);
      if (i % 2 === 0) expect(q.shift()).toBe(model.shift());
    }
    expect(q.length).toBe(model.length);
    expect(Array.from({ length: q.length }, (_, i) => q.at(i))).toEqual(model);
    expect(q.at(-1)).toBeUndefined();
    expect(q.at(q.length)).toBeUndefined();
    q.clear();
    expect(q.length).toBe(0);
    expect(q.shift()).toBeUndefined();
  });
});

describe('StartWindow', () => {
  it('counts starts in (now − perMs, now]: a start stops counting exactly perMs later', () => {
    const w = new StartWindow();
    w.record(100, 2);
    w.record(150, 1);
    expect(w.count(150, 1000)).toBe(3);
    expect(w.count(1099, 1000)).toBe(3);
    expect(w.count(1100, 1000)).toBe(1);
    expect(w.count(1150, 1000)).toBe(0);
  });

  it('allows max − starts in the window, never less than 0', () => {
    const w = new StartWindow();
    expect(w.allowance(0, 3, 1000)).toBe(3);
    w.record(0, 2);
    expect(w.allowance(10, 3, 1000)).toBe(1);
    w.record(10, 1);
    expect(w.allowance(10, 3, 1000)).toBe(0);
    // A lowered max leaves more inside than it allows: still 0, not negative.
    expect(w.allowance(10, 1, 1000)).toBe(0);
  });

  it('says when the next start may go: when enough of the oldest starts leave the window', () => {
    const w = new StartWindow();
    w.record(0, 1);
    w.record(200, 1);
    w.record(500, 1);
    expect(w.nextAllowedAt(600, 4, 1000)).toBe(600);
    expect(w.nextAllowedAt(600, 3, 1000)).toBe(1000);
    // max lowered to 2 with 3 inside: two must leave for one more, so the second oldest's time + perMs.
    expect(w.nextAllowedAt(600, 2, 1000)).toBe(1200);
    expect(w.allowance(1199, 2, 1000)).toBe(0);
    expect(w.allowance(1200, 2, 1000)).toBe(1);
    // max 1: all three must leave.
    expect(w.nextAllowedAt(600, 1, 1000)).toBe(1500);
  });

  it('keeps the newest max starts past the window, so a longer window set later still counts them', () => {
    const w = new StartWindow();
    w.record(0, 3);
    w.record(100, 1);
    expect(w.allowance(1500, 3, 1000)).toBe(3);
    // 3 per 60 s now: the newest three (at 0, 0 and 100) were kept; the oldest, beyond max, was not needed.
    expect(w.allowance(1500, 3, 60_000)).toBe(0);
    expect(w.nextAllowedAt(1500, 3, 60_000)).toBe(60_000);
    expect(w.count(1500, 60_000)).toBe(3);
    // Pruned with nothing kept beyond the window (a budget alone), it holds the window's only.
    w.prune(1500, 1000, 0);
    expect(w.count(1500, 60_000)).toBe(0);
  });

  it('never lets any [t, t + perMs) hold more than max starts when every start asks first', () => {
    // A seeded stream of attempts at irregular times, each taking what the window allows.
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const w = new StartWindow();
    const starts: number[] = [];
    const max = 5;
    const perMs = 100;
    let t = 0;
    for (let i = 0; i < 2000; i++) {
      t += Math.floor(random() * 30);
      const k = Math.min(w.allowance(t, max, perMs), Math.floor(random() * 4));
      w.record(t, k);
      for (let j = 0; j < k; j++) starts.push(t);
    }
    expect(starts.length).toBeGreaterThan(500);
    let worst = 0;
    for (let i = 0, j = 0; i < starts.length; i++) {
      while (starts[j]! < starts[i]! - perMs + 1) j++;
      worst = Math.max(worst, i - j + 1);
    }
    expect(worst).toBe(max);
  });
});

describe('BusyWindow', () => {
  it('sums busy time over handlers, running ones up to now, inside the window', () => {
    const b = new BusyWindow();
    b.begin('a', 0);
    b.begin('b', 0);
    b.end('a', 100, 1000);
    b.end('b', 100, 1000);
    // Two handlers of 100 ms each spend 200 ms.
    expect(b.busy(100, 1000)).toBe(200);
    b.begin('c', 500);
    expect(b.busy(600, 1000)).toBe(300);
    expect(b.active).toBe(1);
    // At 1050 the window is (50, 1050]: a and b count 50 each, c counts 550.
    expect(b.busy(1050, 1000)).toBe(650);
    // A running handler counts at most one window.
    expect(b.busy(5000, 1000)).toBe(1000);
    b.end('c', 5000, 1000);
    expect(b.busy(5500, 1000)).toBe(500);
    expect(b.busy(6000, 1000)).toBe(0);
    // An unknown key is ignored.
    b.end('zzz', 6000, 1000);
    expect(b.busy(6000, 1000)).toBe(0);
  });

  it('drops intervals that left the window as handlers end, so memory stays bounded', () => {
    const b = new BusyWindow();
    for (let i = 0; i < 100_000; i++) {
      b.begin(i, i * 10);
      b.end(i, i * 10 + 5, 1000);
    }
    // 100 intervals of 5 ms end inside the last 1000 ms.
    expect(b.busy(999_995, 1000)).toBe(500);
    expect((b as unknown as { done: { length: number } }).done.length).toBeLessThanOrEqual(2 * 101);
  });

  it('counts a long interval that straddles the window edge by its part inside', () => {
    const b = new BusyWindow();
    b.begin('long', 0);
    b.begin('short', 890);
    b.end('short', 900, 1000);
    b.end('long', 950, 1000);
    // Ends in order: short (900) then long (950). Window (500, 1500]: long counts 450, short 10.
    expect(b.busy(1500, 1000)).toBe(460);
  });

  it('finds the first whole ms at which busy time falls below the budget', () => {
    const b = new BusyWindow();
    b.begin('a', 0);
    b.end('a', 300, 1000);
    // Budget 200 per 1000: 300 busy until t = 1000, then sliding out at 1 ms per ms: 199 at 1101.
    expect(b.nextBelow(300, 200, 1000)).toBe(1101);
    expect(b.busy(1100, 1000)).toBe(200);
    expect(b.busy(1101, 1000)).toBe(199);
    expect(b.nextBelow(1101, 200, 1000)).toBe(1101);
  });

  it('accounts for handlers still running: they keep the budget spent while they run', () => {
    const b = new BusyWindow();
    b.begin('done', 0);
    b.end('done', 150, 1000);
    b.begin('run', 100);
    // At 150: 150 + 50 = 200 ≥ 200. The runner grows until 1100; done slides out from 1000.
    expect(b.busy(150, 1000)).toBe(200);
    expect(b.nextBelow(150, 200, 1000)).toBeNull();
    // Two finished intervals sliding out outpace one runner growing: it falls below while running.
    const c = new BusyWindow();
    c.begin('x', 0);
    c.begin('y', 0);
    c.end('x', 100, 1000);
    c.end('y', 100, 1000);
    c.begin('r', 950);
    // From 1000 to 1100, x and y slide out at −2 per ms while r grows at +1: net −1 per ms.
    const at = c.nextBelow(960, 200, 1000)!;
    expect(at).toBeGreaterThan(1000);
    expect(at).toBeLessThan(1100);
    expect(c.busy(at, 1000)).toBeLessThan(200);
    expect(c.busy(at - 1, 1000)).toBeGreaterThanOrEqual(200);
  });

  it('agrees with a brute-force scan on random histories', () => {
    let seed = 11;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let round = 0; round < 200; round++) {
      const b = new BusyWindow();
      const perMs = 100 + Math.floor(random() * 900);
      const busyMs = 1 + Math.floor(random() * perMs);
      let t = 0;
      const running: number[] = [];
      for (let i = 0; i < 20; i++) {
        t += Math.floor(random() * 80);
        if (running.length > 0 && random() < 0.5) b.end(running.shift()!, t, perMs);
        else {
          b.begin(i, t);
          running.push(i);
        }
      }
      const found = b.nextBelow(t, busyMs, perMs);
      // Brute force: step 1 ms at a time, as if the running handlers keep running.
      let expected: number | null = null;
      for (let u = t; u <= t + 3 * perMs; u++) {
        if (b.busy(u, perMs) < busyMs) {
          expected = u;
          break;
        }
      }
      expect(found, `round ${round}`).toBe(expected);
    }
  });
});
