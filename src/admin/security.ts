/**
 * Who may do what: the token (constant-time), read-only mode, and the CSRF rules for changes
 * (a JSON content type, and an Origin that is the request's own).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { hostNameOf } from '../loopback.js';
import { HttpError } from './http.js';
import type { ResolvedAdminOptions } from './options.js';

/** True for methods that change something (anything but GET, HEAD and OPTIONS). */
export function isChange(method: string | undefined): boolean {
  return method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS';
}

// Hashing first gives both sides one length, so timingSafeEqual never leaks the token's length.
const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** Throws 401 unless the request carries the token as a Bearer header or `?token=`. */
export function checkToken(req: IncomingMessage, url: URL, token: string | undefined): void {
  if (token === undefined) return;
  const header = req.headers.authorization;
  const bearer = typeof header === 'string' && /^Bearer\s+/i.test(header) ? header.replace(/^Bearer\s+/i, '') : undefined;
  const given = bearer ?? url.searchParams.get('token') ?? undefined;
  // A query string reads '+' as a space: `?token=ab+cd` typed into the address bar (a base64
  // token, say) arrives as "ab cd", and the page passes that on to its API calls and stream.
  const expected = digest(token);
  const matches = (text: string) => timingSafeEqual(digest(text), expected);
  if (given === undefined || !(matches(given) || (given.includes(' ') && matches(given.replaceAll(' ', '+'))))) {
    throw new HttpError(401, 'UNAUTHORIZED', given === undefined ? 'This admin endpoint needs a token (Authorization: Bearer … or ?token=)' : 'The token is wrong');
  }
}

/** Throws 403 when the Host header names a host that is not allowed (DNS rebinding). */
export function checkHost(req: IncomingMessage, allowedHosts: readonly string[] | undefined): void {
  if (!allowedHosts) return;
  const host = hostNameOf(req.headers.host ?? '');
  if (!allowedHosts.includes(host)) throw new HttpError(403, 'FORBIDDEN_HOST', `Host ${JSON.stringify(host)} is not allowed`);
}

/**
 * A change must be allowed (not read-only), carry JSON, and come from this origin. Browsers send
 * `Origin` on every cross-site POST/PATCH/DELETE, so one that differs from the request's own host
 * is refused; a request without it (curl, a script) is not a browser's and may pass.
 */
export function checkChange(req: IncomingMessage, options: ResolvedAdminOptions): void {
  if (options.readOnly) throw new HttpError(403, 'READ_ONLY', 'The admin handler is read-only: changes are refused');
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new HttpError(415, 'UNSUPPORTED_MEDIA_TYPE', `Changes need Content-Type: application/json, got ${JSON.stringify(type || 'none')}`);
  }
  const origin = req.headers.origin;
  if (origin !== undefined) {
    const own = [`http://${req.headers.host ?? ''}`, `https://${req.headers.host ?? ''}`];
    if (!own.includes(origin) && !options.allowedOrigins.includes(origin)) {
      throw new HttpError(403, 'FORBIDDEN_ORIGIN', `Changes from origin ${JSON.stringify(origin)} are refused`);
    }
  } else {
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none') {
      throw new HttpError(403, 'FORBIDDEN_ORIGIN', `Changes from a ${site} page are refused`);
    }
  }
}
