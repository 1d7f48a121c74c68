/**
 * The dashboard's live charts: per-second throughput and latency of the last 15 minutes, per queue
 * and in total, recorded from `events$` in memory (bounded by the window, not by traffic).
 */
import type { Observable, Subscription } from 'rxjs';
import type { SpoolEvent } from '../index.js';
import { trackDurations } from './durations.js';

/** How many seconds the charts keep. */
export const WINDOW_SECONDS = 900;
/** Latency histogram upper bounds, ms; percentiles read as the upper bound of their bucket. */
const BOUNDS_MS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 300_000, Infinity];
/** The key of the all-queues series. */
const TOTAL = '\u0000total';

interface Histogram {
  counts: Uint32Array;
  max: number;
}

interface Second {
  sec: number;
  sent: number;
  done: number;
  failed: number;
  dead: number;
  handler: Histogram | null;
  wait: Histogram | null;
}

/** One second's figures (latencies in ms; null without a measurement). */
export interface SecondFigures {
  sent: number;
  done: number;
  failed: number;
  dead: number;
  handlerP50: number | null;
  handlerP95: number | null;
  waitP50: number | null;
}

/** Columnar series for charts: one entry per second from `start` (epoch s). */
export interface Series {
  start: number;
  stepMs: 1000;
  sent: number[];
  done: number[];
  failed: number[];
  dead: number[];
  handlerP50: (number | null)[];
  handlerP95: (number | null)[];
  waitP50: (number | null)[];
}

/** Records per-second figures from events$; `stop()` ends the recording. */
export function createSeriesRecorder(events$: Observable<SpoolEvent>, now: () => number = Date.now) {
  const rings = new Map<string, Second[]>();

  function slot(key: string, sec: number): Second {
    let ring = rings.get(key);
    if (!ring) {
      ring = new Array<Second>(WINDOW_SECONDS);
      rings.set(key, ring);
    }
    const i = sec % WINDOW_SECONDS;
    let s = ring[i];
    if (!s || s.sec !== sec) {
      s = { sec, sent: 0, done: 0, failed: 0, dead: 0, handler: null, wait: null };
      ring[i] = s;
    }
    return s;
  }

  function bump(queue: string, at: number, field: 'sent' | 'done' | 'failed' | 'dead') {
    const sec = Math.floor(at / 1000);
    slot(queue, sec)[field] += 1;
    slot(TOTAL, sec)[field] += 1;
  }

  function observe(queue: string, ms: number, field: 'handler' | 'wait') {
    const sec = Math.floor(now() / 1000);
    for (const key of [queue, TOTAL]) {
      const s = slot(key, sec);
      const h = (s[field] ??= { counts: new Uint32Array(BOUNDS_MS.length), max: 0 });
      h.counts[BOUNDS_MS.findIndex((b) => ms <= b)]! += 1;
      h.max = Math.max(h.max, ms);
    }
  }

  const subs: Subscription[] = [
    events$.subscribe((event) => {
      if (event.type === 'message.state') {
        if (event.from === null) bump(event.queue, event.at, 'sent');
        if (event.to === 'done') bump(event.queue, event.at, 'done');
        else if (event.to === 'dead') bump(event.queue, event.at, 'dead');
      } else if (event.type === 'message.error') {
        bump(event.queue, event.at, 'failed');
      }
    }),
    trackDurations(
      events$,
      (queue, ms) => observe(queue, ms, 'handler'),
      (queue, ms) => observe(queue, ms, 'wait'),
    ),
  ];

  function figures(key: string, sec: number): SecondFigures {
    const s = rings.get(key)?.[sec % WINDOW_SECONDS];
    const live = s && s.sec === sec ? s : undefined;
    return {
      sent: live?.sent ?? 0,
      done: live?.done ?? 0,
      failed: live?.failed ?? 0,
      dead: live?.dead ?? 0,
      handlerP50: percentile(live?.handler ?? null, 0.5),
      handlerP95: percentile(live?.handler ?? null, 0.95),
      waitP50: percentile(live?.wait ?? null, 0.5),
    };
  }

  return {
    /** The last complete seconds (up to 15 min) of `queue`, or of every queue. */
    series(queue?: string, seconds = WINDOW_SECONDS): Series {
      const end = Math.floor(now() / 1000);
      const count = Math.min(Math.max(1, seconds), WINDOW_SECONDS - 1);
      const out: Series = { start: end - count, stepMs: 1000, sent: [], done: [], failed: [], dead: [], handlerP50: [], handlerP95: [], waitP50: [] };
      for (let sec = end - count; sec < end; sec++) {
        const f = figures(queue ?? TOTAL, sec);
        out.sent.push(f.sent);
        out.done.push(f.done);
        out.failed.push(f.failed);
        out.dead.push(f.dead);
        out.handlerP50.push(f.handlerP50);
        out.handlerP95.push(f.handlerP95);
        out.waitP50.push(f.waitP50);
      }
      return out;
    },
    /** The last complete second: in total and per queue that had any traffic. */
    lastSecond(): { sec: number; total: SecondFigures; queues: Record<string, SecondFigures> } {
      const sec = Math.floor(now() / 1000) - 1;
      const queues: Record<string, SecondFigures> = Object.create(null);
      for (const [key, ring] of rings) {
        if (key === TOTAL) continue;
        const s = ring[sec % WINDOW_SECONDS];
        if (s && s.sec === sec) queues[key] = figures(key, sec);
      }
      return { sec, total: figures(TOTAL, sec), queues };
    },
    /** Ends the recording. */
    stop() {
      for (const sub of subs) sub.unsubscribe();
      rings.clear();
    },
  };
}

/** The series recorder's type. */
export type SeriesRecorder = ReturnType<typeof createSeriesRecorder>;

function percentile(h: Histogram | null, p: number): number | null {
  if (!h) return null;
  let total = 0;
  for (const c of h.counts) total += c;
  if (total === 0) return null;
  const rank = Math.ceil(p * total);
  let seen = 0;
  for (let i = 0; i < h.counts.length; i++) {
    seen += h.counts[i]!;
    // The bucket's upper bound, but never above the largest value seen.
    if (seen >= rank) return Math.min(BOUNDS_MS[i]!, h.max);
  }
  return h.max;
}
