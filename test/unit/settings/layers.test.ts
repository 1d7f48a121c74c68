import { describe, expect, it } from 'vitest';
import {
  applyLayer,
  explainLayers,
  fillMissing,
  hasPath,
  isObject,
  leaves,
  mergeOverrides,
  removePath,
  REPLACES,
  type JsonObject,
} from '../../../src/settings/layers.js';

describe('settings layers', () => {
  describe('isObject', () => {
    it('is true only for plain objects', () => {
      expect(isObject({})).toBe(true);
      expect(isObject({ a: 1 })).toBe(true);
      expect(isObject(null)).toBe(false);
      expect(isObject([])).toBe(false);
      expect(isObject('x')).toBe(false);
      expect(isObject(3)).toBe(false);
    });
  });

  describe('applyLayer', () => {
    it('merges objects deeply and replaces primitives and arrays', () => {
      const base: JsonObject = { a: 1, nested: { x: 1, y: 2, deep: { k: 'v' } }, list: [1, 2, 3] };
      const out = applyLayer(base, { a: 2, nested: { y: 20, deep: { j: 'w' } }, list: [9] });
      expect(out).toEqual({ a: 2, nested: { x: 1, y: 20, deep: { k: 'v', j: 'w' } }, list: [9] });
    });

    it('removes a key when the layer sets it to null', () => {
      const base: JsonObject = { keep: 1, gone: 2, queues: { email: { executor: { concurrency: 2 }, paused: true } } };
      const out = applyLayer(base, { gone: null, queues: { email: { executor: null } } });
      expect(out).toEqual({ keep: 1, queues: { email: { paused: true } } });
      expect(out).not.toHaveProperty('gone');
    });

    it('puts an object marked REPLACES in place of the base object instead of merging, and drops the marker', () => {
      const out = applyLayer({ queues: { email: { paused: true, maxAttempts: 9 } } }, { queues: { email: { [REPLACES]: true, timeoutMs: 5 } } });
      expect(out).toEqual({ queues: { email: { timeoutMs: 5 } } });
      // Only `true` is the marker: anything else stays, for the schema to report as an unknown key.
      expect(applyLayer({}, { a: { [REPLACES]: 1 } })).toEqual({ a: { [REPLACES]: 1 } });
    });

    it('removes a whole subtree with one null', () => {
      const out = applyLayer({ queues: { email: { paused: true }, sms: { paused: false } } }, { queues: { email: null } });
      expect(out).toEqual({ queues: { sms: { paused: false } } });
    });

    it('ignores a null for a key the base does not have, and strips nulls from new subtrees', () => {
      const out = applyLayer({ a: 1 }, { missing: null, fresh: { x: 1, y: null, inner: { z: null, w: 2 } } });
      expect(out).toEqual({ a: 1, fresh: { x: 1, inner: { w: 2 } } });
    });

    it('replaces a primitive with an object and an object with a primitive', () => {
      expect(applyLayer({ a: 1 }, { a: { b: 2 } })).toEqual({ a: { b: 2 } });
      expect(applyLayer({ a: { b: 2 } }, { a: 5 })).toEqual({ a: 5 });
    });

    it('does not mutate its inputs or share nested objects with the layer', () => {
      const base: JsonObject = { nested: { x: 1 } };
      const layer: JsonObject = { nested: { y: 2 }, fresh: { z: 3 } };
      const baseCopy = structuredClone(base);
      const layerCopy = structuredClone(layer);
      const out = applyLayer(base, layer);
      expect(base).toEqual(baseCopy);
      expect(layer).toEqual(layerCopy);
      expect(out.fresh).not.toBe(layer.fresh);
      expect(out.nested).not.toBe(base.nested);
    });
  });

  describe('mergeOverrides', () => {
    it('keeps null tombstones, so a later applyLayer can remove what a lower layer set', () => {
      const merged = mergeOverrides({ executor: { concurrency: 8 } }, { queues: { email: { executor: null } } });
      expect(merged).toEqual({ executor: { concurrency: 8 }, queues: { email: { executor: null } } });

      const config: JsonObject = { queues: { email: { executor: { concurrency: 2 }, paused: true } } };
      expect(applyLayer(config, merged)).toEqual({ executor: { concurrency: 8 }, queues: { email: { paused: true } } });
    });

    it('merges patches deeply, later values winning', () => {
      let overrides: JsonObject = {};
      overrides = mergeOverrides(overrides, { queueDefaults: { backoff: { delayMs: 10 } } });
      overrides = mergeOverrides(overrides, { queueDefaults: { backoff: { jitter: false }, maxAttempts: 9 } });
      overrides = mergeOverrides(overrides, { queueDefaults: { backoff: { delayMs: 20 } } });
      expect(overrides).toEqual({ queueDefaults: { backoff: { delayMs: 20, jitter: false }, maxAttempts: 9 } });
    });

    it('replaces a tombstone with a value and a value with a tombstone', () => {
      const tomb = mergeOverrides({ queues: { email: { paused: true } } }, { queues: { email: null } });
      expect(tomb).toEqual({ queues: { email: null } });
      const back = mergeOverrides(tomb, { queues: { email: { paused: false } } });
      expect(back).toEqual({ queues: { email: { [REPLACES]: true, paused: false } } });
      expect(mergeOverrides(back, { queues: { email: null } })).toEqual({ queues: { email: null } });
    });

    it('keeps a removal when a later patch fills the removed entry in: the config below stays cut off', () => {
      const config: JsonObject = { queues: { email: { paused: true, maxAttempts: 9 } }, executor: { concurrency: 2 } };
      let overrides = mergeOverrides({}, { queues: { email: null }, executor: null });
      overrides = mergeOverrides(overrides, { queues: { email: { timeoutMs: 5000 } }, executor: { concurrency: 8 } });
      overrides = mergeOverrides(overrides, { queues: { email: { backoff: { delayMs: 5 } } } });
      expect(applyLayer(config, overrides)).toEqual({ queues: { email: { timeoutMs: 5000, backoff: { delayMs: 5 } } }, executor: { concurrency: 8 } });
    });

    it('refuses the marker key in a patch', () => {
      expect(() => mergeOverrides({}, { queues: { email: { [REPLACES]: true } } })).toThrow(/is not a valid key/);
    });

    it('does not mutate the overrides it was given', () => {
      const overrides: JsonObject = { a: { b: 1 } };
      mergeOverrides(overrides, { a: { c: 2 } });
      expect(overrides).toEqual({ a: { b: 1 } });
    });
  });

  describe('removePath', () => {
    const overrides: JsonObject = {
      accepting: false,
      queues: { email: { executor: { concurrency: 2 }, paused: true }, sms: null },
    };

    it('removes the subtree at a path', () => {
      expect(removePath(overrides, ['queues', 'email', 'executor'])).toEqual({
        accepting: false,
        queues: { email: { paused: true }, sms: null },
      });
      expect(removePath(overrides, ['accepting'])).toEqual({ queues: overrides.queues });
    });

    it('removes a tombstone like any other value', () => {
      expect(removePath(overrides, ['queues', 'sms'])).toEqual({
        accepting: false,
        queues: { email: { executor: { concurrency: 2 }, paused: true } },
      });
    });

    it('prunes parents left empty', () => {
      const out = removePath({ queues: { email: { executor: { concurrency: 2 } } }, accepting: true }, ['queues', 'email', 'executor', 'concurrency']);
      expect(out).toEqual({ accepting: true });
    });

    it('writes an entry left with only the marker back as the tombstone it remembers', () => {
      const marked: JsonObject = { queues: { email: { [REPLACES]: true, timeoutMs: 5000, paused: false } } };
      expect(removePath(marked, ['queues', 'email', 'timeoutMs'])).toEqual({ queues: { email: { [REPLACES]: true, paused: false } } });
      expect(removePath(removePath(marked, ['queues', 'email', 'timeoutMs']), ['queues', 'email', 'paused'])).toEqual({ queues: { email: null } });
      expect(removePath(marked, ['queues', 'email'])).toEqual({});
    });

    it('removes everything for an empty path', () => {
      expect(removePath(overrides, [])).toEqual({});
    });

    it('leaves the document alone when the path is not set', () => {
      expect(removePath(overrides, ['nothing', 'here'])).toBe(overrides);
      expect(removePath(overrides, ['queues', 'reports'])).toEqual(overrides);
      expect(removePath(overrides, ['queues', 'email', 'executor', 'nope'])).toEqual(overrides);
    });

    it('does not mutate its input', () => {
      const copy = structuredClone(overrides);
      removePath(overrides, ['queues', 'email', 'paused']);
      expect(overrides).toEqual(copy);
    });
  });

  describe('hasPath and leaves', () => {
    it('finds values and tombstones, not absent keys', () => {
      const layer: JsonObject = { a: { b: null, c: 0 } };
      expect(hasPath(layer, ['a'])).toBe(true);
      expect(hasPath(layer, ['a', 'b'])).toBe(true);
      expect(hasPath(layer, ['a', 'c'])).toBe(true);
      expect(hasPath(layer, ['a', 'd'])).toBe(false);
      expect(hasPath(layer, ['a', 'c', 'x'])).toBe(false);
    });

    it('lists every leaf, with arrays, primitives and empty objects as leaves', () => {
      expect(leaves({ a: 1, b: { c: [1, 2], d: { e: null } }, f: {} })).toEqual([
        { path: ['a'], value: 1 },
        { path: ['b', 'c'], value: [1, 2] },
        { path: ['b', 'd', 'e'], value: null },
        { path: ['f'], value: {} },
      ]);
    });
  });

  describe('explainLayers', () => {
    const defaults: JsonObject = {
      accepting: true,
      executor: { concurrency: 4 },
      queueDefaults: { maxAttempts: 3, backoff: { type: 'exponential', delayMs: 1000 } },
      queues: {},
    };

    function explain(config: JsonObject, overrides: JsonObject) {
      const effective = applyLayer(applyLayer(defaults, config), overrides);
      return Object.fromEntries(explainLayers(effective, config, overrides).map((e) => [e.path.join('.'), [e.value, e.layer]]));
    }

    it('reports default for every leaf when no layer sets anything', () => {
      expect(explain({}, {})).toEqual({
        accepting: [true, 'default'],
        'executor.concurrency': [4, 'default'],
        'queueDefaults.maxAttempts': [3, 'default'],
        'queueDefaults.backoff.type': ['exponential', 'default'],
        'queueDefaults.backoff.delayMs': [1000, 'default'],
        queues: [{}, 'default'],
      });
    });

    it('reports the highest layer that sets each leaf', () => {
      const config: JsonObject = {
        executor: { concurrency: 8 },
        queueDefaults: { backoff: { delayMs: 50 } },
        queues: { email: { paused: true, maxAttempts: 5 } },
      };
      const overrides: JsonObject = { executor: { concurrency: 2 }, queues: { email: { maxAttempts: 9 } } };
      expect(explain(config, overrides)).toEqual({
        accepting: [true, 'default'],
        'executor.concurrency': [2, 'override'],
        'queueDefaults.maxAttempts': [3, 'default'],
        'queueDefaults.backoff.type': ['exponential', 'default'],
        'queueDefaults.backoff.delayMs': [50, 'config'],
        'queues.email.paused': [true, 'config'],
        'queues.email.maxAttempts': [9, 'override'],
      });
    });

    it('reads own keys only: queues named constructor, toString or valueOf are told apart from what every object inherits', () => {
      const config: JsonObject = { queues: { constructor: { maxAttempts: 2 }, toString: { paused: true } } };
      const overrides: JsonObject = { queues: { other: { maxAttempts: 3 }, valueOf: { maxAttempts: 4 } } };
      expect(explain(config, overrides)).toMatchObject({
        'queues.constructor.maxAttempts': [2, 'config'],
        'queues.toString.paused': [true, 'config'],
        'queues.valueOf.maxAttempts': [4, 'override'],
        'queues.other.maxAttempts': [3, 'override'],
      });
      expect(hasPath({ queues: {} }, ['queues', 'constructor'])).toBe(false);
      expect(removePath({ queues: { a: 1 } }, ['queues', 'toString'])).toEqual({ queues: { a: 1 } });
    });

    it('reports a subtree a layer replaced with a primitive or an array as one leaf of that layer', () => {
      const config: JsonObject = { queueDefaults: { backoff: ['fixed', 10] } };
      const overrides: JsonObject = { executor: 6 };
      expect(explain(config, overrides)).toEqual({
        accepting: [true, 'default'],
        executor: [6, 'override'],
        'queueDefaults.maxAttempts': [3, 'default'],
        'queueDefaults.backoff': [['fixed', 10], 'config'],
        queues: [{}, 'default'],
      });
    });

    it('credits the default, not the config, under an override that replaces the config entry', () => {
      const config: JsonObject = { queueDefaults: { maxAttempts: 7, backoff: { delayMs: 50 } } };
      const overrides: JsonObject = { queueDefaults: { [REPLACES]: true, backoff: { type: 'fixed' } } };
      const effective = fillMissing(applyLayer(applyLayer(defaults, config), overrides), defaults);
      const rows = Object.fromEntries(explainLayers(effective, config, overrides).map((e) => [e.path.join('.'), [e.value, e.layer]]));
      expect(rows).toMatchObject({
        'queueDefaults.maxAttempts': [3, 'default'],
        'queueDefaults.backoff.type': ['fixed', 'override'],
        'queueDefaults.backoff.delayMs': [1000, 'default'],
      });
    });

    it('does not list leaves an override removed with a tombstone', () => {
      const config: JsonObject = { queues: { email: { executor: { concurrency: 2 }, paused: true } } };
      const overrides: JsonObject = { queues: { email: { executor: null } } };
      const rows = explain(config, overrides);
      expect(rows).not.toHaveProperty('queues.email.executor.concurrency');
      expect(rows['queues.email.paused']).toEqual([true, 'config']);
    });
  });
});
