/**
 * A `node:http` server around `createSqsHandler`, with a graceful close: what `spool serve` runs.
 *
 * Closing stops accepting connections, ends every long poll at once (it answers with no messages,
 * so no message stays claimed by a client that will never see it), lets requests in progress
 * finish, and after `closeTimeoutMs` cuts what is left. It never closes the spool: that belongs to
 * the caller.
 *
 * @example
 * const spool = createSpool({ path: 'spool.db' });
 * await spool.start();
 * const sqs = createSqsServer(spool, { port: 9324 });
 * const { url } = await sqs.listen();          // http://127.0.0.1:9324
 * process.once('SIGTERM', async () => { await sqs.close(); await spool.close(); });
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MAX_TIMER_MS } from '../clock.js';
import { SpoolError } from '../index.js';
import type { SqsBackend } from './backend.js';
import { createSqsHandler } from './handler.js';
import type { SqsHandlerOptions } from './options.js';

/** Options of `createSqsServer`; handler options pass through. */
export interface SqsServerOptions extends Omit<SqsHandlerOptions, 'signal' | 'auth'> {
  /** Interface to listen on (default 127.0.0.1: without `authKeys` anyone who can connect is served). */
  host?: string;
  /** TCP port (default 9324, ElasticMQ's; 0 picks a free one). */
  port?: number;
  /** Strict mode: access key id → secret; unsigned or wrongly signed requests are refused. */
  authKeys?: Record<string, string>;
  /** Largest clock skew of a signed request, in seconds (default 900). */
  maxSkewSec?: number;
  /** How long `close()` waits for requests in progress before cutting them, in ms (default 10,000). */
  closeTimeoutMs?: number;
  /** Serves the requests that are not SQS calls (e.g. the admin handler); default: a JSON 404. */
  fallback?: (req: IncomingMessage, res: ServerResponse) => void;
}

/** The defaults of `SqsServerOptions`. */
export const SQS_SERVER_DEFAULTS = { host: '127.0.0.1', port: 9324, closeTimeoutMs: 10_000 } as const;

/** A running (or ready) SQS server. */
export interface SqsServer {
  /** The underlying node:http server. */
  readonly server: Server;
  /** Starts listening; resolves with the endpoint to give SDKs. Rejects with the Node error (e.g. EADDRINUSE). */
  listen(): Promise<{ url: string; host: string; port: number }>;
  /** Graceful close; idempotent (every caller gets the same promise). */
  close(): Promise<void>;
}

/** Builds the server (not yet listening). Throws INVALID_OPTIONS. */
export function createSqsServer(spool: SqsBackend, options: SqsServerOptions = {}): SqsServer {
  const { host = SQS_SERVER_DEFAULTS.host, port = SQS_SERVER_DEFAULTS.port, authKeys, maxSkewSec, closeTimeoutMs = SQS_SERVER_DEFAULTS.closeTimeoutMs, fallback, ...handlerOptions } = options;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new SpoolError('INVALID_OPTIONS', `Expected \`port\` to be an integer from 0 to 65535, got ${String(port)}`);
  if (typeof closeTimeoutMs !== 'number' || !(closeTimeoutMs >= 0 && closeTimeoutMs <= MAX_TIMER_MS)) {
    // A Node timer fires a longer delay after 1 ms, which would cut every request at once.
    throw new SpoolError('INVALID_OPTIONS', `Expected \`closeTimeoutMs\` to be from 0 to ${MAX_TIMER_MS} ms, got ${String(closeTimeoutMs)}`);
  }
  const shutdown = new AbortController();
  const handler = createSqsHandler(spool, {
    ...handlerOptions,
    ...(authKeys === undefined ? {} : { auth: { keys: authKeys, ...(maxSkewSec === undefined ? {} : { maxSkewSec }) } }),
    signal: shutdown.signal,
  });
  // Responses in progress: at close they get `Connection: close`, so a keep-alive client does not
  // hold its socket (and the close) open after its last answer.
  const inFlight = new Set<ServerResponse>();
  let closing: Promise<void> | undefined;
  const server = createServer((req, res) => {
    if (closing) res.setHeader('connection', 'close');
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
    handler(req, res, fallback ? () => fallback(req, res) : undefined);
  });

  return {
    server,
    listen() {
      return new Promise((resolve, reject) => {
        const onError = (error: Error) => reject(error);
        server.once('error', onError);
        server.listen(port, host, () => {
          server.off('error', onError);
          const address = server.address() as AddressInfo;
          const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
          resolve({ url: handlerOptions.publicUrl ?? `http://${shown}:${address.port}`, host: address.address, port: address.port });
        });
      });
    },
    close() {
      closing ??= new Promise<void>((resolve, reject) => {
        if (!server.listening) {
          shutdown.abort();
          resolve();
          return;
        }
        const timer = setTimeout(() => server.closeAllConnections(), closeTimeoutMs);
        server.close((error) => {
          clearTimeout(timer);
          if (error) reject(error);
          else resolve();
        });
        for (const res of inFlight) if (!res.headersSent) res.setHeader('connection', 'close');
        // Long polls answer with no messages now; idle keep-alive sockets go at once.
        shutdown.abort();
        server.closeIdleConnections();
      });
      return closing;
    },
  };
}
