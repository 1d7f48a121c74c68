/**
 * Message history: every committed transition of a message, kept compactly in its row's `history`
 * column (appended by the same UPDATE that makes the transition, so it costs no statement of its
 * own), and moved into `message_history` when the row is deleted, until `history.retentionMs`.
 *
 * Stored form: comma-separated JSON arrays `[at,from,to,attempt]` or `[at,from,to,attempt,"CODE"]`,
 * states as their index in HISTORY_STATES (from -1 at send); the column text is the inside of a JSON
 * array, so that an append is a string concatenation in SQL, never a JSON rewrite.
 */
import type { MessageState } from '../../machines/message.machine.js';

/** The states, by their stored index. Append only: stored rows keep these numbers. */
export const HISTORY_STATES: readonly MessageState[] = ['pending', 'activating', 'processing', 'dead', 'done'];

/** One committed transition of a message. */
export interface HistoryEntry {
  /** Epoch ms of the commit. */
  at: number;
  /** null at send. */
  from: MessageState | null;
  to: MessageState;
  attempt: number;
  /** The error code of the failure that caused this transition, if any. */
  code?: string;
}

/** The stored text of one entry. */
export function encodeEntry(at: number, from: MessageState | null, to: MessageState, attempt: number, code?: string): string {
  const f = from === null ? -1 : HISTORY_STATES.indexOf(from);
  const t = HISTORY_STATES.indexOf(to);
  return code === undefined ? `[${at},${f},${t},${attempt}]` : `[${at},${f},${t},${attempt},${JSON.stringify(code)}]`;
}

/**
 * The stored text of a row's history, with its send entry written out. A new row holds '' at
 * send, not `[created_at,-1,0,0]`: that entry follows from the row's own columns, and
 * leaving it out saves 22 bytes of a ~180-byte row, on disk and in every send's WAL frames. Appends
 * then keep a leading comma (`'' || ',' || entry`), which marks the implied entry; rows stored
 * before keep theirs written out, and both forms read the same from here.
 */
export function withSendEntry(text: string, createdAt: number): string {
  return text === '' || text.startsWith(',') ? `${encodeEntry(createdAt, null, 'pending', 0)}${text}` : text;
}

/** The entries of a stored timeline, oldest first; an unreadable one yields what it can (never throws). */
export function decodeTimeline(text: string | null | undefined): HistoryEntry[] {
  if (!text) return [];
  let raw: unknown;
  try {
    raw = JSON.parse(`[${text}]`);
  } catch {
    return [];
  }
  const out: HistoryEntry[] = [];
  for (const item of raw as unknown[]) {
    if (!Array.isArray(item) || item.length < 4) continue;
    const [at, f, t, attempt, code] = item as [number, number, number, number, unknown];
    const to = HISTORY_STATES[t];
    if (to === undefined || typeof at !== 'number') continue;
    const entry: HistoryEntry = { at, from: f < 0 ? null : (HISTORY_STATES[f] ?? null), to, attempt };
    if (typeof code === 'string') entry.code = code;
    out.push(entry);
  }
  return out;
}
