/**
 * `createSqsHandler(spool, options)`: the SQS wire protocols as one `(req, res, next?)` handler for
 * `node:http`, mountable in Express (before any body parser) or anything that hands out Node's
 * request and response.
 *
 * It claims a request that carries `X-Amz-Target` or an `application/x-amz-json*` body (AWS JSON
 * 1.0), or a form body or `?Action=` (Query). Anything else goes to `next()`, or gets a JSON 404.
 * Every answer it gives is JSON, or XML under Query, including 404, 405, malformed bodies and
 * internal errors; never HTML.
 *
 * @example
 * const spool = createSpool({ path: 'spool.db' });
 * await spool.start();
 * http.createServer(createSqsHandler(spool)).listen(9324, '127.0.0.1');
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { ActionContext } from './action-context.js';
import type { SqsBackend } from './backend.js';
import { toSqsError } from './error-map.js';
import { SqsError } from './errors.js';
import { executeRequest } from './execute.js';
import { SQS_HANDLER_DEFAULTS, resolveSqsHandlerOptions, type SqsHandlerOptions } from './options.js';
import { parseJsonRequest } from './parse-json.js';
import { parseQueryRequest } from './parse-query.js';
import { queueUrlBase } from './queue-url.js';
import { renderJsonError, renderJsonResult, type RenderedResponse } from './render-json.js';
import { renderQueryError, renderQueryResult } from './render-query.js';
import { normalizeRequest } from './requests.js';
import { hostNameOf, loopbackHosts } from '../loopback.js';
import { parseAuthorization, verifySignature } from './sigv4.js';

/** A `node:http` request handler; `next` (Express/Connect style) receives requests that are not SQS calls. */
export type SqsRequestHandler = (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => void;

type Protocol = 'json' | 'query';

/** Builds the SQS handler over a spool (anything with the `SqsBackend` methods). Throws INVALID_OPTIONS. */
export function createSqsHandler(spool: SqsBackend, options: SqsHandlerOptions = {}): SqsRequestHandler {
  const resolved = resolveSqsHandlerOptions(options);
  // Long polls in progress. One listener on the shutdown signal ends them all: a listener per poll
  // would make Node warn of a leak (MaxListenersExceededWarning) past 10 concurrent polls.
  const polls = new Set<AbortController>();
  const endPolls = () => {
    for (const poll of polls) poll.abort();
  };
  resolved.signal?.addEventListener('abort', endPolls, { once: true });

  async function handle(req: IncomingMessage, res: ServerResponse, next: ((error?: unknown) => void) | undefined): Promise<void> {
    const protocol = detectProtocol(req);
    const requestId = randomUUID();
    if (protocol === undefined) {
      if (next) return next();
      req.resume();
      return send(res, renderJsonError(new SqsError('NotFound', `No SQS operation at ${req.method ?? '?'} ${pathOf(req)}: send a POST with X-Amz-Target (JSON) or a form body with Action (Query).`), requestId));
    }
    const renderError = (error: SqsError) => (protocol === 'json' ? renderJsonError(error, requestId) : renderQueryError(error, requestId));
    // A page must not drive the endpoint through a browser; a signed request cannot come from one.
    const refused = refusal(req, resolved.auth === undefined ? resolved.allowedHosts : undefined);
    if (refused !== undefined) {
      req.resume();
      return send(res, renderError(new SqsError('AccessDenied', refused)));
    }
    if (req.method !== 'POST' && !(protocol === 'query' && req.method === 'GET')) {
      req.resume();
      return send(res, renderError(new SqsError('MethodNotAllowed', `${req.method ?? '?'} is not allowed: SQS operations are POST requests.`)), { allow: 'POST' });
    }

    // Only a long poll needs to hear that its client went away; other calls are short.
    let controller: AbortController | undefined;
    const onClose = () => {
      if (!res.writableEnded) controller?.abort();
    };
    try {
      const body = await readBody(req, resolved.maxBodyBytes);
      const url = req.url ?? '/';
      if (resolved.auth) {
        // Express strips its mount path from req.url; the client signed the full path.
        const signedUrl = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? url;
        verifySignature({ method: req.method ?? 'POST', url: signedUrl, headers: req.headers, body }, { ...resolved.auth, now: resolved.now });
      }
      const { op, input } = protocol === 'json' ? parseJsonRequest(header(req, 'x-amz-target') ?? '', body) : parseQueryRequest(url, body);
      // Any page can make a browser GET a URL (an image), with no header to tell: GET reads only.
      if (req.method === 'GET' && !READ_ONLY_ACTIONS.has(op)) {
        throw new SqsError('MethodNotAllowed', `${op} changes something: send it as a POST (GET serves only ${[...READ_ONLY_ACTIONS].join(', ')}).`);
      }
      const request = normalizeRequest(op, input, { path: pathOf(req) });
      if (op === 'ReceiveMessage') {
        controller = new AbortController();
        res.on('close', onClose);
        polls.add(controller);
        // req.destroyed is already true once the body is read; the response tells whether the socket is gone.
        if (resolved.signal?.aborted || res.destroyed) controller.abort();
      }
      let urlBase: string | undefined;
      let region: string | undefined;
      const ctx: ActionContext = {
        backend: spool,
        // Computed on first use: most calls hand out no URL and no ARN.
        get urlBase() {
          return (urlBase ??= queueUrlBase(resolved.publicUrl, {
            host: header(req, 'host'),
            encrypted: (req.socket as TLSSocket).encrypted === true,
            localAddress: req.socket.localAddress,
            localPort: req.socket.localPort,
          }));
        },
        get region() {
          return (region ??= resolved.region ?? signedRegion(header(req, 'authorization')) ?? SQS_HANDLER_DEFAULTS.region);
        },
        accountId: SQS_HANDLER_DEFAULTS.accountId,
        onError: resolved.onError,
        ...(controller ? { signal: controller.signal } : {}),
      };
      const output = await executeRequest(request, ctx);
      send(res, protocol === 'json' ? renderJsonResult(output, requestId) : renderQueryResult(op, output, requestId));
    } catch (thrown) {
      const error = toSqsError(thrown);
      if (error.name === 'InternalFailure') resolved.onError(error.cause ?? thrown);
      send(res, renderError(error), error.name === 'RequestEntityTooLarge' ? { connection: 'close' } : undefined);
    } finally {
      if (controller) {
        res.off('close', onClose);
        polls.delete(controller);
      }
    }
  }

  return (req, res, next) => {
    handle(req, res, next).catch((error: unknown) => {
      // Only a failure to write the response itself gets here.
      resolved.onError(error);
      if (!res.headersSent && !res.destroyed) send(res, renderJsonError(new SqsError('InternalFailure'), randomUUID()));
      else res.destroy();
    });
  };
}

/**
 * What shows that a browser made this request for a web page, or undefined. SDKs and the CLI send
 * neither header; a browser sends `Sec-Fetch-Site` with every request (`none` only for an address
 * typed by its user) and `Origin` with every cross-origin one. Without them, any page could purge
 * a local endpoint with an `<img src="…?Action=PurgeQueue…">`, or reach it by rebinding its DNS
 * name to this machine (the endpoint answers no CORS preflight, so no page can use it anyway).
 */
function fromWebPage(req: IncomingMessage): string | undefined {
  const site = header(req, 'sec-fetch-site');
  if (site !== undefined && site !== 'none') return `Sec-Fetch-Site: ${site}`;
  const origin = header(req, 'origin');
  return origin === undefined ? undefined : `Origin: ${origin}`;
}

/**
 * Why a request is refused as one a web page made through a browser, or undefined: it carries a
 * browser's page headers, or (with `allowedHosts`: unsigned requests) it reached a loopback
 * address under a name that is not this endpoint's.
 */
function refusal(req: IncomingMessage, allowedHosts: readonly string[] | undefined): string | undefined {
  const page = fromWebPage(req);
  if (page !== undefined) return `SQS calls from a web page are refused (${page}): a page must not purge or delete queues through a browser.`;
  const host = allowedHosts === undefined ? undefined : foreignHost(req, allowedHosts);
  if (host === undefined) return undefined;
  return `Host "${host}" is not a name of this endpoint: on a loopback address only loopback names, publicUrl's host and allowedHosts are served (a web page that rebinds its DNS name to this machine must not reach it).`;
}

/** The actions a Query GET may run: they change nothing. */
const READ_ONLY_ACTIONS: ReadonlySet<string> = new Set(['ListQueues', 'GetQueueUrl', 'GetQueueAttributes', 'ListQueueTags', 'ListDeadLetterSourceQueues']);

/**
 * The Host of a request that reached a loopback address under a name that is not this
 * endpoint's, or undefined: a page whose DNS name rebinds to this machine names its own host.
 * Served: the loopback names, `publicUrl`'s host, and `allowedHosts`.
 */
function foreignHost(req: IncomingMessage, allowedHosts: readonly string[]): string | undefined {
  const loopback = loopbackHosts(req.socket.localAddress ?? '');
  if (loopback === undefined) return undefined;
  const host = header(req, 'host') ?? '';
  const name = hostNameOf(host);
  return loopback.includes(name) || allowedHosts.includes(name) ? undefined : host;
}

/** The region of the SigV4 scope when it is a hostname label (what an SDK signs with); else undefined, so ARNs stay parseable. */
function signedRegion(authorization: string | undefined): string | undefined {
  const region = parseAuthorization(authorization)?.region;
  return region !== undefined && /^[A-Za-z0-9-]{1,63}$/.test(region) ? region : undefined;
}

/** JSON when `X-Amz-Target` or an `application/x-amz-json*` type is there; Query for a form body or `?Action=`. */
function detectProtocol(req: IncomingMessage): Protocol | undefined {
  if (req.headers['x-amz-target'] !== undefined) return 'json';
  const type = (header(req, 'content-type') ?? '').toLowerCase();
  if (type.startsWith('application/x-amz-json')) return 'json';
  if (type.startsWith('application/x-www-form-urlencoded')) return 'query';
  const url = req.url ?? '';
  const queryAt = url.indexOf('?');
  if (queryAt !== -1 && new URLSearchParams(url.slice(queryAt + 1)).has('Action')) return 'query';
  return undefined;
}

/** The whole body, or RequestEntityTooLarge past `limit` (the rest is discarded, the connection closed). */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  if (req.readableEnded) {
    return Promise.reject(new SqsError('InternalFailure', 'The request body was already read by another middleware: mount the SQS handler before any body parser.'));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.resume();
        reject(new SqsError('RequestEntityTooLarge', `The request body exceeds ${limit} bytes.`));
      } else chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(new SqsError('SerializationException', `The request body could not be read: ${error.message}`));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

function send(res: ServerResponse, rendered: RenderedResponse, extra?: Record<string, string>): void {
  if (res.headersSent || res.destroyed) return;
  const body = Buffer.from(rendered.body, 'utf8');
  res.writeHead(rendered.status, { ...rendered.headers, ...extra, 'content-length': String(body.length) });
  res.end(body);
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function pathOf(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const queryAt = url.indexOf('?');
  return queryAt === -1 ? url : url.slice(0, queryAt);
}
