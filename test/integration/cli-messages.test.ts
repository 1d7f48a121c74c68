/**
 * The day-two commands (dead, get, requeue, purge, send, --version) through the built bin
 * (node bin/spool.mjs, running dist/), on real files: on a closed spool, beside a spool that this
 * process runs, under a pseudo-terminal for --yes and the progress bars, and with a table of bad
 * inputs that must each exit non-zero and leave the file byte-identical.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NonRetryableError, type MessageInfo, type Spool } from '../../src/index.js';
import { MAX_PAYLOAD_BYTES_LIMIT } from '../../src/options.js';
import { ROOT } from '../helpers/build.js';
import { fileDigest, runBin, type CliRun } from '../helpers/cli.js';
import { reached } from '../helpers/events.js';
import { useTempSpools } from '../helpers/spool.js';

const spools = useTempSpools();

/** Parses stdout, which must be one JSON document and nothing else. */
function json(run: CliRun): unknown {
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout);
}

const db = (...args: string[]) => ['--db', spools.path, ...args];

/**
 * A closed spool file holding: dead letters email ×3 and sms ×1 (each failed with NonRetryableError),
 * pending email ×2, and done report ×2 (kept by retention). Returns the dead letters' ids, oldest first.
 */
async function fixture(): Promise<{ emailDead: string[]; smsDead: string[]; pending: string[]; done: string[] }> {
  const spool = spools.open({ config: { retention: { doneMs: 3_600_000, deadMs: null } } });
  spool.register('email', (m) => {
    throw new NonRetryableError(`bounced ${JSON.stringify(m.payload)}`);
  });
  spool.register('sms', () => {
    throw new NonRetryableError('no such number');
  });
  spool.register('report', () => {});
  const dead = reached(spool.events$, 'dead', 4);
  const finished = reached(spool.events$, 'done', 2);
  const emailDead = await spool.sendBatch('email', [{ to: 'a' }, { to: 'b' }, { to: 'c' }]);
  const smsDead = await spool.sendBatch('sms', [{ to: '+1' }]);
  const done = await spool.sendBatch('report', [{ day: 1 }, { day: 2 }]);
  await spool.start();
  await Promise.all([dead, finished]);
  await spool.stop();
  // Sent while stopped: they stay pending.
  const pending = await spool.sendBatch('email', [{ to: 'p1' }, { to: 'p2' }]);
  await spool.close();
  return { emailDead, smsDead, pending, done };
}

/** The state of each id, read through a fresh spool on the file. */
async function states(ids: string[]): Promise<(string | undefined)[]> {
  const spool = spools.open();
  const infos = await Promise.all(ids.map((id) => spool.get(id)));
  await spool.close();
  return infos.map((info) => info?.state);
}

describe('spool dead, get and --version (built bin)', { timeout: 60_000 }, () => {
  it('dead lists dead letters oldest first with their errors, by queue and with a limit', async () => {
    const { emailDead, smsDead } = await fixture();
    const [all, email, limited] = await Promise.all([
      runBin(['dead', ...db()]),
      runBin(['dead', ...db('--queue', 'email')]),
      runBin(['dead', ...db('--queue', 'email', '--limit', '2')]),
    ]);
    const ids = (run: CliRun) => (json(run) as MessageInfo[]).map((m) => m.id);
    expect(ids(all)).toEqual([...emailDead, ...smsDead]);
    expect(ids(email)).toEqual(emailDead);
    expect(ids(limited)).toEqual(emailDead.slice(0, 2));
    const first = (json(email) as MessageInfo[])[0]!;
    expect(first).toMatchObject({ queue: 'email', state: 'dead', payload: { to: 'a' }, lastError: { code: 'NON_RETRYABLE', message: 'bounced {"to":"a"}' } });
    expect(all.stderr).toBe('');
  });

  it('get prints one message, and null for an id that is not there', async () => {
    const { done, pending } = await fixture();
    const [kept, waiting, gone] = await Promise.all([runBin(['get', ...db(), done[0]!]), runBin(['get', ...db(), pending[1]!]), runBin(['get', ...db(), 'no-such-id'])]);
    expect(json(kept)).toMatchObject({ id: done[0], queue: 'report', state: 'done', payload: { day: 1 } });
    expect(json(waiting)).toMatchObject({ id: pending[1], queue: 'email', state: 'pending', payload: { to: 'p2' } });
    expect(json(gone)).toBeNull();
  });

  it('--version prints the version from package.json', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const [long, short] = await Promise.all([runBin(['--version']), runBin(['-v'])]);
    expect(long).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    expect(short).toEqual(long);
  });

  it('--help lists every command', async () => {
    const help = await runBin(['--help']);
    expect(help.code).toBe(0);
    for (const line of ['spool dead --db', 'spool get --db', 'spool requeue --db', 'spool purge --db', 'spool send --db', 'spool stats --db', 'spool settings get']) {
      expect(help.stdout).toContain(line);
    }
  });
});

describe('spool requeue, purge and send (built bin)', { timeout: 60_000 }, () => {
  it('requeue moves one letter, a queue, or all; piped, it writes nothing on stderr', async () => {
    const { emailDead, smsDead } = await fixture();
    expect(json(await runBin(['requeue', ...db(), emailDead[1]!]))).toEqual({ requeued: 1 });
    expect(await states(emailDead)).toEqual(['dead', 'pending', 'dead']);
    // Not dead (any more): nothing to do.
    expect(json(await runBin(['requeue', ...db(), emailDead[1]!]))).toEqual({ requeued: 0 });

    const queue = await runBin(['requeue', ...db('--queue', 'email')]);
    expect(json(queue)).toEqual({ requeued: 2 });
    expect(queue.stderr).toBe('');
    expect(await states([...emailDead, ...smsDead])).toEqual(['pending', 'pending', 'pending', 'dead']);

    expect(json(await runBin(['requeue', ...db('--all')]))).toEqual({ requeued: 1 });
    expect(await states(smsDead)).toEqual(['pending']);
    const spool = spools.open();
    const after = await spool.get(smsDead[0]!);
    // Attempts reset, history kept, as the API's requeue() does.
    expect(after).toMatchObject({ attempt: 0, lastError: { code: 'NON_RETRYABLE' } });
  });

  it('purge deletes one state of one queue; piped, it needs no --yes and writes nothing on stderr', async () => {
    const { emailDead, smsDead, pending, done } = await fixture();
    const run = await runBin(['purge', ...db('--queue', 'email', '--state', 'dead')]);
    expect(json(run)).toEqual({ purged: 3 });
    expect(run.stderr).toBe('');
    expect(await states([...emailDead, ...smsDead, ...pending, ...done])).toEqual([undefined, undefined, undefined, 'dead', 'pending', 'pending', 'done', 'done']);
    expect(json(await runBin(['purge', ...db('--queue', 'report', '--state', 'done')]))).toEqual({ purged: 2 });
    expect(json(await runBin(['purge', ...db('--queue', 'email', '--state', 'pending')]))).toEqual({ purged: 2 });
    expect(await states([...smsDead, ...pending, ...done])).toEqual(['dead', undefined, undefined, undefined, undefined]);
  });

  it('on a terminal, purge refuses without --yes and changes nothing; with --yes it draws a progress bar', async () => {
    await fixture();
    const before = fileDigest(spools.path);
    const refused = await runBin(['purge', ...db('--queue', 'email', '--state', 'dead')], { tty: true });
    expect(refused.code).toBe(2);
    expect(refused.stdout).toMatch(/^INVALID_ARGUMENT: .*--yes/);
    expect(fileDigest(spools.path)).toBe(before);

    const confirmed = await runBin(['purge', ...db('--queue', 'email', '--state', 'dead', '--yes')], { tty: true });
    expect(confirmed.code, confirmed.stdout).toBe(0);
    expect(confirmed.stdout).toContain('purge email (dead)');
    expect(confirmed.stdout).toContain('100% | 3/3');
    expect(confirmed.stdout).toContain('"purged": 3');
  });

  it('on a terminal, a bulk requeue draws a progress bar', async () => {
    await fixture();
    const run = await runBin(['requeue', ...db('--all')], { tty: true });
    expect(run.code, run.stdout).toBe(0);
    expect(run.stdout).toContain('requeue (all queues)');
    expect(run.stdout).toContain('100% | 4/4');
    expect(run.stdout).toContain('"requeued": 4');
  });

  it('send stores a JSON payload; a spool running in this process handles it and a requeued letter', async () => {
    await fixture();
    const spool: Spool = spools.open({ config: { processor: { pollIntervalMs: 50 } } });
    const handled: unknown[] = [];
    spool.register('inbox', (m) => {
      handled.push(m.payload);
    });
    spool.register('sms', (m) => {
      handled.push(m.payload);
    });
    await spool.start();

    // Neither command takes the owner lock that this process holds.
    const twoDone = reached(spool.events$, 'done', 2, undefined, 20_000);
    const sent = json(await runBin(['send', ...db('--queue', 'inbox', '{"hello":["world",1]}')])) as { id: string };
    expect(sent.id).toEqual(expect.any(String));
    expect(json(await runBin(['requeue', ...db('--queue', 'sms')]))).toEqual({ requeued: 1 });
    const events = await twoDone;
    expect(events.map((e) => (e as { queue: string }).queue).sort()).toEqual(['inbox', 'sms']);
    expect(handled).toContainEqual({ hello: ['world', 1] });
    expect(handled).toContainEqual({ to: '+1' });
  });
});

describe('spool with a reader that went away (built bin)', { timeout: 60_000 }, () => {
  it('finishes the command, exits 0 and prints no stack when stdout is a closed pipe (EPIPE)', async () => {
    const { smsDead } = await fixture();
    const dead = await runBin(['dead', ...db()], { closeStdout: true });
    expect(dead.code, dead.stderr).toBe(0);
    expect(dead.stderr).toBe('');
    // A change still lands in full: its output is what is lost, not its work.
    const requeue = await runBin(['requeue', ...db('--queue', 'sms')], { closeStdout: true });
    expect(requeue.code, requeue.stderr).toBe(0);
    expect(requeue.stderr).toBe('');
    expect(await states(smsDead)).toEqual(['pending']);
  });
});

describe('spool day-two commands: bad input (built bin)', { timeout: 120_000 }, () => {
  it('each bad input exits non-zero with a coded message, prints nothing on stdout, and leaves the file byte-identical', async () => {
    const { emailDead } = await fixture();
    const long = 'q'.repeat(81);
    const table: { args: string[]; code: 1 | 2; error: RegExp }[] = [
      // Usage errors (2): nothing is opened.
      { args: ['dead', ...db('--limit', '0')], code: 2, error: /^INVALID_ARGUMENT: .*--limit/ },
      { args: ['dead', ...db('--limit', 'ten')], code: 2, error: /^INVALID_ARGUMENT: .*--limit/ },
      { args: ['dead', ...db('--limit', '1.5')], code: 2, error: /^INVALID_ARGUMENT: .*--limit/ },
      { args: ['dead', ...db('--limit', '-1')], code: 2, error: /^INVALID_ARGUMENT: / },
      { args: ['dead', ...db('--state', 'dead')], code: 2, error: /^INVALID_ARGUMENT: --state is not an option of spool dead/ },
      { args: ['dead', ...db(), 'extra'], code: 2, error: /^INVALID_ARGUMENT: spool dead takes no arguments/ },
      { args: ['get', ...db()], code: 2, error: /^INVALID_ARGUMENT: spool get takes <id>/ },
      { args: ['get', ...db(), 'a', 'b'], code: 2, error: /^INVALID_ARGUMENT: spool get takes <id>/ },
      { args: ['get', ...db(), ''], code: 2, error: /^INVALID_ARGUMENT: spool get needs a message id/ },
      { args: ['requeue', ...db()], code: 2, error: /^INVALID_ARGUMENT: spool requeue takes exactly one of/ },
      { args: ['requeue', ...db('--all', '--queue', 'email')], code: 2, error: /^INVALID_ARGUMENT: spool requeue takes exactly one of/ },
      { args: ['requeue', ...db('--all'), emailDead[0]!], code: 2, error: /^INVALID_ARGUMENT: spool requeue takes exactly one of/ },
      { args: ['requeue', ...db('--queue', 'email', '--yes')], code: 2, error: /^INVALID_ARGUMENT: --yes is not an option/ },
      { args: ['purge', ...db('--state', 'dead')], code: 2, error: /^INVALID_ARGUMENT: spool purge needs --queue/ },
      { args: ['purge', ...db('--queue', 'email')], code: 2, error: /^INVALID_ARGUMENT: spool purge needs --state/ },
      { args: ['purge', ...db('--queue', 'email', '--state', 'processing')], code: 2, error: /^INVALID_ARGUMENT: spool purge needs --state/ },
      { args: ['purge', ...db('--queue', 'email', '--state', 'DEAD')], code: 2, error: /^INVALID_ARGUMENT: spool purge needs --state/ },
      { args: ['purge', '--queue', 'email', '--state', 'dead'], code: 2, error: /^INVALID_ARGUMENT: spool purge needs --db/ },
      { args: ['send', ...db('{"a":1}')], code: 2, error: /^INVALID_ARGUMENT: spool send needs --queue/ },
      { args: ['send', ...db('--queue', 'email')], code: 2, error: /^INVALID_ARGUMENT: spool send takes <json>/ },
      { args: ['send', ...db('--queue', 'email', '1', '2')], code: 2, error: /^INVALID_ARGUMENT: spool send takes <json>/ },
      { args: ['stats', ...db('--version')], code: 2, error: /^INVALID_ARGUMENT: --version takes no command/ },
      { args: ['-v', ...db()], code: 2, error: /^INVALID_ARGUMENT: --version takes no other options/ },
      { args: ['frob', ...db()], code: 2, error: /^INVALID_ARGUMENT: Unknown command "frob"/ },
      // Options without a command (`spool --db "$DB" $CMD` with CMD empty): not the help with exit 0.
      { args: db(), code: 2, error: /^INVALID_ARGUMENT: spool needs a command/ },
      { args: db('--queue', 'email'), code: 2, error: /^INVALID_ARGUMENT: spool needs a command/ },
      // Command failures (1): the API refuses the value; nothing is stored.
      { args: ['dead', ...db('--queue', 'bad queue')], code: 1, error: /^INVALID_QUEUE_NAME: / },
      { args: ['dead', ...db('--queue', long)], code: 1, error: /^INVALID_QUEUE_NAME: / },
      { args: ['requeue', ...db('--queue', '__proto__')], code: 1, error: /^INVALID_QUEUE_NAME: / },
      { args: ['purge', ...db('--queue', 'e/mail', '--state', 'dead')], code: 1, error: /^INVALID_QUEUE_NAME: / },
      { args: ['send', ...db('--queue', 'bad queue', '{}')], code: 1, error: /^INVALID_QUEUE_NAME: / },
      { args: ['send', ...db('--queue', 'email', '{"to":')], code: 1, error: /^INVALID_PAYLOAD: The payload is not valid JSON/ },
      { args: ['send', ...db('--queue', 'email', 'undefined')], code: 1, error: /^INVALID_PAYLOAD: The payload is not valid JSON/ },
      { args: ['send', ...db('--queue', 'email', '')], code: 1, error: /^INVALID_PAYLOAD: The payload is not valid JSON/ },
      // A missing file is refused, not created.
      { args: ['send', '--db', join(spools.dir, 'nope.db'), '--queue', 'email', '{}'], code: 1, error: /^INVALID_ARGUMENT: There is no spool database/ },
      { args: ['purge', '--db', join(spools.dir, 'nope.db'), '--queue', 'email', '--state', 'dead'], code: 1, error: /^INVALID_ARGUMENT: There is no spool database/ },
    ];
    const before = fileDigest(spools.path);
    for (const { args, code, error } of table) {
      const shown = args.map((a) => (a.length > 40 ? `${a.slice(0, 20)}…` : a)).join(' ');
      const run = await runBin(args);
      expect(run.code, `${shown}\n${run.stderr}`).toBe(code);
      expect(run.stdout, shown).toBe('');
      expect(run.stderr, shown).toMatch(error);
      expect(fileDigest(spools.path), shown).toBe(before);
    }
    expect(existsSync(join(spools.dir, 'nope.db'))).toBe(false);
    expect(await states(emailDead)).toEqual(['dead', 'dead', 'dead']);
  });
});

describe('files that are not a spool', () => {
  it("refuses another program's database and an empty file in every command, and changes neither", async () => {
    const foreign = join(spools.dir, 'app.db');
    const app = new Database(foreign);
    app.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada')");
    app.close();
    const empty = join(spools.dir, 'empty.db');
    writeFileSync(empty, '');
    // Another app that uses drizzle-orm: its migrations table has drizzle's default name.
    const drizzleApp = join(spools.dir, 'drizzle-app.db');
    const other = new Database(drizzleApp);
    other.exec(`CREATE TABLE users (id INTEGER PRIMARY KEY); CREATE TABLE "__drizzle_migrations" (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric);
      INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES ('abc', 1717000000000)`);
    other.close();
    const commands = [['stats'], ['dead'], ['get', '1'], ['schedules', 'list'], ['settings', 'get'], ['settings', 'update', '{"accepting":false}'], ['send', '--queue', 'q', '1']];
    for (const [file, refusal] of [
      [foreign, /^INVALID_ARGUMENT: There is no spool database at .*app\.db: the file is a database that is not a spool/],
      [empty, /^INVALID_ARGUMENT: There is no spool database at .*empty\.db: the file is empty/],
      [drizzleApp, /^INVALID_ARGUMENT: There is no spool database at .*drizzle-app\.db: the file is a database that is not a spool/],
    ] as const) {
      const before = fileDigest(file);
      // settings update may make a spool of an empty file, as of a missing one.
      const tried = commands.filter((args) => !(file === empty && args[1] === 'update'));
      // All at once: none may write, so none can disturb another.
      const runs = await Promise.all(tried.map((args) => runBin([...args, '--db', file])));
      runs.forEach((run, i) => {
        expect(run.code, `${tried[i]!.join(' ')} ${file}`).toBe(1);
        expect(run.stderr).toMatch(refusal);
      });
      expect(fileDigest(file)).toBe(before);
      expect(existsSync(`${file}-wal`)).toBe(false);
    }
    // Before, stats made a spool of it: ten tables and WAL mode in the app's file.
    expect(new Database(foreign, { readonly: true }).pragma('journal_mode', { simple: true })).toBe('delete');
    expect(json(await runBin(['settings', 'update', '--db', empty, '{"accepting":false}']))).toMatchObject({ accepting: false });
  });

  it("refuses another program's database that is locked while the command looks at it, and never adopts it once freed", { timeout: 30_000 }, async () => {
    const foreign = join(spools.dir, 'app.db');
    const app = new Database(foreign);
    app.exec("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers (name) VALUES ('alice')");
    const before = fileDigest(foreign);
    // The other program holds a write transaction; it ends as soon as the command's first look
    // at the file has given up on it, so that a command that guessed "a spool" would go on.
    app.exec('BEGIN EXCLUSIVE');
    const child = spawn(process.execPath, ['bin/spool.mjs', 'stats', '--db', foreign], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stdout.resume();
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    let seen = false;
    const watch = setInterval(() => {
      const open = hasOpen(child.pid!, foreign);
      if (open) seen = true;
      else if (seen && app.inTransaction) app.exec('ROLLBACK');
    }, 2);
    const code = await exited;
    clearInterval(watch);
    if (app.inTransaction) app.exec('ROLLBACK');
    const tables = app.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all();
    app.close();
    expect({ code, tables }).toEqual({ code: 1, tables: ['customers'] });
    expect(stderr).toMatch(/^STORAGE_BUSY: .*app\.db is locked by another connection/);
    expect(fileDigest(foreign)).toBe(before);
  });
});

/** Whether process `pid` has `file` open (Linux /proc). */
function hasOpen(pid: number, file: string): boolean {
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`) === file;
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}

describe('spool send -', () => {
  it('reads the payload from standard input: past the argument limit, and refuses bytes that are not UTF-8', async () => {
    const spool = spools.open();
    await spool.send('email', 0);
    await spool.close();
    const big = { blob: 'x'.repeat(300_000) };
    const sent = await runBin(['send', ...db('--queue', 'email', '-')], { stdin: Buffer.from(JSON.stringify(big)) });
    expect(sent.code, sent.stderr).toBe(0);
    const { id } = JSON.parse(sent.stdout) as { id: string };
    const reader = spools.open();
    expect((await reader.get(id))?.payload).toEqual(big);
    await reader.close();
    const before = fileDigest(spools.path);
    // As an argument these bytes arrive as U+FFFD, silently; on standard input they are refused.
    const latin1 = Buffer.concat([Buffer.from('{"a":"caf'), Buffer.from([0xe9]), Buffer.from('"}')]);
    const refused = await runBin(['send', ...db('--queue', 'email', '-')], { stdin: latin1 });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^INVALID_PAYLOAD: The payload on standard input is not UTF-8 text/);
    const notJson = await runBin(['send', ...db('--queue', 'email', '-')], { stdin: Buffer.from('{"a":') });
    expect(notJson.stderr).toMatch(/^INVALID_PAYLOAD: The payload is not valid JSON/);
    expect(fileDigest(spools.path)).toBe(before);
  });

  it('refuses standard input past the largest maxPayloadBytes (256 MiB) without storing anything', async () => {
    const spool = spools.open();
    await spool.send('email', 0);
    await spool.close();
    const before = fileDigest(spools.path);
    // One byte over: a JSON string of spaces, which would be valid JSON if it were read whole.
    const over = Buffer.alloc(MAX_PAYLOAD_BYTES_LIMIT + 1, 0x20);
    over[0] = 0x22;
    over[over.length - 1] = 0x22;
    const refused = await runBin(['send', ...db('--queue', 'email', '-')], { stdin: over });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(new RegExp(`^INVALID_PAYLOAD: The payload on standard input is over ${MAX_PAYLOAD_BYTES_LIMIT} bytes`));
    expect(fileDigest(spools.path)).toBe(before);
  });
});
