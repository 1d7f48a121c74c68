/**
 * Tick arithmetic of a schedule, pure (no clock, no storage). Times are epoch ms.
 * - `everyMs`: ticks at anchor + k × everyMs, k ≥ 1 (the first one everyMs after the anchor).
 * - `cron`: the cron's wall-clock times in `tz` (default UTC), strictly after the anchor, as
 *   croner computes them. Two DST rules on top of croner's, both stated by issue 11:
 *   - a time that a spring-forward skips does not run that day (croner alone would run a fixed
 *     time such as 02:30 at the end of the gap, 03:00; such a run does not match the pattern and
 *     is dropped here);
 *   - a time that a fall-back repeats runs once, its first occurrence. croner keeps that rule for
 *     single values only: it runs `30 1,13 * * *` twice at 01:30 when 01:00–02:00 repeats, since
 *     it treats any hour field of several values as an interval. The repeat is dropped here.
 *   Interval patterns (a wildcard or step in the second, minute or hour field) follow real time
 *   through a fall-back, as croner does: `0,30 * * * *` runs every 30 minutes of the repeated hour.
 */
import { Cron } from 'croner';

/** What the tick arithmetic needs of a schedule. */
export type TickRule = { everyMs: number } | { cron: string; tz?: string };

/** The ticks of one schedule. */
export interface Ticker {
  /** The first tick strictly after `t` (and after the anchor), or null when there is none. */
  after(t: number): number | null;
  /**
   * Up to `n` ticks in [from, to], the latest ones, in increasing order (from: inclusive lower
   * bound; ticks at or before the anchor never count).
   */
  latest(from: number, to: number, n: number): number[];
}

/** How far one search for a matching cron run may skip dropped (DST-gap) runs. */
const MAX_SKIPS = 32;

/** A croner job that only computes (paused: it never sets a timer). Throws on a bad pattern or zone. */
export function cronJob(cron: string, tz: string | undefined): Cron {
  return new Cron(cron, { paused: true, mode: '5-or-6-parts', timezone: tz ?? 'UTC' });
}

/** The ticks of `rule` for a schedule anchored at `anchor`. */
export function createTicker(rule: TickRule, anchor: number): Ticker {
  if ('everyMs' in rule) return everyTicker(rule.everyMs, anchor);
  return cronTicker(cronJob(rule.cron, rule.tz), anchor, isInterval(rule.cron) ? null : repeatOf(rule.tz ?? 'UTC'));
}

/** A wildcard or a step in the second, minute or hour field (or @hourly): the pattern follows real time. */
function isInterval(cron: string): boolean {
  const fields = cron.trim().split(/\s+/);
  if (fields.length === 1) return fields[0]!.toLowerCase() === '@hourly';
  const timeFields = fields.length === 6 ? fields.slice(0, 3) : fields.slice(0, 2);
  return timeFields.some((f) => f.includes('*') || f.includes('/'));
}

/** Shifts of the clock at a fall-back: 30 min (Lord Howe), 1 h, 2 h (historic double summer time). */
const FALL_BACK_SHIFTS_MS = [1_800_000, 3_600_000, 7_200_000];

/**
 * A test for the second occurrence of a wall-clock time that a fall-back repeats in `tz`: the same
 * wall time read one shift earlier (the offset fell by exactly that shift in between).
 */
function repeatOf(tz: string): ((t: number) => boolean) | null {
  if (tz === 'UTC') return null;
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone: tz,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  return (t) => {
    const wall = format.format(t);
    return FALL_BACK_SHIFTS_MS.some((shift) => format.format(t - shift) === wall);
  };
}

function everyTicker(everyMs: number, anchor: number): Ticker {
  /** The k of the last tick at or before t (0: none yet). */
  const indexAtOrBefore = (t: number) => (t < anchor ? 0 : Math.floor((t - anchor) / everyMs));
  return {
    after(t) {
      return anchor + (indexAtOrBefore(t) + 1) * everyMs;
    },
    latest(from, to, n) {
      const last = indexAtOrBefore(to);
      // The first k whose tick is ≥ from, and never k < 1.
      const first = Math.max(1, Math.ceil((from - anchor) / everyMs), last - n + 1);
      const out: number[] = [];
      for (let k = first; k <= last; k++) out.push(anchor + k * everyMs);
      return out;
    },
  };
}

function cronTicker(job: Cron, anchor: number, repeated: ((t: number) => boolean) | null): Ticker {
  // croner works in whole seconds; a run is a real tick only if it matches the pattern and, for a
  // fixed time, is not a fall-back's repeat of it (see header).
  const real = (d: Date | null | undefined): d is Date => d != null && job.match(d) && !repeated?.(d.getTime());
  return {
    after(t) {
      let from = new Date(Math.max(t, anchor));
      for (let i = 0; i < MAX_SKIPS; i++) {
        const next = job.nextRun(from);
        if (next === null) return null;
        if (real(next)) return next.getTime();
        from = next;
      }
      return null;
    },
    latest(from, to, n) {
      const lower = Math.max(from, anchor + 1);
      if (to < lower || n <= 0) return [];
      // previousRuns(k, ref) gives runs strictly before ref's whole second, newest first: ask from
      // the second after `to`'s, so that a run in `to`'s own second is included.
      const runs = job.previousRuns(n + MAX_SKIPS, new Date((Math.floor(to / 1000) + 1) * 1000));
      const out: number[] = [];
      for (const run of runs) {
        const at = run.getTime();
        if (at < lower) break;
        if (at <= to && real(run)) out.push(at);
        if (out.length === n) break;
      }
      return out.reverse();
    },
  };
}
