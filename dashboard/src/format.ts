/** Small formatting helpers. */

/** A local date-time with milliseconds. */
export function time(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '–';
  const d = new Date(ms);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/** "3.2 s ago", "in 5 min". */
export function relative(ms: number, now = Date.now()): string {
  const diff = ms - now;
  const abs = Math.abs(diff);
  const text = abs < 1000 ? `${abs} ms` : abs < 60_000 ? `${(abs / 1000).toFixed(1)} s` : abs < 3_600_000 ? `${Math.round(abs / 60_000)} min` : `${(abs / 3_600_000).toFixed(1)} h`;
  return diff <= 0 ? `${text} ago` : `in ${text}`;
}

/** A duration in ms, compact. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '–';
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

/** A count with thousands separators. */
export function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** Bidirectional and invisible direction marks: stored data must not reorder what the page shows. */
const DIRECTION_MARKS = /[\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

/**
 * Data as text with direction marks shown as their escapes (`\u202E`): a payload or an error
 * message can otherwise make "0001" read as "1000", or flip the text after it.
 */
export function visible(text: string): string {
  return text.replace(DIRECTION_MARKS, (c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`);
}

/** A payload preview on one line. */
export function preview(value: unknown, max = 120): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  // Cut first, then escape: an escape is never cut in half.
  return text.length > max ? `${visible(text.slice(0, max))}…` : visible(text);
}

/** Route links. */
export const link = {
  overview: () => '#/',
  queue: (name: string) => `#/queue/${encodeURIComponent(name)}`,
  message: (id: string) => `#/message/${encodeURIComponent(id)}`,
  settings: () => '#/settings',
  lifecycle: () => '#/lifecycle',
  lifecycleState: (state: string) => `#/lifecycle/state/${encodeURIComponent(state)}`,
  lifecycleMessage: (id: string) => `#/lifecycle/message/${encodeURIComponent(id)}`,
};
