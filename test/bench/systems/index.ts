/** The benchmarked systems by name (child processes rebuild them from a name). */
import { bullmqSystem } from './bullmq.js';
import { floorSystem } from './floor.js';
import { plainjobSystem } from './plainjob.js';
import { spoolSystem } from './spool.js';
import type { BenchSystem } from './types.js';
import { NO_HISTORY_CONFIG, RATE_LIMIT_CONFIG } from '../workloads.js';

/** Names accepted by --systems. */
export const SYSTEM_NAMES = ['floor', 'spool', 'plainjob', 'bullmq'] as const;
export type SystemName = (typeof SYSTEM_NAMES)[number];

/** A system by name; bullmq needs the port of a running redis-server. */
export function systemByName(name: string, redisPort?: number): BenchSystem {
  switch (name) {
    case 'floor':
      return floorSystem;
    case 'spool':
      return spoolSystem();
    case 'plainjob':
      return plainjobSystem();
    case 'plainjob-10ms':
      return plainjobSystem(10);
    case 'bullmq':
      if (redisPort === undefined) throw new Error('bullmq needs a running redis-server');
      return bullmqSystem(redisPort);
    default:
      throw new Error(`Unknown system "${name}" (expected one of ${SYSTEM_NAMES.join(', ')})`);
  }
}

/** The system a workload runs on: a workload variant may configure it (drain-c8-ratelimit's limit, drain-c8-nohistory's history off). */
export function systemFor(workload: string, name: string, redisPort?: number): BenchSystem {
  if (workload === 'drain-c8-ratelimit' && name === 'spool') return spoolSystem(RATE_LIMIT_CONFIG);
  if (workload === 'drain-c8-nohistory' && name === 'spool') return spoolSystem(NO_HISTORY_CONFIG);
  return systemByName(name, redisPort);
}
