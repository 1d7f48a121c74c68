/** HTTP plumbing of the admin handler: JSON bodies in and out, and errors as coded JSON. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isSpoolError } from '../errors.js';

/** The largest JSON body a change may carry, bytes. */
export const MAX_BODY_BYTES = 1 << 20;

/** An error answered with its own status and code (auth, CSRF, routing, lookups). */
export class HttpError extends Error {
  /** `status`: the HTTP status; `code`: the stable code in the JSON body. */
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** The HTTP status for each SpoolError code; unlisted codes are 500. */
const STATUS: Record<string, number> = {
  INVALID_PAYLOAD: 400,
  INVALID_QUEUE_NAME: 400,
  INVALID_ARGUMENT: 400,
  INVALID_OPTIONS: 400,
  INVALID_SETTINGS: 400,
  INVALID_RECEIPT: 400,
  QUEUE_NOT_FOUND: 404,
  DUPLICATE_CONSUMER: 409,
  QUEUE_EXISTS: 409,
  MESSAGE_NOT_INFLIGHT: 409,
  NOT_ACCEPTING: 409,
  LOCKED: 409,
  HARD_LINKED: 409,
  NEWER_SCHEMA: 409,
  QUEUE_FULL: 429,
  CLOSED: 503,
  STORAGE_BUSY: 503,
  STORAGE_FULL: 507,
};

/** Writes `body` as JSON with `status`; never cached, never sniffed. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  res.end(text);
}

/** The status and JSON body of any thrown value: `{ error: { code, message, details? } }`. */
export function errorResponse(error: unknown): { status: number; body: { error: { code: string; message: string; details?: unknown } } } {
  if (error instanceof HttpError) {
    return { status: error.status, body: { error: { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) } } };
  }
  if (isSpoolError(error)) {
    return {
      status: STATUS[error.code] ?? 500,
      body: { error: { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) } },
    };
  }
  // Errors that carry their own status (the interim adapter's 501), else an internal error.
  const own = error as { statusCode?: unknown; code?: unknown; message?: unknown } | null;
  if (own && typeof own.statusCode === 'number' && typeof own.code === 'string') {
    return { status: own.statusCode, body: { error: { code: own.code, message: String(own.message) } } };
  }
  return { status: 500, body: { error: { code: 'INTERNAL', message: error instanceof Error ? error.message : String(error) } } };
}

/** Answers with the coded JSON error for `error`. */
export function sendError(res: ServerResponse, error: unknown): void {
  const { status, body } = errorResponse(error);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, status, body);
}

/** Reads a JSON body (at most MAX_BODY_BYTES); an empty body reads as `{}`. */
export async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  // Behind a body parser (Express's express.json(), say) the stream was read to its end already:
  // reading it again gives nothing, and an empty body would pass for `{}`.
  if (req.readableEnded) return parsedBefore(req);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, 'INVALID_ARGUMENT', `The request body is over ${MAX_BODY_BYTES} bytes`, { limit: MAX_BODY_BYTES });
    chunks.push(chunk);
  }
  return parseText(Buffer.concat(chunks).toString('utf8'));
}

/** A JSON body's text: empty is `{}`. */
function parseText(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, 'INVALID_ARGUMENT', `The request body is not valid JSON: ${(error as Error).message}`);
  }
}

/** The body a middleware read before this handler: its `req.body`, or 500 if it left none. */
function parsedBefore(req: IncomingMessage): unknown {
  const body = (req as IncomingMessage & { body?: unknown }).body;
  if (typeof body === 'string' || Buffer.isBuffer(body)) return parseText(body.toString());
  if (body !== undefined && body !== null && typeof body === 'object') return body;
  throw new HttpError(500, 'BODY_ALREADY_READ', 'The request body was read before the admin handler, which got no parsed req.body: mount the handler before body parsers, or use one that sets req.body');
}
