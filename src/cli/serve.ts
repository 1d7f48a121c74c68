/**
 * `spool serve`: starts the spool (owner lock), serves the SQS API with the admin handler beside
 * it on one port, prints where, and runs until SIGINT or SIGTERM, then closes the server and the
 * spool and resolves with exit status 0. A taken port or a LOCKED file resolves with 1 and a
 * message, after releasing what it had opened.
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createSpool, createSqsServer, SpoolError, type Spool, type SqsServer } from '../index.js';
import { createAdminHandler } from '../admin/handler.js';
import { hostNameOf, loopbackHosts } from '../loopback.js';
import type { CliCommand } from './args.js';
import type { CliIo } from './run.js';

type ServeCommand = Extract<CliCommand, { name: 'serve' }>;

/** The signals that stop `spool serve` gracefully. */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/** Runs `spool serve` until a stop signal; resolves with the exit status. */
export async function serve(command: ServeCommand, io: CliIo, describeError: (error: unknown) => string): Promise<number> {
  // Listening for the signals first: one that arrives during start-up still stops cleanly.
  let stopRequested: (signal: string) => void = () => {};
  const stopped = new Promise<string>((resolve) => (stopRequested = resolve));
  const onSignal = (signal: NodeJS.Signals) => stopRequested(signal);
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);

  let spool: Spool | undefined;
  let sqs: SqsServer | undefined;
  let admin: { close(): void } | undefined;
  let status = 0;
  try {
    const authKeys = command.authKeys === undefined ? undefined : readAuthKeys(command.authKeys);
    spool = createSpool({ path: command.db, ...(command.config === undefined ? {} : { config: command.config }) });
    spool.events$.subscribe((event) => {
      if (event.type === 'error') io.stderr(`spool: ${event.code}: ${event.message}\n`);
    });
    await spool.start();
    const mounted = await mountAdmin(spool, command, io);
    admin = mounted;
    sqs = createSqsServer(spool, {
      host: command.host,
      port: command.port,
      ...(command.publicUrl === undefined ? {} : { publicUrl: command.publicUrl }),
      ...(command.allowedHosts === undefined ? {} : { allowedHosts: command.allowedHosts }),
      ...(command.region === undefined ? {} : { region: command.region }),
      ...(authKeys === undefined ? {} : { authKeys }),
      ...(mounted ? { fallback: mounted.handle } : {}),
      onError: (error) => io.stderr(`spool serve: InternalFailure: ${describeError(error)}\n`),
    });
    let endpoint: string;
    try {
      endpoint = (await sqs.listen()).url;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const why = code === 'EADDRINUSE' ? 'the port is taken (EADDRINUSE)' : code === 'EACCES' ? 'permission denied (EACCES)' : (error as Error).message;
      throw new SpoolError('INVALID_OPTIONS', `spool serve cannot listen on ${command.host}:${command.port}: ${why}`, { cause: error });
    }
    io.stdout(`SQS endpoint: ${endpoint}\n`);
    if (mounted) io.stdout(`Admin: ${endpoint.replace(/\/$/, '')}/admin/\n`);
    const signal = await stopped;
    io.stderr(`spool serve: ${signal}, stopping\n`);
  } catch (error) {
    io.stderr(`${describeError(error)}\n`);
    status = 1;
  } finally {
    for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
    try {
      // The dashboard's event streams end first: the server's close waits for open responses.
      // Long polls answer empty, so no message stays claimed by a client that went away.
      admin?.close();
      await sqs?.close();
      await spool?.close();
    } catch (error) {
      io.stderr(`${describeError(error)}\n`);
      status = 1;
    }
  }
  return status;
}

/** `--auth-keys`: a JSON object of access key id → secret. */
function readAuthKeys(path: string): Record<string, string> {
  let keys: unknown;
  try {
    keys = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new SpoolError('INVALID_OPTIONS', `--auth-keys ${path} is not a readable JSON file: ${(error as Error).message}`, { cause: error });
  }
  if (keys === null || typeof keys !== 'object' || Array.isArray(keys) || Object.values(keys).some((v) => typeof v !== 'string')) {
    throw new SpoolError('INVALID_OPTIONS', `--auth-keys ${path} must hold a JSON object of access key id → secret, e.g. {"AKID": "secret"}`);
  }
  return keys as Record<string, string>;
}

/**
 * The admin dashboard, API and metrics beside SQS on the same port (under /admin/ and /metrics),
 * guarded by `--token` when given. Not mounted under `--auth-keys` without a token: strict auth
 * must not leave an unsigned way to change settings or delete messages. Serve runs without it
 * (saying so) then, or if it cannot be built.
 */
async function mountAdmin(spool: Spool, command: ServeCommand, io: CliIo): Promise<{ handle: (req: IncomingMessage, res: ServerResponse) => void; close(): void } | undefined> {
  if (command.authKeys !== undefined && command.token === undefined) {
    io.stderr('spool serve: --auth-keys without --token: the dashboard, its API and /metrics are not served (give --token, --token-file or SPOOL_ADMIN_TOKEN to serve them)\n');
    return undefined;
  }
  try {
    // On loopback, only loopback Host headers reach the admin API (a rebound DNS name does not).
    const loopback = loopbackHosts(command.host);
    // A --public-url that is not a URL is refused by the SQS server, just after.
    const publicHost = command.publicUrl !== undefined && URL.canParse(command.publicUrl) ? [hostNameOf(new URL(command.publicUrl).host)] : [];
    const aliases = [...publicHost, ...(command.allowedHosts ?? [])];
    if (loopback === undefined && command.token === undefined) io.stderr(warnOpenAdmin('spool serve', command.host));
    // On a loopback host every request is checked; on another, those that arrive on a loopback
    // address (the handler's own check), with the same names the SQS side serves.
    const handler = createAdminHandler(spool, {
      ...(loopback === undefined ? { loopbackAliases: aliases } : { allowedHosts: [...loopback, ...aliases] }),
      ...(command.token === undefined ? {} : { token: command.token }),
    });
    return {
      handle: (req, res) => handler(req, res),
      close() {
        handler.close();
      },
    };
  } catch (error) {
    io.stderr(`spool serve: the admin handler is not available (${(error as Error).message}); serving SQS only\n`);
    return undefined;
  }
}

/** The warning for an admin API on a non-loopback interface without a token. */
export function warnOpenAdmin(command: string, host: string): string {
  return `${command}: warning: the admin API on ${host} has no --token: anyone who can connect can read its messages, change settings and delete messages\n`;
}
