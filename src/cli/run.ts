/** The `spool` command line: parses, runs one command, prints JSON on stdout and logs on stderr. */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Spool } from '../index.js';
import { isSpoolError, SpoolError } from '../errors.js';
import { isBusy, sqliteCode } from '../db/transaction.js';
import { parseCli, USAGE, UsageError, type CliCommand } from './args.js';
import type { Progress } from './progress.js';
import { packageVersion } from './version.js';

/** Where the CLI writes: stdout carries only the JSON result, stderr everything else. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Whether stdout is a terminal: a purge then needs --yes (default false: a pipe). */
  stdoutIsTTY?: boolean;
  /** Makes a progress bar for long operations; given only when stderr is a terminal. */
  progress?: () => Progress;
  /** Reads standard input to its end, or to just past `limit` bytes (`spool send … -`). */
  stdin?: (limit: number) => Promise<Buffer>;
}

/**
 * What is at `path`: nothing, an empty file, a spool's database (drizzle's migrations table),
 * another SQLite database ('foreign'), or a file another connection holds locked ('locked'). Only
 * reads; any other file SQLite cannot read counts as a spool's, so that the open reports its coded
 * error.
 */
async function fileKind(path: string): Promise<'missing' | 'empty' | 'spool' | 'foreign' | 'locked'> {
  let stat: ReturnType<typeof statSync>;
  try {
    stat = statSync(path, { throwIfNoEntry: false });
  } catch (error) {
    // A path no file can be at (through a file: ENOTDIR; a symlink loop: ELOOP; ENAMETOOLONG;
    // EACCES): the operator's mistake, named, not a crash with a stack trace.
    const { code, message } = error as NodeJS.ErrnoException;
    throw new SpoolError('INVALID_ARGUMENT', `There is no spool database at ${resolve(path)}: ${code ?? message}`, { cause: error });
  }
  if (stat === undefined) return 'missing';
  if (stat.isFile() && stat.size === 0) return 'empty';
  const { default: Database } = await import('better-sqlite3');
  let db: InstanceType<typeof Database> | undefined;
  try {
    // Not `readonly`: a read-only connection to a WAL database cannot remove the -wal file it
    // made at close. A plain one that only reads leaves the file as the command's own open would.
    db = new Database(path, { fileMustExist: true, timeout: FIRST_LOOK_TIMEOUT_MS });
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
    if (tables.length === 0) return 'empty';
    // drizzle-orm's default table: another drizzle app's database has one too, without Spool's rows.
    const { foreignMigrations } = await import('../db/migrate.js');
    return tables.includes('__drizzle_migrations') && !foreignMigrations(db) ? 'spool' : 'foreign';
  } catch (error) {
    // A spool's file is in WAL mode, where this read never waits on a writer: a lock here is
    // another program's rollback journal, and guessing "spool" would migrate its file once freed.
    if (isBusy(error)) return 'locked';
    // Anything else (not a database, unreadable) is left to the spool's own open, which names it.
    return 'spool';
  } finally {
    db?.close();
  }
}

/**
 * Why the spool a `settings update` would create refuses `patch`, or undefined: asked before the
 * file is made, so a refused patch leaves no new file behind.
 */
async function firstPatchRefusal(patch: string, config: string | undefined): Promise<string | undefined> {
  const [{ parseJson }, { loadConfig }, { checkFirstPatch }] = await Promise.all([import('./commands.js'), import('../options.js'), import('../settings/store.js')]);
  try {
    checkFirstPatch(loadConfig(config), parseJson(patch, 'The patch', 'INVALID_SETTINGS'));
    return undefined;
  } catch (error) {
    return describeError(error);
  }
}

/** How long the first look at a file waits on another connection's lock. */
const FIRST_LOOK_TIMEOUT_MS = 1000;

/**
 * A payload from standard input: no argument-length limit (about 128 KiB), and bytes that are not
 * UTF-8 are refused rather than replaced with U+FFFD as they are in an argument.
 */
async function readStdin(io: CliIo): Promise<string> {
  if (!io.stdin) throw new SpoolError('INVALID_ARGUMENT', 'spool send - reads the payload from standard input, which this caller does not give');
  // At most the largest maxPayloadBytes a spool may have; the spool's own limit applies after.
  const { MAX_PAYLOAD_BYTES_LIMIT: limit } = await import('../options.js');
  const bytes = await io.stdin(limit);
  if (bytes.length > limit) {
    throw new SpoolError('INVALID_PAYLOAD', `The payload on standard input is over ${limit} bytes, the largest maxPayloadBytes`, {
      details: { maxBytes: limit, reason: 'size' },
    });
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new SpoolError('INVALID_PAYLOAD', 'The payload on standard input is not UTF-8 text', { details: { reason: 'charset' } });
  }
}

/** Runs the command line `argv` (without node and the script); resolves with the exit status. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  let command: CliCommand;
  try {
    command = parseCli(argv);
  } catch (error) {
    io.stderr(`${describeError(error)}\nRun spool --help for usage.\n`);
    return error instanceof UsageError ? 2 : 1;
  }
  if (command.name === 'help') {
    io.stdout(`${USAGE}\n`);
    return 0;
  }
  if (command.name === 'version') {
    io.stdout(`${packageVersion()}\n`);
    return 0;
  }
  // A person at a terminal confirms a purge; a script (stdout piped) has decided already.
  if (command.name === 'purge' && io.stdoutIsTTY && !command.yes) {
    io.stderr(
      `INVALID_ARGUMENT: spool purge deletes every ${command.state} message of ${JSON.stringify(command.queue)} for good; run it again with --yes to confirm.\n`,
    );
    return 2;
  }
  // Reading a mistyped path would silently create an empty spool, and a wrong one would turn
  // another program's database into a spool: only update and serve may create one, and none adopts
  // a database that is not a spool's.
  const creates = command.name === 'settings update' || command.name === 'serve';
  let found: Awaited<ReturnType<typeof fileKind>>;
  try {
    found = await fileKind(command.db);
  } catch (error) {
    io.stderr(`${describeError(error)}\n`);
    return 1;
  }
  if (found === 'locked') {
    io.stderr(`STORAGE_BUSY: ${resolve(command.db)} is locked by another connection, which a spool's file never is for a read; nothing was changed\n`);
    return 1;
  }
  if (found === 'foreign' || (!creates && found !== 'spool')) {
    const why = found === 'foreign' ? 'is a database that is not a spool (it has tables, but none of Spool\'s migrations); nothing was changed' : found === 'empty' ? 'is empty (no tables)' : 'does not exist';
    io.stderr(`INVALID_ARGUMENT: There is no spool database at ${resolve(command.db)}: the file ${why}\n`);
    return 1;
  }
  if (command.name === 'serve') {
    const { serve } = await import('./serve.js');
    return serve(command, io, describeError);
  }

  if (command.name === 'admin') return runAdmin(command, io);
  if (command.name === 'send' && command.payload === '-') {
    try {
      command = { ...command, payload: await readStdin(io) };
    } catch (error) {
      io.stderr(`${describeError(error)}\n`);
      return 1;
    }
  }

  if (command.name === 'settings update' && (found === 'missing' || found === 'empty')) {
    const refused = await firstPatchRefusal(command.patch, command.config);
    if (refused !== undefined) {
      io.stderr(`${refused}\n`);
      return 1;
    }
  }

  let spool: Spool | undefined;
  let status = 0;
  try {
    // Loaded only now: --help, --version and usage errors answer without loading the library.
    const [{ createSpool }, { runCommand }] = await Promise.all([import('../index.js'), import('./commands.js')]);
    // Never started: no owner lock, so this works beside the process that runs the spool.
    spool = createSpool({ path: command.db, ...(command.config === undefined ? {} : { config: command.config }) });
    spool.events$.subscribe((event) => {
      if (event.type === 'error') io.stderr(`spool: ${event.code}: ${event.message}\n`);
      else if (event.type === 'settings.changed') io.stderr(`spool: settings changed (version ${event.version})\n`);
    });
    const result = await runCommand(spool, command, io.progress ? { progress: io.progress() } : {});
    io.stdout(`${JSON.stringify(result, null, 2)}\n`);
  } catch (error) {
    io.stderr(`${describeError(error)}\n`);
    status = 1;
  } finally {
    try {
      await spool?.close();
    } catch (error) {
      io.stderr(`${describeError(error)}\n`);
      status = 1;
    }
  }
  return status;
}

/**
 * `spool admin`: serves the dashboard until SIGINT or SIGTERM, then closes the server and the
 * spool (never started: no owner lock) and resolves 0.
 */
async function runAdmin(command: Extract<CliCommand, { name: 'admin' }>, io: CliIo): Promise<number> {
  const { startAdminServer } = await import('../admin/server.js');
  const { loopbackHosts } = await import('../loopback.js');
  const { warnOpenAdmin } = await import('./serve.js');
  if (command.token === undefined && loopbackHosts(command.host) === undefined) io.stderr(warnOpenAdmin('spool admin', command.host));
  let server: Awaited<ReturnType<typeof startAdminServer>>;
  try {
    server = await startAdminServer({
      db: command.db,
      port: command.port,
      host: command.host,
      readOnly: command.readOnly,
      ...(command.config === undefined ? {} : { config: command.config }),
      ...(command.token === undefined ? {} : { token: command.token }),
    });
  } catch (error) {
    io.stderr(`${describeError(error)}\n`);
    return 1;
  }
  io.stdout(`${JSON.stringify({ url: server.url })}\n`);
  io.stderr(`spool admin: serving ${resolve(command.db)} at ${server.url}${command.token === undefined ? '' : '?token=…'}${command.readOnly ? ' (read-only)' : ''}; Ctrl-C stops it\n`);
  await new Promise<void>((stopped) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      stopped();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  try {
    await server.close();
  } catch (error) {
    io.stderr(`${describeError(error)}\n`);
    return 1;
  }
  io.stderr('spool admin: stopped\n');
  return 0;
}

/** `CODE: message`, the same coded message the API throws. */
function describeError(error: unknown): string {
  if (isSpoolError(error)) return `${error.code}: ${error.message}`;
  const message = error instanceof Error ? error.message : String(error);
  if (isBusy(error)) return `STORAGE_BUSY: The database stayed locked by another connection: ${message}`;
  return `${sqliteCode(error) ?? 'ERROR'}: ${message}`;
}
