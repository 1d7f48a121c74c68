/**
 * Layered settings documents: defaults ← config file ← database overrides. Pure functions over
 * plain JSON. In a layer, `null` removes the key from the effective document (a tombstone), so an
 * override can take away, say, a queue's executor that the config file defines. An object in a
 * layer that holds `REPLACES: true` replaces the object below it instead of merging into it: that
 * is how overrides remember a `null` that a later patch filled in (see mergeOverrides).
 */
import { SpoolError } from '../errors.js';

/** A JSON object. */
export type JsonObject = { [key: string]: unknown };

/** Where an effective leaf's value came from. */
export type Layer = 'default' | 'config' | 'override';

/** Refuses "__proto__": assigned as a key it would replace the prototype and vanish silently. */
function assertPlainKey(key: string): void {
  if (key === '__proto__') throw new SpoolError('INVALID_SETTINGS', 'Invalid settings: "__proto__" is not a valid key');
}

/**
 * The marker key of an override object that cuts the layers below it off at its path. Not a valid
 * setting key nor queue name, so it cannot collide; rows written before it read as they did.
 */
export const REPLACES = '$replaces';

/** True when `value` is an object carrying the REPLACES marker. */
function replaces(value: unknown): value is JsonObject {
  return isObject(value) && value[REPLACES] === true;
}

/** True for a plain JSON object (not an array, not null). */
export function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Applies `layer` over `base`: objects merge deeply, a `null` removes, anything else replaces. */
export function applyLayer(base: JsonObject, layer: JsonObject): JsonObject {
  const out: JsonObject = { ...base };
  for (const [key, value] of Object.entries(layer)) {
    assertPlainKey(key);
    // The marker is layering, not a setting: only `true` is one (any other value is left to the
    // schema, which reports it as an unknown key).
    if (key === REPLACES && value === true) continue;
    if (value === null) delete out[key];
    else if (isObject(value) && isObject(out[key]) && !replaces(value)) out[key] = applyLayer(out[key] as JsonObject, value);
    else out[key] = isObject(value) ? applyLayer({}, value) : value;
  }
  return out;
}

/**
 * Puts back every key of `defaults` that `doc` lacks, recursively. Removing a key (a `null` in a
 * layer) thus means "back to the built-in default", and where that default is itself `null`
 * (no timeout, no limit) a `null` in a patch reads exactly as a user expects.
 */
export function fillMissing(doc: JsonObject, defaults: JsonObject): JsonObject {
  const out: JsonObject = { ...doc };
  for (const [key, value] of Object.entries(defaults)) {
    if (!Object.hasOwn(out, key)) out[key] = value;
    else if (isObject(value) && isObject(out[key]) && Object.keys(value).length > 0) {
      out[key] = fillMissing(out[key] as JsonObject, value);
    }
  }
  return out;
}

/**
 * Merges a patch into an overrides document, keeping `null` tombstones (unlike applyLayer). An
 * object patched over a tombstone keeps the removal as the REPLACES marker: merged plainly, it
 * would merge over the config file's entry again and bring back what the `null` removed.
 */
export function mergeOverrides(overrides: JsonObject, patch: JsonObject): JsonObject {
  const out: JsonObject = { ...overrides };
  for (const [key, value] of Object.entries(patch)) {
    assertPlainKey(key);
    // The marker is written only here: a patch naming it would cut the config off unasked.
    if (key === REPLACES) throw new SpoolError('INVALID_SETTINGS', `Invalid settings: "${REPLACES}" is not a valid key`);
    if (!isObject(value)) out[key] = value;
    else if (isObject(out[key])) out[key] = mergeOverrides(out[key] as JsonObject, value);
    else if (out[key] === null) out[key] = mergeOverrides({ [REPLACES]: true }, value);
    else out[key] = mergeOverrides({}, value); // a copy, checked for the marker at every depth
  }
  return out;
}

/** Removes the subtree at `path` from an overrides document (everything when path is empty). */
export function removePath(overrides: JsonObject, path: string[]): JsonObject {
  if (path.length === 0) return {};
  const [head, ...rest] = path as [string, ...string[]];
  if (!Object.hasOwn(overrides, head)) return overrides;
  const out: JsonObject = { ...overrides };
  if (rest.length === 0 || !isObject(out[head])) {
    delete out[head];
  } else {
    const inner = removePath(out[head] as JsonObject, rest);
    const keys = Object.keys(inner);
    if (keys.length === 0) delete out[head];
    // Only the marker left: the removal it remembers stands, written back as the tombstone it was.
    else if (keys.length === 1 && replaces(inner)) out[head] = null;
    else out[head] = inner;
  }
  return out;
}

/** True when `path` is set (a value or a tombstone) in a layer. */
export function hasPath(layer: JsonObject, path: string[]): boolean {
  let node: unknown = layer;
  for (const segment of path) {
    // Own keys only: a queue may be named constructor or toString, which every object inherits.
    if (!isObject(node) || !Object.hasOwn(node, segment)) return false;
    node = node[segment];
  }
  return true;
}

/** Every leaf of a document with its path (arrays and primitives are leaves). */
export function leaves(doc: JsonObject, prefix: string[] = []): { path: string[]; value: unknown }[] {
  const out: { path: string[]; value: unknown }[] = [];
  for (const [key, value] of Object.entries(doc)) {
    const path = [...prefix, key];
    if (isObject(value) && Object.keys(value).length > 0) out.push(...leaves(value, path));
    else out.push({ path, value });
  }
  return out;
}

/** For each effective leaf, the highest layer that sets it (or one of its ancestors). */
export function explainLayers(effective: JsonObject, config: JsonObject, overrides: JsonObject) {
  return leaves(effective).map(({ path, value }) => {
    const setBy = (layer: JsonObject) => path.some((_, i) => hasPath(layer, path.slice(0, i + 1)) && !isObject(get(layer, path.slice(0, i + 1))));
    // Under an override that REPLACES, the config file's value does not apply.
    const cut = path.some((_, i) => replaces(get(overrides, path.slice(0, i + 1))));
    const layer: Layer = hasPath(overrides, path) || setBy(overrides) ? 'override' : !cut && (hasPath(config, path) || setBy(config)) ? 'config' : 'default';
    return { path, value, layer };
  });
}

function get(doc: JsonObject, path: string[]): unknown {
  let node: unknown = doc;
  for (const segment of path) node = isObject(node) && Object.hasOwn(node, segment) ? node[segment] : undefined;
  return node;
}
