/** The `spool` command line: parses, runs one command, prints JSON on stdout and logs on stderr. */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { createSpool, isSpoolError, type Spool } from '../index.js';
import { isBusy, sqliteCode } from '../db/transaction.js';
import { parseCli, USAGE, UsageError, type CliCommand } from './args.js';
import { runCommand } from './commands.js';

/** Where the CLI writes: stdout carries only the JSON result, stderr everything else. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
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
  // Reading a mistyped path would silently create an empty spool; only update may create one.
  if (command.name !== 'settings update' && !existsSync(command.db)) {
    io.stderr(`INVALID_ARGUMENT: There is no spool database at ${resolve(command.db)}\n`);
    return 1;
  }

  let spool: Spool | undefined;
  let status = 0;
  try {
    // Never started: no owner lock, so this works beside the process that runs the spool.
    spool = createSpool({ path: command.db, ...(command.config === undefined ? {} : { config: command.config }) });
    spool.events$.subscribe((event) => {
      if (event.type === 'error') io.stderr(`spool: ${event.code}: ${event.message}\n`);
      else if (event.type === 'settings.changed') io.stderr(`spool: settings changed (version ${event.version})\n`);
    });
    const result = await runCommand(spool, command);
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

/** `CODE: message`, the same coded message the API throws. */
function describeError(error: unknown): string {
  if (isSpoolError(error)) return `${error.code}: ${error.message}`;
  const message = error instanceof Error ? error.message : String(error);
  if (isBusy(error)) return `STORAGE_BUSY: The database stayed locked by another connection: ${message}`;
  return `${sqliteCode(error) ?? 'ERROR'}: ${message}`;
}
