/** Rejected calls carry a stable code and store nothing. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSpool, isSpoolError } from '../../src/index.js';
import { rejection, thrown } from '../helpers/errors.js';
import { countRows } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';

const spools = useTempSpools();

function setup(extra: { maxPayloadBytes?: number } = {}) {
  return { spool: spools.open(extra), path: spools.path };
}

const circular: Record<string, unknown> = { a: 1 };
circular.self = circular;

const invalidPayloads: [string, unknown][] = [
  ['undefined', undefined],
  ['a function', () => 1],
  ['a symbol', Symbol('s')],
  ['a BigInt', 10n],
  ['a nested BigInt', { n: [1, 2n] }],
  ['NaN inside', { n: Number.NaN }],
  ['Infinity inside', [1, Number.POSITIVE_INFINITY]],
  ['-Infinity', Number.NEGATIVE_INFINITY],
  ['a circular object', circular],
  ['a lone high surrogate', 'abc\uD800'],
  ['a lone low surrogate in a key', { ['k\uDC00']: 1 }],
  ['a Map', new Map([[1, 2]])],
  ['a class instance', new (class Point { x = 1 })()],
  ['undefined inside an object', { a: undefined }],
];

describe('invalid payloads', () => {
  it.each(invalidPayloads)('rejects %s with INVALID_PAYLOAD and stores nothing', async (_name, payload) => {
    const { spool, path } = setup();
    await spool.send('ok', 'first');
    const error = await rejection(spool.send('email', payload));
    expect(error.code).toBe('INVALID_PAYLOAD');
    expect(isSpoolError(error, 'INVALID_PAYLOAD')).toBe(true);
    expect(countRows(path)).toBe(1);
  });

  it('rejects a payload over maxPayloadBytes once serialised; one at the limit is stored', async () => {
    const { spool, path } = setup({ maxPayloadBytes: 64 });
    // JSON.stringify adds two quotes: 62 characters serialise to exactly 64 bytes.
    await spool.send('email', 'x'.repeat(62));
    const error = await rejection(spool.send('email', 'x'.repeat(63)));
    expect(error.code).toBe('INVALID_PAYLOAD');
    expect(error.message).toContain('64');
    // Multi-byte characters count in bytes, not in UTF-16 units.
    expect((await rejection(spool.send('email', 'é'.repeat(40)))).code).toBe('INVALID_PAYLOAD');
    expect(countRows(path)).toBe(1);
  });

  it('the default limit is 1 MiB', async () => {
    const { spool, path } = setup();
    const error = await rejection(spool.send('email', 'x'.repeat(1024 * 1024)));
    expect(error.code).toBe('INVALID_PAYLOAD');
    expect(countRows(path)).toBe(0);
  });

  it('a batch with one invalid item stores none of it', async () => {
    const { spool, path } = setup();
    const error = await rejection(spool.sendBatch('email', [{ ok: 1 }, { ok: 2 }, { bad: 3n }, { ok: 4 }]));
    expect(error.code).toBe('INVALID_PAYLOAD');
    expect(error.message).toContain('Item 2');
    expect(countRows(path)).toBe(0);
  });

  it('options or a batch that throw when read are INVALID_ARGUMENT, not a storage error, and store nothing', async () => {
    const { spool, path } = setup();
    const boom = () => {
      throw new Error('getter failed');
    };
    const options = Object.defineProperty({}, 'priority', { get: boom, enumerable: true });
    const batch = new Proxy([{ ok: 1 }, { ok: 2 }], { get: (target, key) => (key === '1' ? boom() : Reflect.get(target, key)) });
    const attributes = Object.defineProperty({}, 'k', { get: boom, enumerable: true });
    for (const call of [spool.send('email', { ok: 1 }, options), spool.sendBatch('email', batch), spool.send('email', { ok: 1 }, { attributes })]) {
      expect(await rejection(call)).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('getter failed') });
    }
    expect(countRows(path)).toBe(0);
  });

  it('valid JSON values of every kind are stored and read back', async () => {
    const { spool } = setup();
    for (const payload of [null, 0, -1.5, 'text 😀', true, [], {}, { nested: [{ a: null }] }]) {
      const id = await spool.send('email', payload);
      expect((await spool.get(id))!.payload).toEqual(payload);
    }
  });
});

describe('invalid queue names', () => {
  const bad: [string, unknown][] = [
    ['empty', ''],
    ['81 characters', 'q'.repeat(81)],
    ['a space', 'my queue'],
    ['a slash', 'a/b'],
    ['a star', '*'],
    ['non-ASCII', 'café'],
    ['a number', 42],
    ['undefined', undefined],
  ];

  it.each(bad)('send() rejects a queue name that is %s with INVALID_QUEUE_NAME and stores nothing', async (_name, queue) => {
    const { spool, path } = setup();
    await spool.send('ok', 1);
    const error = await rejection(spool.send(queue as string, { x: 1 }));
    expect(error.code).toBe('INVALID_QUEUE_NAME');
    expect((await rejection(spool.sendBatch(queue as string, [1, 2]))).code).toBe('INVALID_QUEUE_NAME');
    expect(countRows(path)).toBe(1);
  });

  it('register() throws INVALID_QUEUE_NAME for a bad name', () => {
    const { spool } = setup();
    expect(thrown(() => spool.register('bad name', () => {})).code).toBe('INVALID_QUEUE_NAME');
  });

  it('accepts 1 and 80 characters of [A-Za-z0-9._-]', async () => {
    const { spool, path } = setup();
    await spool.send('a', 1);
    await spool.send(`Az09._-${'q'.repeat(73)}`, 1);
    expect(countRows(path)).toBe(2);
  });
});

describe('other coded errors', () => {
  it('DUPLICATE_CONSUMER for a second consumer of a queue; the first stays', () => {
    const { spool } = setup();
    spool.register('email', () => {});
    const error = thrown(() => spool.register('email', () => {}));
    expect(error.code).toBe('DUPLICATE_CONSUMER');
    expect(error.message).toContain('email');
    spool.register('sms', () => {});
  });

  it.each([
    ['no path', {}],
    ['an empty path', { path: '' }],
    // Each became a file literally named so in the working directory.
    ['the in-memory path', { path: ':memory:' }],
    ['a file: URI', { path: 'file:spool.db?mode=memory' }],
    ['a FILE: URI', { path: 'FILE:///tmp/spool.db' }],
    ['an unknown option', { path: 'x.db', colour: 'blue' }],
    ['a bad durability', { path: 'x.db', durability: 'sometimes' }],
    ['a bad maxPayloadBytes', { path: 'x.db', maxPayloadBytes: -1 }],
    ['an invalid config object', { path: 'x.db', config: { executor: { concurrency: 0 } } }],
    ['an unknown config key', { path: 'x.db', config: { nope: true } }],
  ])('createSpool() throws INVALID_OPTIONS for %s', (_name, options) => {
    const error = thrown(() => createSpool(options as never));
    expect(error.code).toBe('INVALID_OPTIONS');
  });

  it("createSpool() names why ':memory:' is refused", () => {
    const error = thrown(() => createSpool({ path: ':memory:' }));
    expect(error.message).toContain("path: must be a file path, not ':memory:' or a file: URI");
  });

  it('createSpool() throws INVALID_OPTIONS for a missing, malformed or invalid config file', () => {
    const malformed = join(spools.dir, 'malformed.json');
    const invalid = join(spools.dir, 'invalid.json');
    const valid = join(spools.dir, 'valid.json');
    writeFileSync(malformed, '{ "executor": ');
    writeFileSync(invalid, JSON.stringify({ processor: { pollIntervalMs: 'often' } }));
    writeFileSync(valid, JSON.stringify({ executor: { concurrency: 2 } }));
    for (const config of [join(spools.dir, 'missing.json'), malformed, invalid]) {
      const error = thrown(() => spools.open({ config }));
      expect(error.code).toBe('INVALID_OPTIONS');
    }
    const spool = spools.open({ config: valid });
    expect(spool.settings.get().executor.concurrency).toBe(2);
  });

  it('CLOSED for every call after close()', async () => {
    const { spool, path } = setup();
    await spool.send('email', 1);
    await spool.close();
    expect((await rejection(spool.send('email', 2))).code).toBe('CLOSED');
    expect((await rejection(spool.sendBatch('email', [2]))).code).toBe('CLOSED');
    expect((await rejection(spool.start())).code).toBe('CLOSED');
    expect((await rejection(spool.get('x'))).code).toBe('CLOSED');
    expect((await rejection(spool.stats())).code).toBe('CLOSED');
    // close() stays idempotent.
    await spool.close();
    expect(countRows(path)).toBe(1);
  });
});
