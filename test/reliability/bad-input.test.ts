/**
 * Bad input, table-driven: every case gets a coded SpoolError and leaves the store exactly as it
 * was. "Unchanged" is checked through a second connection: a digest of every row of every table
 * (messages, queues, settings overrides), the same counts, and `PRAGMA integrity_check` = ok.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { createSpool, NonRetryableError, SpoolError, type Settings, type Spool, type SpoolErrorCode } from '../../src/index.js';
import { reached } from '../helpers/events.js';
import { readDb } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';

interface Case {
  name: string;
  code: SpoolErrorCode;
  act: (spool: Spool, path: string) => unknown;
}

function circular() {
  const a: Record<string, unknown> = { name: 'a' };
  a.self = { back: a };
  return a;
}

const TEN_MB = 'x'.repeat(10 * 1024 * 1024);

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = { inner: value };
  return value;
}

const throwingGetter = {
  get boom(): never {
    throw new Error('getter says no');
  },
};
const hostileProxy = new Proxy(
  {},
  {
    ownKeys() {
      throw new Error('ownKeys trap');
    },
    getPrototypeOf() {
      throw new Error('getPrototypeOf trap');
    },
  },
);

/**
 * A patch whose getter gives an invalid value, then valid ones: the patch is read once, so the
 * invalid value is the one checked (a second read must not slip the valid one past it).
 */
function shiftyPatch() {
  let reads = 0;
  return {
    get executor() {
      reads += 1;
      return { concurrency: reads === 1 ? -1 : 2 };
    },
  };
}

const payloads: [string, unknown][] = [
  ['undefined', undefined],
  ['a function', () => 1],
  ['a symbol', Symbol('s')],
  ['a BigInt', 10n],
  ['a BigInt inside', { n: [1, 2, 3n] }],
  ['a circular object', circular()],
  ['NaN inside', { a: 1, b: [1, Number.NaN] }],
  ['Infinity inside', { x: Number.POSITIVE_INFINITY }],
  ['a 10 MB string', TEN_MB],
  ['a lone high surrogate', 'abc\uD800'],
  ['a lone low surrogate inside', { deep: ['\uDC00x'] }],
  ['a lone surrogate in a key', { ['k\uD83D']: 1 }],
  ['a function inside', { cb: () => {} }],
  ['a Map', new Map([[1, 2]])],
  ['symbol keys', { [Symbol('k')]: 1 }],
  ['nesting 5,000 deep', nested(5000)],
  ['a throwing getter', throwingGetter],
  ['a Proxy whose traps throw', hostileProxy],
  ['a sparse array', [1, , 3]], // eslint-disable-line no-sparse-arrays
];

const queueNames: [string, unknown][] = [
  ['empty', ''],
  ['300 characters', 'q'.repeat(300)],
  ['SQL-looking', "x'; DROP TABLE messages;--"],
  ['a NUL byte', 'a\u0000b'],
  ['a tab', 'tab\there'],
  ['a newline', 'line\nbreak'],
  ['an escape sequence', '\u001b[31mred'],
  ['a non-string', 42],
  ['a single dot (a path segment in URLs)', '.'],
  ['two dots', '..'],
];

const settingsPatches: [string, unknown][] = [
  ['a negative concurrency', { executor: { concurrency: -1 } }],
  ['a zero concurrency', { executor: { concurrency: 0 } }],
  ['NaN', { executor: { concurrency: Number.NaN } }],
  ['a fraction', { executor: { concurrency: 1.5 } }],
  ['a string for a number', { executor: { concurrency: '4' } }],
  ['a string for a boolean', { accepting: 'yes' }],
  ['a negative retention', { retention: { doneMs: -5 } }],
  ['an unknown backoff type', { queueDefaults: { backoff: { type: 'linear' } } }],
  ['an unknown key', { bogus: 1 }],
  ['an unknown nested key', { queueDefaults: { nope: 1 } }],
  ['an unknown queue key', { queues: { jobs: { colour: 'red' } } }],
  ['an invalid queue name', { queues: { "x'; DROP TABLE messages;--": { paused: true } } }],
  ['a null patch', null],
  ['an array patch', [1, 2]],
  ['a string patch', 'executor.concurrency=2'],
  ['a patch whose toJSON differs', { executor: { concurrency: 2, toJSON: () => ({ concurrency: -1 }) } }],
  ['a getter that changes between reads', shiftyPatch()],
  ['an undefined value', { accepting: undefined }],
];

const stopTimeouts: [string, unknown][] = [
  ['NaN', { timeoutMs: Number.NaN }],
  ['a negative number', { timeoutMs: -5 }],
  ['a string', { timeoutMs: 'abc' }],
  ['-Infinity', { timeoutMs: -Infinity }],
  ['an unknown option', { timeout: 5 }],
  ['options that are not an object', 1000],
];

const sendOptions: [string, unknown][] = [
  ['a negative delay', { delayMs: -1 }],
  ['a NaN delay', { delayMs: Number.NaN }],
  ['a fractional delay', { delayMs: 1.5 }],
  ['a non-integer priority', { priority: 1.5 }],
  ['a string priority', { priority: '1' }],
  ['an unknown option', { bogus: true }],
  ['a runAt that is not a time', { runAt: 'tomorrow' }],
  ['a runAt past the latest Date (8.64e15 ms)', { runAt: 9e15 }],
  ['both delayMs and runAt', { delayMs: 1, runAt: Date.now() + 1000 }],
  ['an empty key', { key: '' }],
  ['options that are not an object', 'fast'],
];

const CASES: Case[] = [
  ...payloads.map(([name, payload]): Case => ({ name: `payload: ${name}`, code: 'INVALID_PAYLOAD', act: (s) => s.send('jobs', payload) })),
  {
    name: 'payload: one bad item in a batch stores none of it',
    code: 'INVALID_PAYLOAD',
    act: (s) => s.sendBatch('jobs', [{ n: 1 }, { n: 2 }, circular(), { n: 4 }]),
  },
  ...queueNames.flatMap(([name, queue]): Case[] => [
    { name: `queue name: ${name} (send)`, code: 'INVALID_QUEUE_NAME', act: (s) => s.send(queue as string, { n: 1 }) },
    { name: `queue name: ${name} (sendBatch)`, code: 'INVALID_QUEUE_NAME', act: (s) => s.sendBatch(queue as string, [{ n: 1 }]) },
    { name: `queue name: ${name} (register)`, code: 'INVALID_QUEUE_NAME', act: (s) => s.register(queue as string, () => {}) },
    { name: `queue name: ${name} (purge)`, code: 'INVALID_QUEUE_NAME', act: (s) => s.purge(queue as string, { state: 'dead' }) },
  ]),
  ...settingsPatches.map(([name, patch]): Case => ({ name: `settings: ${name}`, code: 'INVALID_SETTINGS', act: (s) => s.settings.update(patch) })),
  { name: 'settings: reset with a path that is not an array', code: 'INVALID_SETTINGS', act: (s) => s.settings.reset('queues.jobs' as never) },
  ...sendOptions.map(([name, options]): Case => ({ name: `send options: ${name}`, code: 'INVALID_ARGUMENT', act: (s) => s.send('jobs', { n: 1 }, options as never) })),
  { name: 'send options: bad options on a batch', code: 'INVALID_ARGUMENT', act: (s) => s.sendBatch('jobs', [{ n: 1 }], { delayMs: -1 }) },
  { name: 'sendBatch: payloads that are not an array', code: 'INVALID_ARGUMENT', act: (s) => s.sendBatch('jobs', { n: 1 } as never) },
  { name: 'register: a handler that is not a function', code: 'INVALID_ARGUMENT', act: (s) => s.register('jobs', 'handler' as never) },
  { name: 'register: a second consumer for a queue', code: 'DUPLICATE_CONSUMER', act: (s) => s.register('parked', () => {}) },
  { name: 'purge: an unknown state', code: 'INVALID_ARGUMENT', act: (s) => s.purge('parked', { state: 'processing' as never }) },
  { name: 'get: an id that is not a string', code: 'INVALID_ARGUMENT', act: (s) => s.get(42 as never) },
  { name: 'createSpool: an unknown option', code: 'INVALID_OPTIONS', act: (_s, path) => createSpool({ path, bogus: 1 } as never) },
  { name: 'createSpool: a negative maxPayloadBytes', code: 'INVALID_OPTIONS', act: (_s, path) => createSpool({ path, maxPayloadBytes: -1 }) },
  { name: 'createSpool: an invalid config', code: 'INVALID_OPTIONS', act: (_s, path) => createSpool({ path, config: { executor: { concurrency: -1 } } }) },
  ...stopTimeouts.flatMap(([name, options]): Case[] => [
    { name: `stop: timeoutMs ${name}`, code: 'INVALID_ARGUMENT', act: (s) => s.stop(options as never) },
    { name: `close: timeoutMs ${name}`, code: 'INVALID_ARGUMENT', act: (s) => s.close(options as never) },
  ]),
  { name: 'sendBatch: a hole at index 1', code: 'INVALID_PAYLOAD', act: (s) => s.sendBatch('jobs', [{ n: 1 }, , { n: 3 }]) }, // eslint-disable-line no-sparse-arrays
  { name: 'sendBatch: a hole at index 0', code: 'INVALID_PAYLOAD', act: (s) => s.sendBatch('jobs', [, { n: 2 }]) }, // eslint-disable-line no-sparse-arrays
  { name: 'sendBatch: a sparse array of length 3 with one item', code: 'INVALID_PAYLOAD', act: (s) => s.sendBatch('jobs', Object.assign(new Array(3), { 2: { n: 3 } })) },
  { name: 'dead: a limit of 1e300', code: 'INVALID_ARGUMENT', act: (s) => s.dead('poison', { limit: 1e300 }) },
  { name: 'dead: a limit of 2.5', code: 'INVALID_ARGUMENT', act: (s) => s.dead('poison', { limit: 2.5 }) },
  { name: 'dead: a limit of 0', code: 'INVALID_ARGUMENT', act: (s) => s.dead(undefined, { limit: 0 }) },
  { name: 'dead: null options', code: 'INVALID_ARGUMENT', act: (s) => s.dead('poison', null as never) },
  { name: 'dead: options that are a string', code: 'INVALID_ARGUMENT', act: (s) => s.dead('poison', 'x' as never) },
  { name: 'dead: an unknown option', code: 'INVALID_ARGUMENT', act: (s) => s.dead('poison', { max: 2 } as never) },
  { name: 'dead: options that are an array', code: 'INVALID_ARGUMENT', act: (s) => s.dead('poison', [] as never) },
  { name: 'get: options that are an array', code: 'INVALID_ARGUMENT', act: (s) => s.get('x', [] as never) },
  { name: 'get: a history option that is not a boolean', code: 'INVALID_ARGUMENT', act: (s) => s.get('x', { history: 'yes' } as never) },
  {
    name: 'createSpool: a config file with a __proto__ key',
    code: 'INVALID_OPTIONS',
    act: (_s, path) => {
      const file = join(dirname(path), 'proto.json');
      writeFileSync(file, '{"__proto__": {"accepting": false}}');
      return createSpool({ path, config: file });
    },
  },
  { name: 'createSpool: a path with a NUL character', code: 'INVALID_OPTIONS', act: (_s, path) => createSpool({ path: `${path}\0x` }) },
  {
    name: 'register: after close()',
    code: 'CLOSED',
    act: async (_s, path) => {
      const other = createSpool({ path });
      await other.close();
      other.register('late', () => {});
    },
  },
];

const spools = useTempSpools();

/** The whole store as one digest, plus counts, read through a connection of its own. */
function fingerprint(path: string) {
  return readDb(path, (conn) => {
    const hash = createHash('sha256');
    for (const table of ['messages', 'queues', 'settings_overrides']) {
      hash.update(JSON.stringify(conn.prepare(`SELECT * FROM ${table} ORDER BY rowid`).raw().all()));
    }
    return {
      digest: hash.digest('hex'),
      counts: conn.prepare('SELECT queue, state, COUNT(*) AS n FROM messages GROUP BY queue, state ORDER BY queue, state').all(),
      integrity: conn.pragma('integrity_check', { simple: true }),
    };
  });
}

async function outcome(act: () => unknown): Promise<unknown> {
  try {
    await act();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('bad input', () => {
  let spool: Spool;
  let before: ReturnType<typeof fingerprint>;
  let settingsBefore: Settings;

  beforeEach(async () => {
    spool = spools.open({ config: { queues: { parked: { paused: true } } } });
    spool.register('parked', () => {});
    spool.register('poison', () => {
      throw new NonRetryableError('never');
    });
    await spool.start();
    // Something to keep: pending rows, a dead letter, and a settings override.
    await spool.sendBatch('parked', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const dead = reached(spool.events$, 'dead', 1, 'poison');
    await spool.send('poison', { n: 4 });
    await dead;
    await spool.settings.update({ executor: { concurrency: 3 } });
    settingsBefore = spool.settings.get();
    before = fingerprint(spools.path);
    expect(before.counts).toEqual([
      { queue: 'parked', state: 'pending', n: 3 },
      { queue: 'poison', state: 'dead', n: 1 },
    ]);
  });

  it.each(CASES.map((c) => [c.name, c] as const))('%s: coded error, store unchanged', async (_name, c) => {
    const error = await outcome(() => c.act(spool, spools.path));
    expect(error).toBeInstanceOf(SpoolError);
    expect((error as SpoolError).code).toBe(c.code);
    expect((error as SpoolError).message).not.toBe('');
    // Let any write the call might have queued reach the disk before looking.
    await spool.stop();
    const after = fingerprint(spools.path);
    expect(after.integrity).toBe('ok');
    expect(after.counts).toEqual(before.counts);
    expect(after.digest).toBe(before.digest);
    expect(spool.settings.get()).toEqual(settingsBefore);
  });
});
