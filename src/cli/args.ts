/** Parsing the `spool` command line (node:util parseArgs), one shape per command. */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { SpoolError } from '../errors.js';
import { configuredHostName } from '../loopback.js';

/** The help text, printed by `spool --help`. */
export const USAGE = `Usage: spool <command> [options]

Settings and counts:
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

Messages:
  spool dead --db <file> [--queue <q>] [--limit <n>]
      Prints the dead letters (oldest first, each with its lastError) of one queue or of all, at
      most --limit of them (default 1000).
  spool get --db <file> <id>
      Prints one message, or null when there is none (done messages are deleted unless
      retention.doneMs keeps them).
  spool requeue --db <file> (<id> | --queue <q> | --all)
      Sends dead letters back to pending with their attempts reset: one message, every dead letter
      of a queue, or every dead letter. Prints {"requeued": n}.
  spool purge --db <file> --queue <q> --state pending|dead|done [--yes]
      Deletes every message of the queue in that state and prints {"purged": n}. When stdout is a
      terminal it refuses to run without --yes.
  spool send --db <file> --queue <q> ('<json>' | -)
      Stores one message with that JSON value as its payload and prints {"id": "..."}. With -,
      the JSON is read from standard input (no argument-length limit; it must be UTF-8).

Schedules:
  spool schedules list --db <file>
      Prints every schedule (spec, enabled, anchor, lastTickAt, nextAt) as a JSON array, by name.
  spool schedules upsert --db <file> <name> '<json spec>'
      Creates or changes a schedule and prints it. The spec is {"cron": "0 3 * * *", "tz":
      "Europe/Berlin"} or {"everyMs": 30000}, plus "queue", and optionally "payload", "startAt"
      (epoch ms, or ISO 8601 with a zone), "missed" ("one", "all" or "none") and "enabled" (false disables
      it without deleting it). Only a started spool fires ticks; it picks the change up within one
      processor.pollIntervalMs.
  spool schedules remove --db <file> <name>
      Deletes a schedule and prints {"removed": true}, or {"removed": false} when there was none.

Serving:
  spool serve --db <file> [--config <file>] [--host 127.0.0.1] [--port 9324] [--public-url <url>]
              [--region us-east-1] [--auth-keys <file.json>] [--token <t> | --token-file <f>]
              [--allowed-hosts a,b]
      Starts the spool (it takes the owner lock: one serve per file) and serves the Amazon SQS API
      (JSON 1.0 and Query) on host:port, with the dashboard under /admin/ and metrics at /metrics.
      Prints the SQS endpoint and the admin URL, one line each, then runs until SIGINT or
      SIGTERM, when it stops gracefully and exits 0. --public-url is the base of the queue URLs
      handed out (default: the request's Host). --auth-keys names a JSON file {"AKID": "secret"}:
      only requests signed (SigV4) with one of those keys are served. --token guards the dashboard,
      its API and /metrics as in spool admin; with --auth-keys and no --token they are not served.
      A request arriving on a loopback address must name a loopback host, --public-url's host or
      one of --allowed-hosts (a reverse proxy here, host.docker.internal) in its Host header
      (for SQS, unless it is signed under --auth-keys).
      Creates the file if missing.

Dashboard:
  spool admin --db <file> [--config <file>] [--port 9325] [--host 127.0.0.1]
              [--token <t> | --token-file <f>] [--read-only]
      Serves the dashboard (/admin/), its JSON API and SSE stream, and /metrics for the file,
      until SIGINT or SIGTERM. Prints {"url": "..."} once it listens. With --token every request
      needs it (Authorization: Bearer, or ?token= on the page's URL); --read-only refuses every
      change. Pool use and live events come only from the process that runs the spool.

  The admin token of serve and admin comes from --token, or from --token-file (the file's first
  line, its only one), or else from the SPOOL_ADMIN_TOKEN environment variable; the last two keep
  it out of ps.

The other commands take no owner lock: they work while another process runs the spool on that
file, which picks a change up within one processor.pollIntervalMs. Only settings update and serve
create a missing file; the others refuse it. requeue and purge of many rows show a progress bar on stderr
when it is a terminal.

Options:
  --db <file>       the spool's SQLite file (required)
  --config <file>   a JSON config file: the layer between the defaults and the stored overrides
  -h, --help        shows this text
  -v, --version     prints the version

JSON goes to stdout and nothing else does; logs and errors go to stderr. Exit status: 0 on
success, 1 when the command fails (e.g. INVALID_SETTINGS, INVALID_QUEUE_NAME), 2 on a usage error.`;

/** The states `spool purge` deletes. */
export const PURGE_STATES = ['pending', 'dead', 'done'] as const;

/** A parsed command line. */
export type CliCommand =
  | { name: 'help' }
  | { name: 'version' }
  | { name: 'settings get'; db: string; config?: string; explain: boolean }
  | { name: 'settings update'; db: string; config?: string; patch: string }
  | { name: 'settings reset'; db: string; config?: string; path?: string }
  | { name: 'stats'; db: string; config?: string }
  | { name: 'dead'; db: string; config?: string; queue?: string; limit?: number }
  | { name: 'get'; db: string; config?: string; id: string }
  | { name: 'requeue'; db: string; config?: string; target: { id: string } | { queue: string } | { all: true } }
  | { name: 'purge'; db: string; config?: string; queue: string; state: (typeof PURGE_STATES)[number]; yes: boolean }
  | { name: 'send'; db: string; config?: string; queue: string; payload: string }
  | { name: 'schedules list'; db: string; config?: string }
  | { name: 'schedules upsert'; db: string; config?: string; schedule: string; spec: string }
  | { name: 'schedules remove'; db: string; config?: string; schedule: string }
  | { name: 'serve'; db: string; config?: string; host: string; port: number; publicUrl?: string; region?: string; authKeys?: string; token?: string; allowedHosts?: string[] }
  | { name: 'admin'; db: string; config?: string; port: number; host: string; token?: string; readOnly: boolean };

/** A command that works on a database file (every command but help and version). */
export type DbCommand = Exclude<CliCommand, { name: 'help' | 'version' }>;

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
  queue: { type: 'string' },
  limit: { type: 'string' },
  all: { type: 'boolean' },
  state: { type: 'string' },
  yes: { type: 'boolean' },
  host: { type: 'string' },
  port: { type: 'string' },
  'public-url': { type: 'string' },
  region: { type: 'string' },
  'auth-keys': { type: 'string' },
  'allowed-hosts': { type: 'string' },
  token: { type: 'string' },
  'token-file': { type: 'string' },
  'read-only': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

type OptionName = keyof typeof OPTIONS;

/** Which options and how many positional arguments each command takes (`[x]`: optional). */
const COMMANDS: Record<DbCommand['name'], { options: OptionName[]; args: string[] }> = {
  'settings get': { options: ['db', 'config', 'explain'], args: [] },
  'settings update': { options: ['db', 'config'], args: ['<json patch>'] },
  'settings reset': { options: ['db', 'config', 'path'], args: [] },
  stats: { options: ['db', 'config'], args: [] },
  dead: { options: ['db', 'config', 'queue', 'limit'], args: [] },
  get: { options: ['db', 'config'], args: ['<id>'] },
  requeue: { options: ['db', 'config', 'queue', 'all'], args: ['[<id>]'] },
  purge: { options: ['db', 'config', 'queue', 'state', 'yes'], args: [] },
  send: { options: ['db', 'config', 'queue'], args: ['<json>'] },
  'schedules list': { options: ['db', 'config'], args: [] },
  'schedules upsert': { options: ['db', 'config'], args: ['<name>', '<json spec>'] },
  'schedules remove': { options: ['db', 'config'], args: ['<name>'] },
  serve: { options: ['db', 'config', 'host', 'port', 'public-url', 'region', 'auth-keys', 'token', 'token-file', 'allowed-hosts'], args: [] },
  admin: { options: ['db', 'config', 'port', 'host', 'token', 'token-file', 'read-only'], args: [] },
};

/** Commands with subcommands: `spool settings get`, `spool schedules list`. */
const GROUPS: Record<string, string> = { settings: 'get, update or reset', schedules: 'list, upsert or remove' };

const NAMES = [...Object.keys(GROUPS), ...Object.keys(COMMANDS).filter((n) => !n.includes(' '))];

/** The environment variable that gives the admin token when neither --token nor --token-file does. */
export const TOKEN_ENV = 'SPOOL_ADMIN_TOKEN';

/**
 * Parses `argv` (without node and the script); throws UsageError naming what is wrong. `env` is
 * read for SPOOL_ADMIN_TOKEN only.
 */
export function parseCli(argv: string[], env: Record<string, string | undefined> = process.env): CliCommand {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true; strict: true; tokens: true }>>;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true, tokens: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  // parseArgs keeps the last of a repeated option: `purge --queue keep … --queue scratch` would
  // purge scratch without a word.
  const seen = new Set<string>();
  for (const token of parsed.tokens) {
    if (token.kind !== 'option') continue;
    if (seen.has(token.name)) throw new UsageError(`--${token.name} is given more than once`);
    seen.add(token.name);
  }
  if (values.help || positionals.length === 0 || positionals[0] === 'help') {
    if (values.version && positionals.length === 0 && !values.help) {
      // `spool -v --db x` reads like a command that ran; only a bare --version answers.
      if (seen.size > 1) throw new UsageError('--version takes no other options');
      return { name: 'version' };
    }
    // `spool --db x` (a command forgotten, or an empty variable in a script) is no request for
    // the help: printed on stdout with status 0, it would read as a command that ran.
    if (!values.help && positionals.length === 0 && seen.size > 0) {
      throw new UsageError(`spool needs a command before its options; expected ${NAMES.slice(0, -1).join(', ')} or ${NAMES.at(-1)}`);
    }
    return { name: 'help' };
  }
  if (values.version) throw new UsageError('--version takes no command');

  const [group, sub] = positionals;
  const grouped = group !== undefined && Object.hasOwn(GROUPS, group);
  const name = (grouped ? `${group} ${sub ?? ''}` : group) as keyof typeof COMMANDS;
  const spec = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!spec) {
    throw new UsageError(
      grouped
        ? `Unknown ${group} command ${JSON.stringify(sub ?? '')}; expected ${GROUPS[group!]}`
        : `Unknown command ${JSON.stringify(group)}; expected ${NAMES.slice(0, -1).join(', ')} or ${NAMES.at(-1)}`,
    );
  }
  const args = positionals.slice(name.split(' ').length);
  const required = spec.args.filter((a) => !a.startsWith('[')).length;
  if (args.length < required || args.length > spec.args.length) {
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
  const queue = values.queue;

  switch (name) {
    case 'settings get':
      return { name, ...common, explain: values.explain ?? false };
    case 'settings update':
      return { name, ...common, patch: args[0]! };
    case 'settings reset':
      return { name, ...common, ...(values.path === undefined ? {} : { path: values.path }) };
    case 'stats':
      return { name, ...common };
    case 'dead':
      return {
        name,
        ...common,
        ...(queue === undefined ? {} : { queue }),
        ...(values.limit === undefined ? {} : { limit: parseLimit(values.limit) }),
      };
    case 'get':
      if (args[0] === '') throw new UsageError('spool get needs a message id, got ""');
      return { name, ...common, id: args[0]! };
    case 'requeue': {
      const targets = [args.length > 0, queue !== undefined, values.all === true].filter(Boolean).length;
      if (targets !== 1) {
        throw new UsageError(`spool requeue takes exactly one of <id>, --queue <q> or --all, got ${targets === 0 ? 'none' : targets}`);
      }
      if (args[0] === '') throw new UsageError('spool requeue needs a message id, got ""');
      const target = args.length > 0 ? { id: args[0]! } : queue !== undefined ? { queue } : { all: true as const };
      return { name, ...common, target };
    }
    case 'purge': {
      if (queue === undefined) throw new UsageError('spool purge needs --queue <q>');
      const state = values.state;
      if (!PURGE_STATES.includes(state as (typeof PURGE_STATES)[number])) {
        throw new UsageError(`spool purge needs --state ${PURGE_STATES.join('|')}, got ${state === undefined ? 'none' : JSON.stringify(state)}`);
      }
      return { name, ...common, queue, state: state as (typeof PURGE_STATES)[number], yes: values.yes ?? false };
    }
    case 'send':
      if (queue === undefined) throw new UsageError('spool send needs --queue <q>');
      return { name, ...common, queue, payload: args[0]! };
    case 'schedules list':
      return { name, ...common };
    case 'schedules upsert':
      return { name, ...common, schedule: args[0]!, spec: args[1]! };
    case 'schedules remove':
      return { name, ...common, schedule: args[0]! };
    case 'serve': {
      const token = adminToken(values, env);
      return {
        name,
        ...common,
        host: values.host ?? SERVE_DEFAULTS.host,
        port: values.port === undefined ? SERVE_DEFAULTS.port : parsePort(values.port),
        ...(values['public-url'] === undefined ? {} : { publicUrl: values['public-url'] }),
        ...(values.region === undefined ? {} : { region: values.region }),
        ...(values['auth-keys'] === undefined ? {} : { authKeys: values['auth-keys'] }),
        ...(token === undefined ? {} : { token }),
        ...(values['allowed-hosts'] === undefined ? {} : { allowedHosts: parseHostList(values['allowed-hosts']) }),
      };
    }
    case 'admin': {
      if (values.host === '') throw new UsageError('Expected --host to name an interface, got ""');
      const token = adminToken(values, env);
      return {
        name,
        ...common,
        port: values.port === undefined ? 9325 : parsePort(values.port),
        host: values.host ?? '127.0.0.1',
        ...(token === undefined ? {} : { token }),
        readOnly: values['read-only'] ?? false,
      };
    }
  }
}

/**
 * The admin token, from `--token`, `--token-file` (the file's text without its final newline) or
 * else SPOOL_ADMIN_TOKEN. The file and the variable keep the token out of `ps`. An empty token,
 * from any of them, is refused rather than read as "no token", which would serve the admin API
 * unguarded.
 */
function adminToken(values: { token?: string; 'token-file'?: string }, env: Record<string, string | undefined>): string | undefined {
  const file = values['token-file'];
  if (values.token !== undefined && file !== undefined) throw new UsageError('Give --token or --token-file, not both');
  let token: string | undefined;
  let source: string;
  if (file !== undefined) {
    source = `the token file ${JSON.stringify(file)}`;
    try {
      token = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (error) {
      throw new UsageError(`Cannot read --token-file ${JSON.stringify(file)}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  } else if (values.token !== undefined) {
    source = '--token';
    token = values.token;
  } else {
    source = TOKEN_ENV;
    token = env[TOKEN_ENV];
    if (token === undefined) return undefined;
  }
  if (token === '') throw new UsageError(`Expected ${source} to give a non-empty token`);
  if (/[\r\n]/.test(token)) throw new UsageError(`Expected ${source} to give a token on one line`);
  return token;
}

/** `--allowed-hosts a,b`: host names, lowercased; a usage error when empty. */
function parseHostList(text: string): string[] {
  const entries = text.split(',').filter((h) => h.trim() !== '');
  const hosts = entries.map((h) => configuredHostName(h));
  if (hosts.length === 0 || hosts.some((h) => h === undefined)) {
    throw new UsageError(`Expected --allowed-hosts to list host names without ports (IPv6 in brackets), e.g. --allowed-hosts queues.internal,host.docker.internal; got ${JSON.stringify(text)}`);
  }
  return hosts as string[];
}

/** Where `spool serve` listens unless told: loopback only, and ElasticMQ's port so existing configs work. */
export const SERVE_DEFAULTS = { host: '127.0.0.1', port: 9324 } as const;

/** `--port`: 0–65535 in decimal digits (0 picks a free port). */
function parsePort(text: string): number {
  const port = /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(port) || port > 65_535) throw new UsageError(`Expected --port to be a whole number from 0 to 65535, got ${JSON.stringify(text)}`);
  return port;
}

/** `--limit`: a whole number from 1 up, written in decimal digits. */
function parseLimit(text: string): number {
  const limit = /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new UsageError(`Expected --limit to be a whole number from 1 and up, got ${JSON.stringify(text)}`);
  }
  return limit;
}
