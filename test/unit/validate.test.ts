import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { checkAttributes } from '../../src/queues/message-attributes.js';
import { assertQueueName, canonicalJson, contentKey, serializePayload } from '../../src/validate.js';
import { thrown } from '../helpers/errors.js';

const LIMIT = 1024 * 1024;

describe('assertQueueName', () => {
  it.each(['email', 'a', 'Email.Send_v2-x', '0', '.a', 'a..b', '.fifo', 'q'.repeat(80)])('accepts %j', (name) => {
    expect(() => assertQueueName(name)).not.toThrow();
  });

  const invalid: [string, unknown][] = [
    ['empty', ''],
    ['81 characters', 'q'.repeat(81)],
    ['a space', 'email send'],
    ['a leading space', ' email'],
    ['a trailing newline', 'email\n'],
    ['a NUL', 'email\u0000'],
    ['a control character', 'em\u0007ail'],
    ['a tab', 'em\tail'],
    ['SQL', "email'; DROP TABLE messages;--"],
    ['a quote', 'email"'],
    ['a slash', 'a/b'],
    ['a star (the default pool key)', '*'],
    ['a dot (a URL path segment)', '.'],
    ['two dots', '..'],
    ['dots only', '...'],
    ['non-ASCII letters', 'émail'],
    ['a number', 42],
    ['undefined', undefined],
    ['null', null],
  ];
  it.each(invalid)('rejects %s with INVALID_QUEUE_NAME', (_, name) => {
    const error = thrown(() => assertQueueName(name));
    expect(error.code).toBe('INVALID_QUEUE_NAME');
    expect(error.message).toMatch(/^Expected a queue name of 1–80 characters from \[A-Za-z0-9._-\], not dots only, got /);
  });

  it('names the bad value in the message, truncating long ones', () => {
    expect(thrown(() => assertQueueName('email send')).message).toContain('got "email send"');
    expect(thrown(() => assertQueueName(7)).message).toContain('got number');
    const long = thrown(() => assertQueueName('x'.repeat(5000)));
    expect(long.message.length).toBeLessThan(300);
    expect(long.message).toContain('…');
  });
});

describe('serializePayload', () => {
  it.each<[string, unknown]>([
    ['an object', { to: 'a@b.c', n: 1, ok: true, none: null, list: [1, 'two', { three: 3 }] }],
    ['an array', [1, 2, 3]],
    ['a string', 'hello'],
    ['a number', 42.5],
    ['zero and negative zero', [0, -0]],
    ['a boolean', false],
    ['null', null],
    ['an empty object', {}],
    ['astral characters (paired surrogates)', { emoji: '😀', key: '𝄞' }],
    ['the text of a surrogate escape (a backslash, then "ud800")', { text: '\\ud800', ['\\udc00']: '\\\\ud83d' }],
    ['control characters (escaped as \\u00XX)', { text: 'a\u0001b\u001f' }],
    ['a null-prototype object', Object.assign(Object.create(null), { a: 1 })],
    // Another realm's Object.prototype is not this one's: such objects were refused as not plain.
    ['plain data made in another realm (a vm context)', runInNewContext('({ a: 1, list: [1, { b: [2] }], none: null })')],
  ])('accepts %s and returns its JSON', (_, payload) => {
    const json = serializePayload(payload, LIMIT);
    expect(json).toBe(JSON.stringify(payload));
    expect(JSON.parse(json)).toEqual(JSON.parse(JSON.stringify(payload)));
  });

  it('accepts nesting deeper than the fast walk follows, checked the long way', () => {
    const deep = { list: [nested(200, 'leaf')] };
    expect(serializePayload(deep, LIMIT)).toBe(JSON.stringify(deep));
  });

  it('accepts the same object twice when it is shared, not circular', () => {
    const shared = { x: 1 };
    expect(serializePayload({ a: shared, b: [shared, shared] }, LIMIT)).toBe('{"a":{"x":1},"b":[{"x":1},{"x":1}]}');
  });

  class Point {
    constructor(
      readonly x: number,
      readonly y: number,
    ) {}
  }
  const circular: Record<string, unknown> = { a: { b: {} } };
  ((circular.a as Record<string, unknown>).b as Record<string, unknown>).back = circular.a;
  // Twenty keys each back to the root: a walk that followed every path would never end.
  const wideCycle: Record<string, unknown> = {};
  for (let k = 0; k < 20; k++) wideCycle[`k${k}`] = wideCycle;
  /** `leaf` under `depth` levels of { n: … }. */
  const nested = (depth: number, leaf: unknown): unknown => (depth === 0 ? leaf : { n: nested(depth - 1, leaf) });
  const circularArray: unknown[] = [1];
  circularArray.push({ list: circularArray });

  const rejected: [string, unknown, string][] = [
    ['undefined at the root', undefined, 'Payload is undefined'],
    ['an undefined property', { a: { b: undefined } }, 'Payload.a.b is undefined'],
    ['an undefined array slot', [1, undefined], 'Payload[1] is undefined'],
    ['a hole in an array', [1, , 3], 'Payload[1] is a hole in a sparse array'], // eslint-disable-line no-sparse-arrays
    ['a function', { run: () => 1 }, 'Payload.run is a function'],
    ['a symbol', { s: Symbol('x') }, 'Payload.s is a symbol'],
    ['symbol keys', { [Symbol('k')]: 1 }, 'Payload has symbol keys'],
    // JSON writes only an array's indices: these were stored without the named key or the symbol.
    ['an array with a named property', { rows: Object.assign([1, 2], { total: 2 }) }, 'Payload.rows is an array with named (non-index) properties'],
    ['an array with a symbol key', { list: Object.assign([1], { [Symbol('meta')]: 1 }) }, 'Payload.list has symbol keys'],
    ['a BigInt', { n: 10n }, 'Payload.n is a BigInt'],
    ['NaN nested', { a: [{ b: Number.NaN }] }, 'Payload.a[0].b is NaN'],
    ['Infinity nested', { a: { b: [0, Number.POSITIVE_INFINITY] } }, 'Payload.a.b[1] is Infinity'],
    ['-Infinity', -Infinity, 'Payload is -Infinity'],
    ['a circular object', circular, 'Payload.a.b.back is circular'],
    ['a circular array', circularArray, 'Payload[1].list is circular'],
    ['a lone high surrogate in a string', { text: 'ab\uD800cd' }, 'Payload.text contains a lone UTF-16 surrogate'],
    ['a lone low surrogate at the end of a string', ['x\uDC00'], 'Payload[0] contains a lone UTF-16 surrogate'],
    ['reversed surrogates', { t: '\uDC00\uD800' }, 'Payload.t contains a lone UTF-16 surrogate'],
    ['a lone surrogate in a key', { outer: { ['k\uD83D']: 1 } }, 'Payload.outer has a key with a lone UTF-16 surrogate'],
    ['a lone surrogate after a backslash', { deep: [{ t: 'a\\\uDC00' }] }, 'Payload.deep[0].t contains a lone UTF-16 surrogate'],
    ['a lone surrogate as the whole payload', '\uD800', 'Payload contains a lone UTF-16 surrogate'],
    ['a Date', { when: new Date(0) }, 'Payload.when is a Date'],
    ['a Map', { m: new Map([[1, 2]]) }, 'Payload.m is a Map'],
    ['a Set', [new Set([1])], 'Payload[0] is a Set'],
    ['a class instance', { p: new Point(1, 2) }, 'Payload.p is a Point'],
    ['a boxed number', { n: new Number(1) }, 'Payload.n is a Number'],
    ['a typed array', { bytes: new Uint8Array(2) }, 'Payload.bytes is a Uint8Array'],
    ['a plain object with toJSON', { v: { toJSON: () => 'x' } }, 'Payload.v has a toJSON method'],
    ['an array with toJSON', { v: Object.assign([1], { toJSON: () => 'x' }) }, 'Payload.v has a toJSON method'],
    ['a wide cycle (every key back to the root)', wideCycle, 'Payload.k0 is circular'],
    ['a class instance from another realm', { p: runInNewContext('new (class Remote {})()') }, 'Payload.p is a Remote'],
    ['a Date from another realm', { when: runInNewContext('new Date(0)') }, 'Payload.when is a Date'],
    [
      'an object under a prototype that only looks like Object.prototype',
      { f: Object.create(Object.assign(Object.create(null), { constructor: function Object() {} })) },
      'Payload.f is a Object, not a plain JSON object',
    ],
    ['NaN below the depth the fast walk follows', nested(40, Number.NaN), `Payload${'.n'.repeat(40)} is NaN`],
  ];
  it.each(rejected)('rejects %s with INVALID_PAYLOAD naming the path', (_, payload, message) => {
    const error = thrown(() => serializePayload(payload, LIMIT));
    expect(error.code).toBe('INVALID_PAYLOAD');
    expect(error.message.startsWith(message)).toBe(true);
  });

  it('records the offending path in details', () => {
    const error = thrown(() => serializePayload({ a: [{ b: Number.NaN }] }, LIMIT));
    expect(error.details).toEqual({ path: '.a[0].b', reason: 'json' });
    expect(thrown(() => serializePayload(undefined, LIMIT)).details).toEqual({ path: '$', reason: 'json' });
  });

  it('rejects a payload over maxBytes, counting UTF-8 bytes, and accepts one exactly at it', () => {
    const atLimit = 'x'.repeat(98); // 100 bytes with the quotes
    expect(serializePayload(atLimit, 100)).toBe(JSON.stringify(atLimit));

    const over = thrown(() => serializePayload(`${atLimit}x`, 100));
    expect(over.code).toBe('INVALID_PAYLOAD');
    expect(over.message).toBe('Payload is 101 bytes once serialised; the limit (maxPayloadBytes) is 100');
    expect(over.details).toEqual({ bytes: 101, maxBytes: 100, reason: 'size' });

    // 50 two-byte characters: 52 characters of JSON, 102 bytes.
    const wide = thrown(() => serializePayload('é'.repeat(50), 100));
    expect(wide.details).toEqual({ bytes: 102, maxBytes: 100, reason: 'size' });
  });

  it('counts the bytes exactly near 3 bytes per character, and 4 per surrogate pair', () => {
    // 10 three-byte characters: 12 characters of JSON, 32 bytes.
    const euros = '€'.repeat(10);
    expect(serializePayload(euros, 36)).toBe(JSON.stringify(euros));
    expect(serializePayload(euros, 32)).toBe(JSON.stringify(euros));
    expect(thrown(() => serializePayload(euros, 31)).details).toEqual({ bytes: 32, maxBytes: 31, reason: 'size' });
    // 5 emoji (surrogate pairs): 12 characters of JSON, 22 bytes.
    const emoji = '🙂'.repeat(5);
    expect(serializePayload(emoji, 22)).toBe(JSON.stringify(emoji));
    expect(thrown(() => serializePayload(emoji, 21)).details).toEqual({ bytes: 22, maxBytes: 21, reason: 'size' });
  });
});

describe('serializePayload reads each property once', () => {
  /** An object whose `key` getter returns `first`, then `later` on every other read; `reads()` counts them. */
  const changing = (key: string, first: unknown, later: unknown) => {
    let reads = 0;
    const object = Object.defineProperty({}, key, { enumerable: true, get: () => (reads++ === 0 ? first : later) });
    return { object, reads: () => reads };
  };

  it.each<[string, unknown]>([
    ['undefined', undefined],
    ['a function', () => 1],
    ['NaN', Number.NaN],
    ['a Date', new Date(0)],
    ['an object with a toJSON method', { toJSON: () => 'other' }],
  ])('stores the value a getter gave when checked, not %s from a second read', (_, later) => {
    const { object, reads } = changing('x', 1, later);
    expect(serializePayload({ outer: object }, LIMIT)).toBe('{"outer":{"x":1}}');
    expect(reads()).toBe(1);
  });

  it('refuses what a getter gave when checked, even if a second read would give valid JSON', () => {
    const { object, reads } = changing('x', undefined, 1);
    expect(thrown(() => serializePayload(object, LIMIT)).message).toMatch(/^Payload\.x is undefined/);
    expect(reads()).toBe(1);
  });

  it('reads an array element getter once', () => {
    let reads = 0;
    const list = Object.defineProperty([1, 2], 1, { enumerable: true, get: () => (reads++ === 0 ? 2 : undefined) });
    expect(serializePayload(list, LIMIT)).toBe('[1,2]');
    expect(reads).toBe(1);
  });

  it('reads a "toJSON" that is data once, and stores that read', () => {
    const { object, reads } = changing('toJSON', 'data', () => 'not what was checked');
    expect(serializePayload(object, LIMIT)).toBe('{"toJSON":"data"}');
    expect(reads()).toBe(1);
  });

  it('refuses a cycle through a getter at its first return, without reading the getter again', () => {
    let reads = 0;
    const loop: Record<string, unknown> = Object.defineProperty({}, 'self', { enumerable: true, get: () => (reads++, loop) });
    expect(thrown(() => serializePayload({ loop }, LIMIT)).message).toMatch(/^Payload\.loop\.self is circular/);
    expect(reads).toBe(1);
  });

  /** `value` with each object and array in it behind a Proxy that counts property reads, as "path:key". */
  const counted = (value: unknown, reads: Map<string, number>, path = '$'): unknown => {
    if (value === null || typeof value !== 'object') return value;
    const target = Array.isArray(value)
      ? value.map((item, i) => counted(item, reads, `${path}[${i}]`))
      : Object.fromEntries(Object.entries(value).map(([key, item]) => [key, counted(item, reads, `${path}.${key}`)]));
    return new Proxy(target, {
      get(object, key, receiver) {
        const name = `${path}:${String(key)}`;
        reads.set(name, (reads.get(name) ?? 0) + 1);
        return Reflect.get(object, key, receiver) as unknown;
      },
    });
  };

  /** The reads `counted` should see: each key of each object, and each index and the length of each array, once. */
  const eachOnce = (value: unknown, path = '$', out = new Map<string, number>()): Map<string, number> => {
    if (value === null || typeof value !== 'object') return out;
    if (Array.isArray(value)) out.set(`${path}:length`, 1);
    for (const [key, item] of Object.entries(value)) {
      out.set(`${path}:${key}`, 1);
      eachOnce(item, Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`, out);
    }
    return out;
  };

  it('reads each property of a Proxy exactly once, and nothing else (no toJSON), and stores what it read', () => {
    const plain = { id: 7, name: 'n', tags: ['a', { deep: [true, null] }], meta: { toJSON: 'data', n: 1.5 } };
    const reads = new Map<string, number>();
    expect(serializePayload(counted(plain, reads), LIMIT)).toBe(JSON.stringify(plain));
    expect(Object.fromEntries(reads)).toEqual(Object.fromEntries(eachOnce(plain)));
  });

  it('reads each property of a Proxy with many keys, nested, once', () => {
    const plain = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, { i }]));
    const reads = new Map<string, number>();
    expect(serializePayload(counted(plain, reads), LIMIT)).toBe(JSON.stringify(plain));
    expect(Object.fromEntries(reads)).toEqual(Object.fromEntries(eachOnce(plain)));
  });

  it('still stores ordinary objects as JSON.stringify writes them', () => {
    const many: Record<string, unknown> = {};
    for (let i = 0; i < 40; i++) many[`k${i}`] = i % 2 ? { i } : `v${i}`;
    const deleted: Record<string, unknown> = { a: 1, b: { c: [2] }, gone: 3 };
    delete deleted.gone;
    const numericKeys = { b: 1, 2: 'two', a: [3], 1: null };
    for (const payload of [many, deleted, numericKeys, { text: 'x'.repeat(60), n: -0, ok: false }]) {
      expect(serializePayload(payload, LIMIT)).toBe(JSON.stringify(payload));
    }
  });

  it('keeps an own "__proto__" key as data, in small and large objects', () => {
    const small = JSON.parse('{"__proto__":{"a":1},"b":2}') as unknown;
    const large = JSON.parse(`{${Array.from({ length: 20 }, (_, i) => `"k${i}":${i}`).join(',')},"__proto__":[1]}`) as unknown;
    expect(serializePayload(small, LIMIT)).toBe('{"__proto__":{"a":1},"b":2}');
    expect(serializePayload(large, LIMIT)).toBe(JSON.stringify(large));
    expect(serializePayload(large, LIMIT)).toContain('"__proto__":[1]');
  });

  it('names the path and label of the outer payload when a getter serialises one of its own', () => {
    const outer = {
      a: {
        get b() {
          serializePayload({ inner: { deeper: [1] } }, LIMIT, 'Inner');
          return { c: Number.NaN };
        },
      },
    };
    const error = thrown(() => serializePayload(outer, LIMIT, 'Settings patch'));
    expect(error.message).toMatch(/^Settings patch\.a\.b\.c is NaN/);
    expect(error.details).toEqual({ path: '.a.b.c', reason: 'json' });
  });
});

describe('canonicalJson and contentKey', () => {
  it('sorts object keys deeply, inside arrays too, keeping array order', () => {
    const json = JSON.stringify({ b: 1, a: { d: [{ z: 1, y: 2 }, 3], c: null }, _: 'x' });
    expect(canonicalJson(json)).toBe('{"_":"x","a":{"c":null,"d":[{"y":2,"z":1},3]},"b":1}');
  });

  it('leaves scalars and arrays of scalars as they are', () => {
    expect(canonicalJson('"x"')).toBe('"x"');
    expect(canonicalJson('[3,1,2]')).toBe('[3,1,2]');
    expect(canonicalJson('null')).toBe('null');
  });

  it('gives equal keys for reordered keys and different keys for different content', () => {
    const a = contentKey(JSON.stringify({ to: 'x', body: { subject: 's', lines: [1, 2] } }));
    const b = contentKey(JSON.stringify({ body: { lines: [1, 2], subject: 's' }, to: 'x' }));
    expect(a).toBe(b);
    expect(a).toMatch(/^content:[A-Za-z0-9_-]{43}$/);
    expect(contentKey(JSON.stringify({ to: 'x', body: { subject: 's', lines: [2, 1] } }))).not.toBe(a);
    expect(contentKey(JSON.stringify({ to: 'y', body: { subject: 's', lines: [1, 2] } }))).not.toBe(a);
    expect(contentKey('"1"')).not.toBe(contentKey('1'));
  });

  it('keeps a "__proto__" key as data, so it still tells payloads apart', () => {
    // JSON.parse makes "__proto__" an own key; copying it with `out[key] =` would set a prototype.
    const json = serializePayload(JSON.parse('{"b":2,"__proto__":{"a":1}}'), LIMIT);
    expect(canonicalJson(json)).toBe('{"__proto__":{"a":1},"b":2}');
    expect(contentKey(json)).not.toBe(contentKey('{"b":2}'));
  });
});

describe('checkAttributes', () => {
  it('takes attributes made in another realm as plain, and still refuses a Map from there', () => {
    const remote: unknown = runInNewContext(`({ tenant: { type: 'String', value: 'acme' } })`);
    expect(checkAttributes(remote).attributes).toEqual({ tenant: { type: 'String', value: 'acme' } });
    const error = thrown(() => checkAttributes(runInNewContext(`new Map([['tenant', { type: 'String', value: 'acme' }]])`)));
    expect(error.code).toBe('INVALID_ARGUMENT');
  });
});
