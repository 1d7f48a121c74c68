/** Options of the SQS handler and server, their defaults in one place, and their validation. */
import { configuredHostName, hostNameOf } from '../loopback.js';
import { SpoolError } from '../index.js';

/** Strict-auth mode: only requests signed (SigV4) with one of these keys are served. */
export interface SqsAuthOptions {
  /** Access key id → secret access key, e.g. `{ "AKIDEXAMPLE": "secret" }`. */
  keys: Record<string, string>;
  /** Largest distance between the request's `x-amz-date` and the server clock, in seconds (default 900). */
  maxSkewSec?: number;
}

/** Options of `createSqsHandler`. */
export interface SqsHandlerOptions {
  /**
   * Base of the queue URLs handed out, e.g. `http://queues.internal:9324` or `http://host/sqs`
   * when the handler is mounted under a path. Default: `http://<Host header>`.
   */
  publicUrl?: string;
  /** Region in ARNs. Default: the region of the request's SigV4 scope, else `us-east-1`. */
  region?: string;
  /** Verify SigV4 signatures (default: accept any request, signed or not). */
  auth?: SqsAuthOptions;
  /** Largest request body, in bytes (default 8 MiB: a full batch of 10 with base64 and escaping). */
  maxBodyBytes?: number;
  /** When aborted, every long poll in progress returns at once with no messages (for shutdown). */
  signal?: AbortSignal;
  /** Epoch ms now, for the SigV4 clock-skew check (default Date.now). */
  now?: () => number;
  /** Called with every failure answered as InternalFailure (a bug or a storage fault), for logging. */
  onError?: (error: unknown) => void;
  /**
   * More Host names served on a loopback address, besides the loopback names and `publicUrl`'s
   * host (an unsigned request naming any other is refused: DNS rebinding). Behind a reverse proxy
   * on this machine, or for a name mapped to 127.0.0.1 (`host.docker.internal`), list it here.
   */
  allowedHosts?: string[];
}

/** The defaults of `SqsHandlerOptions`. */
export const SQS_HANDLER_DEFAULTS = {
  region: 'us-east-1',
  maxBodyBytes: 8 * 1024 * 1024,
  maxSkewSec: 900,
  accountId: '000000000000',
} as const;

/** Options with every default applied. */
export interface ResolvedSqsHandlerOptions {
  publicUrl: string | undefined;
  region: string | undefined;
  auth: { keys: Readonly<Record<string, string>>; maxSkewSec: number } | undefined;
  maxBodyBytes: number;
  signal: AbortSignal | undefined;
  now: () => number;
  onError: (error: unknown) => void;
  /** Host names served on a loopback address besides the loopback ones: publicUrl's host and allowedHosts. */
  allowedHosts: string[];
}

const REGION = /^[a-z0-9-]{1,64}$/;

/** Applies defaults and validates; throws SpoolError INVALID_OPTIONS naming the bad option. */
export function resolveSqsHandlerOptions(options: SqsHandlerOptions = {}): ResolvedSqsHandlerOptions {
  const fail = (message: string) => new SpoolError('INVALID_OPTIONS', message);
  let publicUrl: string | undefined;
  if (options.publicUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(options.publicUrl);
    } catch {
      throw fail(`Expected \`publicUrl\` to be an http(s) URL, got ${JSON.stringify(options.publicUrl)}`);
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search !== '' || url.hash !== '' || url.username !== '') {
      throw fail(`Expected \`publicUrl\` to be an http(s) URL without query, fragment or credentials, got ${JSON.stringify(options.publicUrl)}`);
    }
    publicUrl = `${url.origin}${url.pathname}`.replace(/\/+$/, '');
  }
  if (options.region !== undefined && !REGION.test(options.region)) {
    throw fail(`Expected \`region\` to be a region name such as us-east-1, got ${JSON.stringify(options.region)}`);
  }
  const maxBodyBytes = options.maxBodyBytes ?? SQS_HANDLER_DEFAULTS.maxBodyBytes;
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes < 1024) {
    throw fail(`Expected \`maxBodyBytes\` to be an integer ≥ 1024, got ${String(options.maxBodyBytes)}`);
  }
  let auth: ResolvedSqsHandlerOptions['auth'];
  if (options.auth !== undefined) {
    const { keys } = options.auth;
    if (typeof keys !== 'object' || keys === null || Array.isArray(keys) || Object.keys(keys).length === 0) {
      throw fail('Expected `auth.keys` to be a non-empty object of access key id → secret');
    }
    for (const [id, secret] of Object.entries(keys)) {
      if (!/^[A-Za-z0-9_+=,.@-]{1,128}$/.test(id) || typeof secret !== 'string' || secret === '') {
        throw fail(`Expected \`auth.keys\` to map access key ids to non-empty secrets, got key ${JSON.stringify(id)}`);
      }
    }
    const maxSkewSec = options.auth.maxSkewSec ?? SQS_HANDLER_DEFAULTS.maxSkewSec;
    if (!Number.isFinite(maxSkewSec) || maxSkewSec <= 0) throw fail(`Expected \`auth.maxSkewSec\` to be > 0, got ${String(maxSkewSec)}`);
    auth = { keys: Object.assign(Object.create(null) as Record<string, string>, keys), maxSkewSec };
  }
  const allowedHosts = publicUrl === undefined ? [] : [hostNameOf(new URL(publicUrl).host)];
  if (options.allowedHosts !== undefined) {
    if (!Array.isArray(options.allowedHosts)) throw fail('Expected `allowedHosts` to be an array of host names');
    for (const entry of options.allowedHosts as unknown[]) {
      const name = typeof entry === 'string' ? configuredHostName(entry) : undefined;
      if (name === undefined) throw fail(`Expected \`allowedHosts\` to hold host names without ports (IPv6 in brackets), got ${JSON.stringify(entry)}`);
      allowedHosts.push(name);
    }
  }
  return {
    publicUrl,
    region: options.region,
    auth,
    maxBodyBytes,
    signal: options.signal,
    now: options.now ?? Date.now,
    onError: options.onError ?? (() => {}),
    allowedHosts,
  };
}
