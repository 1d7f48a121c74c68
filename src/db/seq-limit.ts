/**
 * The seq range Spool can address. better-sqlite3 reads an INTEGER column as a JS number, exact only
 * up to Number.MAX_SAFE_INTEGER (2^53 − 1); past it two seqs read as one, so an id, a fence
 * (`WHERE seq = ?`) or the fold mark would name the wrong row. Real use never gets near (a million
 * sends a second for 285 years), so a seq there means an altered or damaged file: Spool refuses it
 * with STORAGE_ERROR (a file it cannot use safely, as at open), rather than read every seq as a
 * BigInt on the hot path to serve a file no one can reach honestly.
 */
import type Database from 'better-sqlite3';
import { SpoolError } from '../errors.js';

/** The largest seq Spool hands out or reads: every seq up to it is an exact JS number. */
export const MAX_SEQ = Number.MAX_SAFE_INTEGER;

/**
 * The refusal of a send that would take a seq past MAX_SEQ: `after` is the newest seq or mark the
 * file holds (as read: past the limit it may be rounded), `count` how many seqs the send needed.
 */
export function seqExhausted(after: number, count: number): SpoolError {
  return new SpoolError(
    'STORAGE_ERROR',
    `Cannot store ${count === 1 ? 'a message' : `${count} messages`}: the database's newest seq (or its last_seq mark) is ${after}, and ids past ${MAX_SEQ} (2^53 - 1) would not be exact in JavaScript. Normal use never gets there: the file was altered or damaged. Nothing was stored`,
    { details: { after, count, limit: MAX_SEQ } },
  );
}

/**
 * Refuses, at open, a file holding a message row past MAX_SEQ: every read of it would round its
 * seq, and a claim or a settle fenced on that number would miss it (leaving it at the head of its
 * queue for ever) or land on a neighbour. The seq is compared and named in SQL, exactly; one seek
 * on the primary key. A last_seq mark past the limit alone does not refuse the open (the file's
 * rows can still be drained): the next send refuses instead (counters.ts).
 */
export function refuseUnaddressableSeqs(sqlite: Database.Database): void {
  const beyond = sqlite.prepare(`SELECT CAST(max(seq) AS TEXT) FROM messages WHERE seq > ${MAX_SEQ}`).pluck().get() as string | null;
  if (beyond === null) return;
  throw new SpoolError(
    'STORAGE_ERROR',
    `The database holds a message with seq ${beyond}, past ${MAX_SEQ} (2^53 - 1), the largest seq Spool can read exactly; Spool never writes one, so the file was altered or damaged. Renumber or delete the rows with seq > ${MAX_SEQ} (sqlite3), then open it again`,
    { details: { seq: beyond, limit: MAX_SEQ } },
  );
}
