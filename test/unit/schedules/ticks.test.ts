/** Tick arithmetic of schedules: every-N-ms grids and cron times in a time zone, DST included. */
import { describe, expect, it } from 'vitest';
import { createTicker } from '../../../src/schedules/ticks.js';

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
const at = (text: string) => Date.parse(text);

/** The first `n` ticks after `from`. */
function ticks(ticker: ReturnType<typeof createTicker>, from: number, n: number): (string | null)[] {
  const out: (string | null)[] = [];
  let t: number | null = from;
  for (let i = 0; i < n && t !== null; i++) out.push(iso((t = ticker.after(t))));
  return out;
}

describe('everyMs ticks', () => {
  const anchor = 1_000_000;
  const every = createTicker({ everyMs: 30_000 }, anchor);

  it('tick at anchor + k × everyMs, the first one everyMs after the anchor', () => {
    expect(every.after(anchor)).toBe(anchor + 30_000);
    expect(every.after(0)).toBe(anchor + 30_000);
    expect(every.after(anchor + 29_999)).toBe(anchor + 30_000);
    expect(every.after(anchor + 30_000)).toBe(anchor + 60_000);
    expect(every.after(anchor + 95_000)).toBe(anchor + 120_000);
  });

  it('lists the latest ticks in [from, to], never one at or before the anchor', () => {
    expect(every.latest(anchor + 30_000, anchor + 100_000, 10)).toEqual([anchor + 30_000, anchor + 60_000, anchor + 90_000]);
    expect(every.latest(anchor + 30_001, anchor + 100_000, 10)).toEqual([anchor + 60_000, anchor + 90_000]);
    expect(every.latest(0, anchor + 100_000, 2)).toEqual([anchor + 60_000, anchor + 90_000]);
    expect(every.latest(0, anchor + 100_000, 1)).toEqual([anchor + 90_000]);
    expect(every.latest(0, anchor, 10)).toEqual([]);
    expect(every.latest(anchor + 40_000, anchor + 50_000, 10)).toEqual([]);
  });

  it('handles a million missed ticks without walking them', () => {
    const far = anchor + 30_000 * 1_000_000;
    const latest = every.latest(anchor + 30_000, far, 1000);
    expect(latest).toHaveLength(1000);
    expect(latest.at(-1)).toBe(far);
    expect(latest[0]).toBe(far - 999 * 30_000);
  });
});

describe('cron ticks', () => {
  it('are the cron\'s wall-clock times in UTC by default, strictly after the anchor', () => {
    const cron = createTicker({ cron: '0 3 * * *' }, at('2024-01-01T03:00:00Z'));
    expect(iso(cron.after(at('2024-01-01T00:00:00Z')))).toBe('2024-01-02T03:00:00.000Z');
    expect(ticks(cron, at('2024-01-02T03:00:00Z'), 2)).toEqual(['2024-01-03T03:00:00.000Z', '2024-01-04T03:00:00.000Z']);
  });

  it('are wall-clock times in the given time zone (5 fields: minute first)', () => {
    const cron = createTicker({ cron: '0 3 * * *', tz: 'Europe/Berlin' }, 0);
    // 03:00 in Berlin is 02:00 UTC in winter (CET) and 01:00 UTC in summer (CEST).
    expect(iso(cron.after(at('2024-01-15T12:00:00Z')))).toBe('2024-01-16T02:00:00.000Z');
    expect(iso(cron.after(at('2024-07-15T12:00:00Z')))).toBe('2024-07-16T01:00:00.000Z');
  });

  it('read 6 fields with seconds first', () => {
    const cron = createTicker({ cron: '*/20 * * * * *' }, 0);
    expect(ticks(cron, at('2024-01-01T00:00:05Z'), 3)).toEqual(['2024-01-01T00:00:20.000Z', '2024-01-01T00:00:40.000Z', '2024-01-01T00:01:00.000Z']);
  });

  it('skip a time that a spring-forward skips: it does not run that day', () => {
    // Europe/Berlin, 2024-03-31: 02:00 CET jumps to 03:00 CEST, so 02:30 does not exist.
    const cron = createTicker({ cron: '30 2 * * *', tz: 'Europe/Berlin' }, 0);
    expect(ticks(cron, at('2024-03-29T12:00:00Z'), 3)).toEqual([
      '2024-03-30T01:30:00.000Z', // 02:30 CET
      '2024-04-01T00:30:00.000Z', // 02:30 CEST: the 31st has none
      '2024-04-02T00:30:00.000Z',
    ]);
    expect(cron.latest(at('2024-03-30T00:00:00Z'), at('2024-04-01T12:00:00Z'), 10).map(iso)).toEqual([
      '2024-03-30T01:30:00.000Z',
      '2024-04-01T00:30:00.000Z',
    ]);
  });

  it('run a time that a fall-back repeats once', () => {
    // Europe/Berlin, 2024-10-27: 03:00 CEST falls back to 02:00 CET, so 02:30 happens twice.
    const cron = createTicker({ cron: '30 2 * * *', tz: 'Europe/Berlin' }, 0);
    expect(ticks(cron, at('2024-10-25T12:00:00Z'), 3)).toEqual([
      '2024-10-26T00:30:00.000Z', // 02:30 CEST
      '2024-10-27T00:30:00.000Z', // 02:30 CEST, the first of the two 02:30s; not again at 01:30Z
      '2024-10-28T01:30:00.000Z', // 02:30 CET
    ]);
  });

  it('run a repeated fixed time once in lists and ranges of hours too, and in a 30-minute fall-back', () => {
    // America/New_York, 2024-11-03: 02:00 EDT falls back to 01:00 EST, so 01:00–01:59 repeats.
    // croner alone runs these twice (it treats an hour field of several values as an interval).
    const day = (cron: string, tz: string, from: string, to: string) => {
      const ticker = createTicker({ cron, tz }, 0);
      const out: string[] = [];
      for (let t = ticker.after(at(from)); t !== null && t <= at(to); t = ticker.after(t)) out.push(iso(t)!);
      return out;
    };
    const ny = (cron: string) => day(cron, 'America/New_York', '2024-11-03T03:00:00Z', '2024-11-03T20:00:00Z');
    expect(ny('30 1,13 * * *')).toEqual(['2024-11-03T05:30:00.000Z', '2024-11-03T18:30:00.000Z']); // 01:30 EDT, 13:30 EST
    expect(ny('0 1,2 * * *')).toEqual(['2024-11-03T05:00:00.000Z', '2024-11-03T07:00:00.000Z']); // 01:00 EDT, 02:00 EST
    expect(ny('0 1-2 * * *')).toEqual(['2024-11-03T05:00:00.000Z', '2024-11-03T07:00:00.000Z']);
    expect(ny('0 0 1,2 * * *')).toEqual(['2024-11-03T05:00:00.000Z', '2024-11-03T07:00:00.000Z']); // 6 fields
    // Australia/Lord_Howe, 2024-04-07: 02:00 +11 falls back to 01:30 +10:30, so 01:30–01:59 repeats.
    expect(day('45 1,3 * * *', 'Australia/Lord_Howe', '2024-04-06T13:00:00Z', '2024-04-06T18:00:00Z')).toEqual([
      '2024-04-06T14:45:00.000Z', // 01:45 +11, once
      '2024-04-06T17:15:00.000Z', // 03:45 +10:30
    ]);
    // latest() drops the repeat as after() does.
    const listed = createTicker({ cron: '30 1,13 * * *', tz: 'America/New_York' }, 0);
    expect(listed.latest(at('2024-11-03T03:00:00Z'), at('2024-11-03T07:00:00Z'), 5).map(iso)).toEqual(['2024-11-03T05:30:00.000Z']);
  });

  it('keep interval patterns on real time through the repeated hour (croner\'s rule)', () => {
    const cron = createTicker({ cron: '0,30 * * * *', tz: 'Europe/Berlin' }, 0);
    // 02:00 and 02:30 come twice on 2024-10-27: once in CEST (00:xxZ), once in CET (01:xxZ).
    expect(ticks(cron, at('2024-10-26T23:45:00Z'), 5)).toEqual([
      '2024-10-27T00:00:00.000Z',
      '2024-10-27T00:30:00.000Z',
      '2024-10-27T01:00:00.000Z',
      '2024-10-27T01:30:00.000Z',
      '2024-10-27T02:00:00.000Z',
    ]);
  });

  it('list the latest ticks in [from, to] oldest first, a tick exactly at `to` included', () => {
    const cron = createTicker({ cron: '0 * * * *' }, at('2024-01-01T00:00:00Z'));
    expect(cron.latest(at('2024-01-01T00:30:00Z'), at('2024-01-01T05:00:00Z'), 3).map(iso)).toEqual([
      '2024-01-01T03:00:00.000Z',
      '2024-01-01T04:00:00.000Z',
      '2024-01-01T05:00:00.000Z',
    ]);
    // Never the anchor itself or anything before it.
    expect(cron.latest(0, at('2024-01-01T01:00:00Z'), 5).map(iso)).toEqual(['2024-01-01T01:00:00.000Z']);
  });
});
