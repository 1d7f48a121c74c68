/** Parsing the `spool` command line (node:util parseArgs), one shape per command. */
import { parseArgs } from 'node:util';
import { SpoolError } from '../errors.js';

/** The help text, printed by `spool --help`. */
export const USAGE = `Usage: spool <command> [options]

Commands:
  spool settings get --db <file> [--config <file>] [--explain]
      Prints the effective settings as JSON. Without --config they are the built-in defaults plus
      the overrides stored in the database. --explain prints, for each leaf, the layer it came from
      ("default", "config" or "override").
  spool settings update --db <file> [--config <file>] '<json patch>'
      Deep-merges the patch into the stored overrides (null removes a key), validates the whole
      result, persists it and prints the new effective settings. Creates the file if missing.
  spool settings reset --db <file> [--config <file>] [--path '["queues","email.send"]']
      Drops every override, or only those under --path (a JSON array of key segments, because
      queue names may contain dots), and prints the new effective settings.
  spool stats --db <file> [--config <file>]
      Prints message counts per queue and state, and the pool limits, as JSON.

These commands take no owner lock: they work while another process runs the spool on that file,
which picks a change up within one processor.pollIntervalMs.

Options:
  --db <file>       the spool's SQLite file (required)
  --config <file>   a JSON config file: the layer between the defaults and the stored overrides
  -h, --help        shows this text

JSON goes to stdout and nothing else does; logs and errors go to stderr. Exit status: 0 on
success, 1 when the command fails (e.g. INVALID_SETTINGS), 2 on a usage error.`;

/** A parsed command line. */
export type CliCommand =
  | { name: 'help' }
  | { name: 'settings get'; db: string; config?: string; explain: boolean }
  | { name: 'settings update'; db: string; config?: string; patch: string }
  | { name: 'settings reset'; db: string; config?: string; path?: string }
  | { name: 'stats'; db: string; config?: string };

/** A command line that names no valid command or misuses an option (exit status 2). */
export class UsageError extends SpoolError {
  /** Like SpoolError INVALID_ARGUMENT. */
  constructor(message: string) {
    super('INVALID_ARGUMENT', message);
    this.name = 'UsageError';
  }
}

const OPTIONS = {
  db: { type: 'string' },
  config: { type: 'string' },
  explain: { type: 'boolean' },
  path: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type OptionName = keyof typeof OPTIONS;

/** Which options and how many positional arguments each command takes. */
const COMMANDS: Record<Exclude<CliCommand['name'], 'help'>, { options: OptionName[]; args: string[] }> = {
  'settings get': { options: ['db', 'config', 'explain'], args: [] },
  'settings update': { options: ['db', 'config'], args: ['<json patch>'] },
  'settings reset': { options: ['db', 'config', 'path'], args: [] },
  stats: { options: ['db', 'config'], args: [] },
};

/** Parses `argv` (without node and the script); throws UsageError naming what is wrong. */
export function parseCli(argv: string[]): CliCommand {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true; strict: true }>>;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0 || positionals[0] === 'help') return { name: 'help' };

  const [group, sub] = positionals;
  const name = (group === 'settings' ? `settings ${sub ?? ''}` : group) as keyof typeof COMMANDS;
  const spec = COMMANDS[name];
  if (!spec) {
    throw new UsageError(
      group === 'settings' ? `Unknown settings command ${JSON.stringify(sub ?? '')}; expected get, update or reset` : `Unknown command ${JSON.stringify(group)}; expected settings or stats`,
    );
  }
  const args = positionals.slice(name.split(' ').length);
  if (args.length !== spec.args.length) {
    throw new UsageError(
      spec.args.length === 0
        ? `spool ${name} takes no arguments, got ${args.map((a) => JSON.stringify(a)).join(' ')}`
        : `spool ${name} takes ${spec.args.join(' ')}, got ${args.length} arguments`,
    );
  }
  for (const option of Object.keys(values) as OptionName[]) {
    if (!spec.options.includes(option)) throw new UsageError(`--${option} is not an option of spool ${name}`);
  }
  if (values.db === undefined || values.db === '') throw new UsageError(`spool ${name} needs --db <file>`);
  const common = { db: values.db, ...(values.config === undefined ? {} : { config: values.config }) };

  switch (name) {
    case 'settings get':
      return { name, ...common, explain: values.explain ?? false };
    case 'settings update':
      return { name, ...common, patch: args[0]! };
    case 'settings reset':
      return { name, ...common, ...(values.path === undefined ? {} : { path: values.path }) };
    case 'stats':
      return { name, ...common };
  }
}
