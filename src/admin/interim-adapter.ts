/**
 * TEMPORARY: fills in the admin seams that today's `Spool` lacks (browse, get with history,
 * remove, requeue by ids, telemetry, idle queues in stats), so the admin module can be built and
 * tested before the core grows them. Delete this file when the seams land in src/index.ts and pass
 * the spool itself to createAdminHandler.
 *
 * It uses only the public API plus one READ-ONLY better-sqlite3 connection on the spool file
 * (today's schema, src/db/schema.ts). What it cannot do that way:
 * - `remove(ids)` needs a write by id, which no public call offers: it rejects with status 501.
 * - History is what this process saw on `events$` since the adapter was made, in memory (the row's
 *   send is added from `createdAt`); it does not survive a restart.
 * - `telemetry()` counts events since the adapter was made; commit timings are not observable
 *   (count 0).
 */
import { statSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { Subscription } from 'rxjs';
import { SpoolError, type MessageInfo, type MessageState, type Spool, type SpoolStats } from '../index.js';
import type { AdminRequeueFilter, AdminSource, BrowsePage, BrowseQuery, HistoryEntry, Telemetry } from './source.js';

/** The adapter plus its own cleanup. */
export interface InterimSource extends AdminSource {
  /** Closes the read-only connection and stops recording; the spool itself stays open. */
  close(): void;
}

/** How many messages' histories the in-memory recorder keeps (oldest dropped first). */
const HISTORY_MESSAGES = 10_000;
/** How many entries one message's history keeps. */
const HISTORY_ENTRIES = 100;
const STATES: readonly MessageState[] = ['pending', 'activating', 'processing', 'dead', 'done'];
const QUEUE_NAME = /^(?!__proto__$)[A-Za-z0-9._-]{1,80}$/;
const FIELD_PATH = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
const OPERATORS = { lt: '<', lte: '<=', gt: '>', gte: '>=', ne: '!=' } as const;

/** TEMPORARY: an AdminSource over today's spool and its file at `path` (see the module header). */
export function withInterimSeams(spool: Spool, options: { path: string }): InterimSource {
  const { path } = options;
  let conn: Database.Database | undefined;
  const histories = new Map<string, HistoryEntry[]>();
  const lastCode = new Map<string, string>();
  const counters = { sent: 0, completed: 0, dead: 0, storageBusy: 0, failed: Object.create(null) as Record<string, number> };

  const sub: Subscription = spool.events$.subscribe((event) => {
    switch (event.type) {
      case 'message.state': {
        if (event.from === null) counters.sent += 1;
        if (event.to === 'done') counters.completed += 1;
        if (event.to === 'dead') counters.dead += 1;
        const entry: HistoryEntry = { at: event.at, from: event.from, to: event.to, attempt: event.attempt };
        const code = lastCode.get(event.id);
        // message.error is announced just before the transition it caused.
        if (code !== undefined) {
          entry.code = code;
          lastCode.delete(event.id);
        }
        let list = histories.get(event.id);
        if (!list) {
          if (histories.size >= HISTORY_MESSAGES) histories.delete(histories.keys().next().value!);
          list = [];
          histories.set(event.id, list);
        }
        if (list.length < HISTORY_ENTRIES) list.push(entry);
        return;
      }
      case 'message.error':
        counters.failed[event.code] = (counters.failed[event.code] ?? 0) + 1;
        if (lastCode.size >= HISTORY_MESSAGES) lastCode.delete(lastCode.keys().next().value!);
        lastCode.set(event.id, event.code);
        return;
      case 'storage.busy':
        counters.storageBusy += 1;
        return;
      default:
        return;
    }
  });

  function db(): Database.Database {
    if (!conn) {
      // The spool creates and migrates the file on first use; the read-only connection needs it.
      spool.settings.get();
      conn = new Database(path, { readonly: true, fileMustExist: true });
      conn.pragma('busy_timeout = 1000');
    }
    return conn;
  }

  function fileBytes(file: string): number {
    try {
      return statSync(file).size;
    } catch {
      return 0;
    }
  }

  return {
    events$: spool.events$,
    settings: spool.settings,
    async stats(): Promise<SpoolStats> {
      const stats = await spool.stats();
      // Today's stats() lists only queues with rows; the contract lists every known queue.
      const known = db().prepare('SELECT name FROM queues').pluck().all() as string[];
      for (const name of [...known, ...Object.keys(spool.settings.get().queues)]) {
        if (!Object.hasOwn(stats.queues, name)) stats.queues[name] = { pending: 0, activating: 0, processing: 0, dead: 0, done: 0 };
      }
      return stats;
    },
    async get(id) {
      const info = await spool.get(id);
      if (!info) return undefined;
      const seen = histories.get(id) ?? [];
      const history = seen[0]?.from === null ? [...seen] : [{ at: info.createdAt, from: null, to: 'pending' as const, attempt: 0 }, ...seen];
      return { ...info, history };
    },
    async browse(query) {
      return browse(db(), query);
    },
    async remove(ids) {
      if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string')) {
        throw new SpoolError('INVALID_ARGUMENT', 'Expected remove() to get an array of message ids');
      }
      throw Object.assign(new Error('Deleting messages by id needs the core seam spool.remove(ids), which this build lacks; purge a queue by state instead'), {
        statusCode: 501,
        code: 'NOT_AVAILABLE',
      });
    },
    async requeue(filter: AdminRequeueFilter) {
      if (filter !== null && typeof filter === 'object' && 'ids' in filter) {
        const { ids } = filter;
        if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string')) {
          throw new SpoolError('INVALID_ARGUMENT', 'Expected requeue({ ids }) to get an array of message ids');
        }
        let moved = 0;
        for (const id of ids) moved += await spool.requeue(id);
        return moved;
      }
      return spool.requeue(filter);
    },
    purge: (queue, purgeOptions) => spool.purge(queue, purgeOptions),
    telemetry(): Telemetry {
      return {
        sent: counters.sent,
        completed: counters.completed,
        failed: { ...counters.failed },
        dead: counters.dead,
        storageBusy: counters.storageBusy,
        commit: { count: 0, sumMs: 0, buckets: [] },
        dbBytes: fileBytes(path),
        walBytes: fileBytes(`${path}-wal`),
      };
    },
    close() {
      sub.unsubscribe();
      conn?.close();
      conn = undefined;
    },
  };
}

function invalid(message: string, details: Record<string, unknown>): SpoolError {
  return new SpoolError('INVALID_ARGUMENT', message, { details });
}

const ROW = `id, queue, payload, state, attempt, deliveries, priority, created_at AS createdAt, updated_at AS updatedAt,
  visible_at AS visibleAt, finished_at AS finishedAt, last_error AS lastError, seq,
  lease_expires_at AS leaseExpiresAt, first_delivered_at AS firstDeliveredAt`;

interface BrowseRow {
  id: string;
  queue: string;
  payload: string;
  state: MessageState;
  attempt: number;
  deliveries: number;
  priority: number;
  createdAt: number;
  updatedAt: number;
  visibleAt: number;
  finishedAt: number | null;
  lastError: string | null;
  seq: number;
  leaseExpiresAt: number | null;
  firstDeliveredAt: number | null;
}

/** Keyset paging on the send sequence (the rowid), newest first: no OFFSET, ever. */
function browse(conn: Database.Database, query: BrowseQuery): BrowsePage {
  if (query === null || typeof query !== 'object') throw invalid('Expected a browse query object', { field: 'query' });
  const known = new Set(['queue', 'state', 'idPrefix', 'text', 'where', 'from', 'to', 'cursor', 'limit']);
  for (const key of Object.keys(query)) if (!known.has(key)) throw invalid(`Unknown browse field ${JSON.stringify(key)}`, { field: key });
  const clauses: string[] = [];
  const params: unknown[] = [];
  const { queue, state, idPrefix, text, where, from, to, cursor } = query;
  const limit = query.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw invalid(`Expected limit to be an integer from 1 to 500, got ${String(limit)}`, { field: 'limit', min: 1, max: 500, value: limit });
  if (queue !== undefined) {
    if (typeof queue !== 'string' || !QUEUE_NAME.test(queue)) {
      throw new SpoolError('INVALID_QUEUE_NAME', `Expected a queue name of 1–80 characters from [A-Za-z0-9._-], got ${JSON.stringify(queue)}`, { details: { name: String(queue).slice(0, 200) } });
    }
    clauses.push('queue = ?');
    params.push(queue);
  }
  if (state !== undefined) {
    if (!STATES.includes(state)) throw invalid(`Expected state to be one of ${STATES.join(', ')}, got ${JSON.stringify(state)}`, { field: 'state', value: state });
    clauses.push('state = ?');
    params.push(state);
  }
  if (idPrefix !== undefined) {
    if (typeof idPrefix !== 'string' || idPrefix.length === 0 || idPrefix.length > 200) throw invalid('Expected idPrefix to be a string of 1–200 characters', { field: 'idPrefix' });
    // A range on the unique id index instead of LIKE, which would need escaping and scan.
    clauses.push('id >= ? AND id < ?');
    params.push(idPrefix, `${idPrefix}\u{10FFFF}`);
  }
  if (text !== undefined) {
    if (typeof text !== 'string' || text.length === 0 || text.length > 1000) throw invalid('Expected text to be a string of 1–1000 characters', { field: 'text' });
    clauses.push('instr(payload, ?) > 0');
    params.push(text);
  }
  if (where !== undefined) compileWhere(where, clauses, params);
  for (const [field, value] of [['from', from], ['to', to]] as const) {
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(`Expected ${field} to be epoch ms, got ${JSON.stringify(value)}`, { field, value });
    clauses.push(field === 'from' ? 'created_at >= ?' : 'created_at < ?');
    params.push(value);
  }
  if (cursor !== undefined) {
    clauses.push('seq < ?');
    params.push(decodeCursor(cursor));
  }
  const sql = `SELECT ${ROW} FROM messages ${clauses.length ? `WHERE ${clauses.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT ?`;
  const rows = conn.prepare(sql).all(...params, limit + 1) as BrowseRow[];
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    messages: page.map(toInfo),
    cursor: rows.length > limit && last ? Buffer.from(JSON.stringify({ s: last.seq })).toString('base64url') : null,
  };
}

function decodeCursor(cursor: unknown): number {
  if (typeof cursor === 'string' && cursor.length <= 100) {
    try {
      const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { s?: unknown };
      if (Number.isSafeInteger(parsed.s)) return parsed.s as number;
    } catch {
      // falls through to the coded error
    }
  }
  throw invalid('The cursor is not one that browse() returned', { field: 'cursor' });
}

/** Q4M `where`: a value means equality; `{ lt, lte, gt, gte, ne, in }` compare; bound parameters only. */
function compileWhere(where: unknown, clauses: string[], params: unknown[]) {
  if (where === null || typeof where !== 'object' || Array.isArray(where)) throw invalid('Expected where to be an object of payload fields', { field: 'where' });
  const entries = Object.entries(where);
  if (entries.length === 0 || entries.length > 20) throw invalid('Expected where to name 1–20 payload fields', { field: 'where' });
  for (const [path, condition] of entries) {
    if (!FIELD_PATH.test(path)) throw invalid(`Invalid payload field path ${JSON.stringify(path)}`, { field: 'where', path });
    const target = 'json_extract(payload, ?)';
    const jsonPath = `$.${path}`;
    if (condition !== null && typeof condition === 'object' && !Array.isArray(condition)) {
      const ops = Object.entries(condition);
      if (ops.length === 0) throw invalid(`The condition on ${path} names no operator`, { field: 'where', path });
      for (const [op, operand] of ops) {
        if (op === 'in') {
          if (!Array.isArray(operand) || operand.length === 0 || operand.length > 100 || !operand.every(isScalar)) {
            throw invalid(`Expected ${path}.in to be an array of 1–100 strings or numbers`, { field: 'where', path, op });
          }
          clauses.push(`${target} IN (${operand.map(() => '?').join(', ')})`);
          params.push(jsonPath, ...operand);
        } else if (Object.hasOwn(OPERATORS, op)) {
          if (!isScalar(operand)) throw invalid(`Expected ${path}.${op} to be a string or a number`, { field: 'where', path, op });
          clauses.push(`${target} ${OPERATORS[op as keyof typeof OPERATORS]} ?`);
          params.push(jsonPath, operand);
        } else {
          throw invalid(`Unknown operator ${JSON.stringify(op)} on ${path}; expected lt, lte, gt, gte, ne or in`, { field: 'where', path, op });
        }
      }
    } else if (condition === null) {
      clauses.push(`${target} IS NULL`);
      params.push(jsonPath);
    } else if (typeof condition === 'boolean') {
      // json_extract gives 1/0 for JSON true/false; the type check keeps 1 from matching true.
      clauses.push(`(${target} = ? AND json_type(payload, ?) = ?)`);
      params.push(jsonPath, condition ? 1 : 0, jsonPath, condition ? 'true' : 'false');
    } else if (isScalar(condition)) {
      clauses.push(`${target} = ?`);
      params.push(jsonPath, condition);
    } else {
      throw invalid(`Expected the condition on ${path} to be a string, number, boolean, null or an operator object`, { field: 'where', path });
    }
  }
}

function isScalar(value: unknown): value is string | number {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

function toInfo(row: BrowseRow): MessageInfo {
  return {
    id: row.id,
    queue: row.queue,
    state: row.state,
    payload: parseOr(row.payload, row.payload),
    attempt: row.attempt,
    deliveries: row.deliveries,
    priority: row.priority,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    visibleAt: row.visibleAt,
    finishedAt: row.finishedAt,
    lastError: row.lastError === null ? null : (parseOr(row.lastError, { code: 'UNKNOWN', message: row.lastError }) as MessageInfo['lastError']),
    sequence: row.seq,
    leaseExpiresAt: row.leaseExpiresAt,
    firstDeliveredAt: row.firstDeliveredAt,
  };
}

function parseOr(text: string, fallback: unknown): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return fallback;
  }
}
