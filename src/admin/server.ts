/**
 * A standalone admin server: `npx spool admin --db file [--port 9325]` (the CLI wiring calls
 * startAdminServer), and serveAdmin() for an app or demo that wants the dashboard on its own
 * port. Binds 127.0.0.1 by default; close() ends SSE streams, the server and what it opened.
 */
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
// Direct module imports, not '../index.js': index.ts exports this module (no import cycle).
import { MAX_TIMER_MS } from '../clock.js';
import { SpoolError } from '../errors.js';
import type { SpoolOptions } from '../options.js';
import { createSpool } from '../spool.js';
import { createAdminHandler, type AdminHandler } from './handler.js';
import type { AdminHandlerOptions } from './options.js';
import { loopbackHosts } from '../loopback.js';
import type { AdminSource } from './source.js';

/** The default port of `spool admin`. */
export const DEFAULT_ADMIN_PORT = 9325;

/** Where and how to listen. */
export interface ListenOptions {
  /** TCP port; 0 picks a free one (default 9325). */
  port?: number;
  /** Interface to bind (default '127.0.0.1': reachable from this machine only). */
  host?: string;
  /** How long close() waits for requests in progress before it cuts their connections, ms (default 10,000). */
  closeTimeoutMs?: number;
}

/** The default of `closeTimeoutMs`: as long as the SQS server's. */
const CLOSE_TIMEOUT_MS = 10_000;

/** A running admin server. */
export interface AdminServer {
  /** The dashboard's URL (without the token). */
  readonly url: string;
  readonly port: number;
  readonly server: Server;
  readonly handler: AdminHandler;
  /** Ends SSE streams, stops listening, waits for open requests, then closes what it opened. */
  close(): Promise<void>;
}

/** Serves the admin handler for `source` on its own HTTP server. */
export async function serveAdmin(source: AdminSource, options: ListenOptions & AdminHandlerOptions = {}, onClose?: () => Promise<void> | void): Promise<AdminServer> {
  const { port = DEFAULT_ADMIN_PORT, host = '127.0.0.1', closeTimeoutMs = CLOSE_TIMEOUT_MS, ...handlerOptions } = options;
  let handler: AdminHandler;
  try {
    if (typeof closeTimeoutMs !== 'number' || !(closeTimeoutMs >= 0 && closeTimeoutMs <= MAX_TIMER_MS)) {
      throw new SpoolError('INVALID_OPTIONS', `Expected closeTimeoutMs to be from 0 to ${MAX_TIMER_MS} ms, got ${String(closeTimeoutMs)}`);
    }
    // The loopback Host check holds unless the caller gives allowedHosts of its own.
    const loopback = loopbackHosts(host);
    const allowedHosts = handlerOptions.allowedHosts ?? (loopback && [...loopback, ...(handlerOptions.loopbackAliases ?? [])]);
    handler = createAdminHandler(source, { ...handlerOptions, allowedHosts });
  } catch (error) {
    // What the caller opened for this server (startAdminServer's spool) closes with it.
    await onClose?.();
    throw error;
  }
  const server = createServer(handler);
  try {
    await new Promise<void>((resolveListen, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolveListen();
      });
    });
  } catch (error) {
    handler.close();
    await onClose?.();
    throw new SpoolError('INVALID_OPTIONS', `The admin server cannot listen on ${host}:${port}: ${(error as Error).message}`, { cause: error });
  }
  const bound = (server.address() as AddressInfo).port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${bound}/admin/`,
    port: bound,
    server,
    handler,
    close() {
      closing ??= (async () => {
        handler.close();
        await new Promise<void>((done) => {
          // A client that sent half a request is not idle, and would hold close() open until
          // Node's headersTimeout (a minute): past closeTimeoutMs its connection is cut.
          const cut = setTimeout(() => server.closeAllConnections(), closeTimeoutMs);
          server.close(() => {
            clearTimeout(cut);
            done();
          });
          // Idle keep-alive sockets would hold close() open until they time out.
          server.closeIdleConnections();
        });
        await onClose?.();
      })();
      return closing;
    },
  };
}

/** Options of `spool admin`. */
export interface AdminServerOptions extends ListenOptions, Pick<AdminHandlerOptions, 'token' | 'readOnly'> {
  /** The spool's SQLite file; it must exist. */
  db: string;
  /** The application's config (file path or object), so settings show as the app sees them. */
  config?: SpoolOptions['config'];
}

/**
 * `npx spool admin --db file [--port 9325]`: opens the spool file without starting it (no owner
 * lock, like the other CLI commands) and serves the dashboard, API and metrics for it. Pool use
 * and live events come only from the process that runs the spool; the page says so.
 */
export async function startAdminServer(options: AdminServerOptions): Promise<AdminServer> {
  const { db, config, ...rest } = options;
  if (!existsSync(db)) throw new SpoolError('INVALID_ARGUMENT', `There is no spool database at ${resolve(db)}`);
  const spool = createSpool({ path: db, ...(config === undefined ? {} : { config }) });
  return serveAdmin(spool, { ...rest, detached: true }, () => spool.close());
}
