/**
 * Test-only crash points at transaction boundaries. `SPOOL_CRASH_POINT=claim.afterCommit:3` kills
 * the process (SIGKILL, no cleanup) on the 3rd hit of that point. Unset, `crashPoint` is a no-op.
 */

/** Every named crash point. */
export type CrashPoint =
  | 'enqueue.beforeCommit'
  | 'enqueue.afterCommit'
  | 'batch.midInsert'
  | 'claim.afterCommit'
  | 'handler.started'
  | 'complete.beforeCommit'
  | 'complete.afterCommit'
  | 'retry.scheduled'
  | 'dead.afterCommit'
  | 'recovery.midway'
  | 'schedule.beforeCommit'
  | 'schedule.afterCommit';

const spec = process.env.SPOOL_CRASH_POINT;

function parse(value: string): { name: string; hit: number } {
  const [name, hit] = value.split(':');
  return { name: name ?? '', hit: Number(hit ?? 1) || 1 };
}

function armed(target: { name: string; hit: number }): (name: CrashPoint) => void {
  let hits = 0;
  return (name) => {
    if (name !== target.name) return;
    hits += 1;
    if (hits === target.hit) process.kill(process.pid, 'SIGKILL');
  };
}

/** Marks a crash point; kills the process when SPOOL_CRASH_POINT selects this hit. */
export const crashPoint: (name: CrashPoint) => void = spec ? armed(parse(spec)) : () => {};
