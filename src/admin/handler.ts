/**
 * createAdminHandler(): one `(req, res, next?)` request handler for node:http, Express or Hono
 * (through @hono/node-server's incoming/outgoing). Mounted at a server's root it serves the
 * dashboard at /admin/, the JSON API under /admin/api/, SSE at /admin/api/events and GET /metrics;
 * every other path goes to `next` (or gets a 404).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { createApiRoutes, type Route } from './api.js';
import { serveAsset, serveIndex } from './assets.js';
import { createEventStream, STREAM_TYPES, type StreamFilter } from './event-stream.js';
import { HttpError, readJsonBody, sendError } from './http.js';
import { registerMetrics } from './metrics.js';
import { resolveAdminOptions, type AdminHandlerOptions } from './options.js';
import { checkChange, checkHost, checkToken, isChange } from './security.js';
import { loopbackHosts } from '../loopback.js';
import { promClient } from './prom.js';
import { createSeriesRecorder } from './series.js';
import type { AdminSource } from './source.js';

/** The handler, plus `close()` to end its SSE connections, timers and subscriptions. */
export interface AdminHandler {
  (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void): void;
  /** Ends every SSE connection and stops recording; the spool itself is left open. */
  close(): void;
  /** The handler's own Prometheus registry (what GET /metrics serves). */
  readonly registry: Registry;
}

/**
 * Creates the admin handler over a spool (any object with the Spool methods it uses, AdminSource).
 * @example
 * const admin = createAdminHandler(spool, { token: process.env.ADMIN_TOKEN });
 * http.createServer(admin).listen(9325, '127.0.0.1');
 */
export function createAdminHandler(source: AdminSource, options?: AdminHandlerOptions): AdminHandler {
  const opts = resolveAdminOptions(options);
  const recorder = createSeriesRecorder(source.events$);
  const stream = createEventStream(source, recorder, opts);
  const registry = new (promClient().Registry)();
  const metrics = registerMetrics(source, registry);
  const routes = createApiRoutes(source, recorder, opts);

  /** The Host names served to a request that reached a loopback address; undefined for any other. */
  function onLoopback(req: IncomingMessage): string[] | undefined {
    const loopback = loopbackHosts(req.socket.localAddress ?? '');
    return loopback === undefined ? undefined : [...loopback, ...opts.loopbackAliases];
  }

  async function handle(req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) {
    let url: URL;
    try {
      // An origin-form target ('/…') is read as a path even when it starts with '//', as the app's
      // router reads it: relative to a base, '//x/admin/api/…' would be host x and /admin/api/….
      const target = req.url ?? '/';
      url = new URL(target.startsWith('/') ? `http://admin.invalid${target}` : target, 'http://admin.invalid');
    } catch {
      throw new HttpError(400, 'INVALID_ARGUMENT', 'The request URL is malformed');
    }
    const path = url.pathname;
    if (path !== '/metrics' && path !== '/admin' && !path.startsWith('/admin/')) {
      if (next) return next();
      throw new HttpError(404, 'NOT_FOUND', `Nothing is served at ${path}`);
    }
    // URL parsing resolves dot segments ('..', '%2e%2e') and reads a backslash as '/', but the app's own
    // router and guards see the path as sent: `/x/../admin/api/…` would slip past a login the app
    // put on /admin. Such a path is refused rather than served as what it resolves to.
    const sent = (req.url ?? '/').split('?', 1)[0]!;
    if (sent.includes('\\') || /(?:^|\/)(?:\.|%2e){1,2}(?:\/|$)/i.test(sent)) {
      throw new HttpError(400, 'INVALID_ARGUMENT', 'The request path holds dot segments (. or ..) or a backslash');
    }
    // With neither a token nor allowedHosts, a request that reached a loopback address must name a
    // loopback host: a page whose DNS name rebinds to this machine would otherwise drive the API.
    checkHost(req, opts.allowedHosts ?? (opts.token === undefined ? onLoopback(req) : undefined));
    checkToken(req, url, opts.token);
    const method = req.method ?? 'GET';
    const head = method === 'HEAD';

    if (path === '/metrics' || path === '/admin' || path === '/admin/' || path.startsWith('/admin/assets/') || path === '/admin/api/events') {
      if (method !== 'GET' && !head) throw new HttpError(405, 'METHOD_NOT_ALLOWED', `${path} answers GET only`);
      if (path === '/metrics') {
        const text = await registry.metrics();
        res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' });
        res.end(head ? undefined : text);
      } else if (path === '/admin') {
        // Relative, so it also works when the handler is mounted under a prefix.
        res.writeHead(301, { location: `admin/${url.search}` });
        res.end();
      } else if (path === '/admin/') {
        await serveIndex(res, url.searchParams.get('token'), head);
      } else if (path === '/admin/api/events') {
        stream.attach(req, res, await streamFilter(url));
      } else {
        await serveAsset(res, path.slice('/admin/assets/'.length), head);
      }
      return;
    }

    if (!path.startsWith('/admin/api/')) throw new HttpError(404, 'NOT_FOUND', `Nothing is served at ${path}`);
    const sub = path.slice('/admin/api'.length);
    let matched: { route: Route; params: string[] } | undefined;
    let otherMethod = false;
    for (const route of routes) {
      const m = route.pattern.exec(sub);
      if (!m) continue;
      // HEAD is GET without the body (RFC 9110), as for /metrics, the page and the stream.
      if (route.method !== method && !(head && route.method === 'GET')) {
        otherMethod = true;
        continue;
      }
      matched = { route, params: m.slice(1) };
      break;
    }
    if (!matched) {
      if (otherMethod) throw new HttpError(405, 'METHOD_NOT_ALLOWED', `${method} is not allowed on ${path}`);
      throw new HttpError(404, 'NOT_FOUND', `No admin API at ${path}`);
    }
    if (isChange(method)) checkChange(req, opts);
    let body: Promise<unknown> | undefined;
    const result = await matched.route.run({ req, url, params: matched.params, body: () => (body ??= readJsonBody(req)) });
    const text = JSON.stringify(result ?? null);
    res.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
    res.end(head ? undefined : text);
  }

  async function streamFilter(url: URL): Promise<StreamFilter> {
    const filter: StreamFilter = { queues: [], types: [] };
    for (const [key, value] of url.searchParams) {
      const list = value.split(',').filter((v) => v !== '');
      if (key === 'queue') filter.queues.push(...list);
      else if (key === 'types') filter.types.push(...list);
      else if (key !== 'token') throw new HttpError(400, 'INVALID_ARGUMENT', `Unknown query parameter ${JSON.stringify(key)}; expected queue, types`, { field: key });
    }
    // A mistyped type would leave a stream of heartbeats only.
    const unknown = filter.types.find((type) => !STREAM_TYPES.includes(type));
    if (unknown !== undefined) throw new HttpError(400, 'INVALID_ARGUMENT', `Unknown event type ${JSON.stringify(unknown)} in types; expected ${STREAM_TYPES.join(', ')}`, { field: 'types' });
    // Queue names follow the library's rule (INVALID_QUEUE_NAME).
    for (const queue of filter.queues) await source.browse({ queue, limit: 1 });
    return filter;
  }

  const handler = ((req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => {
    handle(req, res, next).catch((error: unknown) => {
      // Drain what is left of the body, so the connection can be reused for the error reply.
      req.resume();
      sendError(res, error);
    });
  }) as AdminHandler;
  handler.close = () => {
    stream.close();
    recorder.stop();
    metrics.stop();
  };
  Object.defineProperty(handler, 'registry', { value: registry });
  return handler;
}
