/**
 * `spool.browse(query)`: the dashboards' paged listing of messages, newest first. Keyset paging on
 * the send sequence (the rowid): a page is one backward walk of the table's own B-tree from the
 * cursor, stopping at `limit + 1` matches, so no page costs an OFFSET scan or a sort, however deep.
 * Every filter is a bound parameter; `where` is the pull consumers' compiler (pull/where.ts).
 */
import type { MessageState } from '../machines/message.machine.js';
import { ROW_COLUMNS, type MessageRow, type Repository } from './db/repository.js';
import { SpoolError } from './errors.js';
import { compileWhere, type Where } from './pull/where.js';
import { toMessageInfo, type MessageInfo } from './runtime/message-codec.js';
import { assertQueueName } from './validate.js';

/** A page request for `browse()`: every filter optional; newest first, keyset-paged. */
export interface BrowseQuery {
  queue?: string;
  state?: MessageState;
  /** Messages whose id starts with this. */
  idPrefix?: string;
  /** A substring of the payload's JSON text. */
  text?: string;
  /** Payload field filter, the pull consumers' `where` syntax: `{ region: 'eu', size: { lt: 3 } }`. */
  where?: Where;
  /** createdAt range, epoch ms: from inclusive, to exclusive. */
  from?: number;
  to?: number;
  /** The `cursor` of the previous page; absent for the first page. */
  cursor?: string;
  /** 1–500, default 50. */
  limit?: number;
}

/** One page of `browse()`; `cursor` is null on the last page. */
export interface BrowsePage {
  messages: MessageInfo[];
  cursor: string | null;
}

/** The default page size, and the largest. */
export const BROWSE_DEFAULT_LIMIT = 50;
export const BROWSE_MAX_LIMIT = 500;
const STATES: readonly MessageState[] = ['pending', 'activating', 'processing', 'dead', 'done'];
const KEYS = new Set(['queue', 'state', 'idPrefix', 'text', 'where', 'from', 'to', 'cursor', 'limit']);

function invalid(message: string, details: Record<string, unknown>): SpoolError {
  return new SpoolError('INVALID_ARGUMENT', message, { details });
}

/** The SQL and parameters of a page; exported so that a test can read the query plan. */
export function browseSql(query: BrowseQuery): { sql: string; params: (string | number | null)[]; limit: number } {
  if (query === null || typeof query !== 'object' || Array.isArray(query)) throw invalid('Expected browse() to get a query object', { field: 'query' });
  for (const key of Object.keys(query)) if (!KEYS.has(key)) throw invalid(`Unknown browse() field ${JSON.stringify(key.slice(0, 100))}`, { field: key.slice(0, 100) });
  const { queue, state, idPrefix, text, where, from, to, cursor } = query;
  const limit = query.limit ?? BROWSE_DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > BROWSE_MAX_LIMIT) {
    throw invalid(`Expected limit to be an integer from 1 to ${BROWSE_MAX_LIMIT}, got ${String(limit)}`, { field: 'limit', min: 1, max: BROWSE_MAX_LIMIT, value: limit });
  }
  const clauses: string[] = [];
  const params: (string | number | null)[] = [];
  if (queue !== undefined) {
    assertQueueName(queue);
    clauses.push('queue = ?');
    params.push(queue);
  }
  if (state !== undefined) {
    if (!STATES.includes(state)) throw invalid(`Expected state to be one of ${STATES.join(', ')}, got ${JSON.stringify(state)}`, { field: 'state', value: String(state).slice(0, 100) });
    clauses.push('state = ?');
    params.push(state);
  }
  if (idPrefix !== undefined) {
    if (typeof idPrefix !== 'string' || idPrefix.length === 0 || idPrefix.length > 200) throw invalid('Expected idPrefix to be a string of 1–200 characters', { field: 'idPrefix' });
    clauses.push('substr(coalesce(legacy_id, CAST(seq AS TEXT)), 1, ?) = ?');
    params.push(idPrefix.length, idPrefix);
  }
  if (text !== undefined) {
    if (typeof text !== 'string' || text.length === 0 || text.length > 1000) throw invalid('Expected text to be a string of 1–1000 characters', { field: 'text' });
    clauses.push('instr(payload, ?) > 0');
    params.push(text);
  }
  const compiled = compileWhere(where);
  if (compiled) {
    clauses.push(compiled.sql);
    params.push(...compiled.params);
  }
  for (const [field, value] of [['from', from], ['to', to]] as const) {
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw invalid(`Expected ${field} to be epoch ms (an integer), got ${JSON.stringify(value)}`, { field, value: String(value).slice(0, 100) });
    clauses.push(field === 'from' ? 'created_at >= ?' : 'created_at < ?');
    params.push(value);
  }
  if (cursor !== undefined) {
    clauses.push('seq < ?');
    params.push(decodeCursor(cursor));
  }
  const sql = `SELECT ${ROW_COLUMNS} FROM messages ${clauses.length ? `WHERE ${clauses.join(' AND ')} ` : ''}ORDER BY seq DESC LIMIT ?`;
  return { sql, params, limit };
}

/** One page of messages matching `query`, newest first. */
export function browse(repo: Repository, query: BrowseQuery): BrowsePage {
  const { sql, params, limit } = browseSql(query);
  const rows = repo.statement(sql).all(...params, limit + 1) as MessageRow[];
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { messages: page.map(toMessageInfo), cursor: rows.length > limit && last ? encodeCursor(last.seq) : null };
}

function encodeCursor(seq: number): string {
  return Buffer.from(JSON.stringify({ s: seq })).toString('base64url');
}

function decodeCursor(cursor: unknown): number {
  if (typeof cursor === 'string' && cursor.length <= 100) {
    try {
      const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { s?: unknown };
      if (Number.isSafeInteger(parsed.s)) return parsed.s as number;
    } catch {
      // Falls through to the coded error.
    }
  }
  throw invalid('The cursor is not one that browse() returned', { field: 'cursor' });
}
