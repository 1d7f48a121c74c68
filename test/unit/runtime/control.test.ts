/** The load control's memory: a queue's windows hold one window of history, never every start. */
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../../src/index.js';
import { createControl } from '../../../src/runtime/control.js';
import { DEFAULT_SETTINGS, type Settings } from '../../../src/settings/schema.js';

describe('load control', () => {
  for (const [name, limit] of [
    ['a budget alone', { budget: { busyMs: 500, perMs: 1000 } }],
    ['a rate limit', { rateLimit: { max: 1000, perMs: 1000 } }],
  ] as const) {
    it(`keeps no more than one window of starts under ${name}`, () => {
      const clock = createManualClock();
      const settings: Settings = { ...DEFAULT_SETTINGS, queues: { q: limit } } as Settings;
      const control = createControl(clock, { get: () => settings }, () => {});
      const before = process.memoryUsage().arrayBuffers;
      // One start every 10 s against a 1 s window: each window holds one start at most. Kept
      // forever, 1,000,000 starts would take 8 MB (a Float64Array grown by doubling).
      let refused = 0;
      for (let i = 0; i < 1_000_000; i++) {
        if (control.gate.allowance('q') === 0) refused += 1;
        control.gate.recordStarts('q', 1);
        control.began('q', i);
        control.ended('q', i);
        clock.advance(10_000);
      }
      expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(4_000_000);
      expect(refused).toBe(0);
      expect(control.view(['q']).q).toMatchObject({ startsInWindow: 0, limitedBy: null });
      control.clearTimer();
    });
  }
});
