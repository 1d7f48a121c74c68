/**
 * Longest test files first. With two workers, a run ends when its last file does: a 60-second file
 * started last adds up to a minute. vitest orders by the durations it cached, which a fresh clone
 * (CI) has none of; this list gives the order there. The figures are one local run's durations
 * (2-core VM, 2026-12-02); files not listed follow in vitest's own order.
 */
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The slowest files, slowest first (seconds in one run). */
export const SLOW_FIRST = [
  'test/reliability/random-kills.test.ts', // 42
  'test/reliability/crash-points.test.ts', // 30
  'test/integration/cli-messages.test.ts', // 26
  'test/integration/retention.test.ts', // 26
  'test/browser/admin.test.ts', // 24
  'test/reliability/pull-kills.test.ts', // 11
  'test/integration/cli-serve.test.ts', // 8
  'test/reliability/busy.test.ts', // 6
  'test/integration/cli-schedules.test.ts', // 5
  'test/integration/cli.test.ts', // 4
];

/** vitest's sequencer, with SLOW_FIRST's files moved to the front in that order. */
export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const i = SLOW_FIRST.indexOf(relative(this.ctx.config.root, spec.moduleId).split('\\').join('/'));
      return i === -1 ? SLOW_FIRST.length : i;
    };
    // Array.prototype.sort is stable: the other files keep vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
