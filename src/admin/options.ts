/** The admin handler's options and their defaults, in one place. */
import { MAX_TIMER_MS } from '../clock.js';
import { configuredHostName } from '../loopback.js';
import { SpoolError } from '../errors.js';

/** Options of createAdminHandler. */
export interface AdminHandlerOptions {
  /** Required on every request (page, API, SSE, /metrics) as `Authorization: Bearer …` or `?token=`. */
  token?: string;
  /** Refuse every change with 403 (default false). */
  readOnly?: boolean;
  /**
   * True when this process does not run the spool (`spool admin --db` on a file another process
   * owns): pool use and live events then only come from the owner, and the page says so.
   */
  detached?: boolean;
  /** Origins, besides the request's own, allowed to make changes (e.g. behind a proxy). */
  allowedOrigins?: string[];
  /**
   * When set, requests whose Host names another host get 403 (guards against DNS rebinding).
   * Unset, with no token either, a request that reached a loopback address must name a loopback
   * host: behind a reverse proxy on this machine, give the public names here (or a token).
   */
  allowedHosts?: string[];
  /**
   * Without `allowedHosts` and a token, more names a request that reached a loopback address may
   * give as its Host besides the loopback ones (`spool serve` passes `--public-url`'s host and
   * `--allowed-hosts`).
   */
  loopbackAliases?: string[];
  /** SSE heartbeat (a comment line) interval, ms (default 15,000). */
  heartbeatMs?: number;
  /** How often SSE clients get an `admin.tick` with counts and the last second's rates, ms (default 1,000). */
  tickMs?: number;
  /** Per SSE connection: message events beyond this many per second are dropped and counted (default 500). */
  maxEventsPerSecond?: number;
}

/** The options with every default filled in. */
export interface ResolvedAdminOptions {
  token: string | undefined;
  readOnly: boolean;
  detached: boolean;
  allowedOrigins: string[];
  allowedHosts: string[] | undefined;
  loopbackAliases: string[];
  heartbeatMs: number;
  tickMs: number;
  maxEventsPerSecond: number;
}

/** Fills in the defaults; throws INVALID_OPTIONS on an option that cannot work. */
export function resolveAdminOptions(options: AdminHandlerOptions = {}): ResolvedAdminOptions {
  const positive = (name: string, value: number | undefined, fallback: number, max: number) => {
    const v = value ?? fallback;
    if (!Number.isInteger(v) || v < 1 || v > max) {
      throw new SpoolError('INVALID_OPTIONS', `Expected admin option ${name} to be an integer from 1 to ${max}, got ${String(value)}`);
    }
    return v;
  };
  const hostList = (name: string, value: unknown): string[] | undefined => {
    if (value === undefined) return undefined;
    const names = Array.isArray(value) ? value.map((entry: unknown) => (typeof entry === 'string' ? configuredHostName(entry) : undefined)) : [undefined];
    if (names.some((n) => n === undefined)) throw new SpoolError('INVALID_OPTIONS', `Expected admin option ${name} to be an array of host names without ports (IPv6 in brackets)`);
    return names as string[];
  };
  if (options.token !== undefined && (typeof options.token !== 'string' || options.token.length === 0)) {
    throw new SpoolError('INVALID_OPTIONS', 'Expected admin option token to be a non-empty string');
  }
  return {
    token: options.token,
    readOnly: options.readOnly ?? false,
    detached: options.detached ?? false,
    allowedOrigins: options.allowedOrigins ?? [],
    allowedHosts: hostList('allowedHosts', options.allowedHosts),
    loopbackAliases: hostList('loopbackAliases', options.loopbackAliases) ?? [],
    heartbeatMs: positive('heartbeatMs', options.heartbeatMs, 15_000, MAX_TIMER_MS),
    tickMs: positive('tickMs', options.tickMs, 1000, MAX_TIMER_MS),
    maxEventsPerSecond: positive('maxEventsPerSecond', options.maxEventsPerSecond, 500, Number.MAX_SAFE_INTEGER),
  };
}
