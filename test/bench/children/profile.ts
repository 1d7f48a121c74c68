/**
 * Child entry for --cpu-prof: one workload of one system, profiled over its measured section only.
 * Run with tsx, not bundled, so the profile names each source file.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { childMain, type ChildResult, type ChildSpec } from '../child.js';
import { systemFor } from '../systems/index.js';
import { runOne } from '../workloads.js';

async function profile(spec: Extract<ChildSpec, { mode: 'profile' }>): Promise<ChildResult> {
  const session = new Session();
  session.connect();
  let file = '';
  const metrics = await runOne({
    workload: spec.workload,
    system: systemFor(spec.workload, spec.system, spec.redisPort),
    durability: spec.durability,
    n: spec.n,
    batch: spec.batch,
    ...(spec.base ? { base: spec.base } : {}),
    ...(spec.template ? { template: spec.template, depth: spec.depth!, claimDrain: spec.claimDrain! } : {}),
    hooks: {
      async begin() {
        await session.post('Profiler.enable');
        await session.post('Profiler.setSamplingInterval', { interval: spec.intervalUs });
        await session.post('Profiler.start');
      },
      async end() {
        const { profile: cpuProfile } = await session.post('Profiler.stop');
        mkdirSync(spec.out, { recursive: true });
        file = join(spec.out, `${spec.workload}-${spec.system}-${spec.durability}-n${spec.n}.cpuprofile`);
        writeFileSync(file, JSON.stringify(cpuProfile));
      },
    },
  });
  session.disconnect();
  return { metrics, file };
}

childMain({ profile });
