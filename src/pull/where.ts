/**
 * Conditional subscription (Q4M's `queue_wait('t:v1=3')`): `where` filters on payload fields,
 * compiled to `json_extract` with bound parameters only. Field paths are checked against a strict
 * pattern and values against plain types before any query runs, so nothing a caller passes can
 * reach the SQL text.
 */
import { SpoolError } from '../errors.js';

/** A field's condition: a plain value (equality) or comparisons. */
export type WhereCondition =
  | string
  | number
  | boolean
  | null
  | { lt?: number | string; lte?: number | string; gt?: number | string; gte?: number | string; ne?: number | string | boolean | null; in?: (number | string)[] };

/** Payload field path (dotted) → condition. */
export type Where = Record<string, WhereCondition>;

/** A compiled filter: SQL to AND into a query, and its parameters in order. */
export interface CompiledWhere {
  /** True for the rows that match; a row whose payload is not JSON matches nothing. */
  sql: string;
  /** The same, but true for a row whose payload is not JSON too: a wait meets it, and dead-letters it. */
  orUnreadable: string;
  params: (string | number | null)[];
}

/** Field paths: identifiers separated by dots. */
export const FIELD_PATH = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
const OPERATORS: Record<string, string> = { lt: '<', lte: '<=', gt: '>', gte: '>=', ne: 'IS NOT' };
/** At most this many values in an `in` list (each is a bound parameter). */
const MAX_IN = 100;
/** Conditions a where may hold: SQLite refuses an expression tree past about 1,000 of them. */
const MAX_CONDITIONS = 50;

function invalid(message: string, field?: string): SpoolError {
  return new SpoolError('INVALID_ARGUMENT', `Invalid where: ${message}`, { details: field === undefined ? { field: 'where' } : { field: 'where', path: field } });
}

/** A value SQL can compare: a finite number, or a string (booleans bind as 1/0, as SQLite's JSON reads them). */
function scalar(value: unknown, field: string, allowNull: boolean): string | number | null {
  if (typeof value === 'string') {
    if (value.includes('\u0000')) throw invalid(`the value for ${field} contains a NUL character`, field);
    return value;
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw invalid(`the value for ${field} is ${String(value)}, not a finite number`, field);
    return value;
  }
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value === null && allowNull) return null;
  throw invalid(`the value for ${field} must be a string, a number${allowNull ? ', a boolean or null' : ''}, got ${value === null ? 'null' : typeof value}`, field);
}

/** Compiles `where`; throws INVALID_ARGUMENT (before any query) for anything but the documented shape. */
export function compileWhere(where: unknown): CompiledWhere | undefined {
  if (where === undefined) return undefined;
  if (where === null || typeof where !== 'object' || Array.isArray(where)) throw invalid('expected an object of field path → condition');
  const parts: string[] = [];
  const params: (string | number | null)[] = [];
  for (const [field, condition] of Object.entries(where as Record<string, unknown>)) {
    if (!FIELD_PATH.test(field)) throw invalid(`field path ${JSON.stringify(field.slice(0, 100))} must match ${FIELD_PATH.source}`, field.slice(0, 100));
    const extract = `json_extract(payload, ?)`;
    const path = `$.${field}`;
    if (parts.length >= MAX_CONDITIONS) throw invalid(`at most ${MAX_CONDITIONS} conditions in all`);
    if (condition === null || typeof condition !== 'object') {
      const value = scalar(condition, field, true);
      parts.push(value === null ? `${extract} IS NULL` : `${extract} = ?`);
      params.push(path);
      if (value !== null) params.push(value);
      continue;
    }
    const ops = Object.entries(condition as Record<string, unknown>);
    if (ops.length === 0) throw invalid(`the condition for ${field} is empty`, field);
    if (parts.length + ops.length > MAX_CONDITIONS) throw invalid(`at most ${MAX_CONDITIONS} conditions in all`);
    for (const [op, value] of ops) {
      if (op === 'in') {
        if (!Array.isArray(value) || value.length === 0 || value.length > MAX_IN) throw invalid(`${field}.in must be an array of 1–${MAX_IN} values`, field);
        const values = value.map((v) => scalar(v, field, false));
        parts.push(`${extract} IN (${values.map(() => '?').join(', ')})`);
        params.push(path, ...values);
      } else if (Object.hasOwn(OPERATORS, op)) {
        const bound = scalar(value, field, op === 'ne');
        parts.push(`${extract} ${OPERATORS[op]} ?`);
        params.push(path, bound);
      } else {
        throw invalid(`unknown operator ${JSON.stringify(op.slice(0, 40))} for ${field}; use lt, lte, gt, gte, ne or in`, field);
      }
    }
  }
  if (parts.length === 0) return undefined;
  // json_extract on a payload that is not JSON fails the whole query: one such row would refuse
  // every filtered wait (or listing) of its queue. CASE evaluates the conditions on valid JSON only.
  const conditions = parts.join(' AND ');
  return {
    sql: `CASE WHEN json_valid(payload) THEN (${conditions}) ELSE 0 END`,
    orUnreadable: `CASE WHEN json_valid(payload) THEN (${conditions}) ELSE 1 END`,
    params,
  };
}
