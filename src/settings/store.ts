/**
 * The observable settings store: built-in defaults ← config file ← database overrides. Every
 * change is validated whole, persisted, then pushed to subscribers (the supervisor resizes its
 * pools from here). Changes written by other processes are found by comparing the version row.
 */
import { BehaviorSubject, type Observable } from 'rxjs';
import type { Clock } from '../clock.js';
import { SpoolError } from '../errors.js';
import type { EventBus } from '../events.js';
import { describeZod, serializePayload } from '../validate.js';
import { applyLayer, explainLayers, fillMissing, isObject, mergeOverrides, removePath, type JsonObject, type Layer } from './layers.js';
import { DEFAULT_SETTINGS, deepFreeze, settingsSchema, type Settings } from './schema.js';

/** Where the overrides live: the repository's settings row, inside a transaction. */
export interface OverridesStorage {
  read(): { overrides: string; version: number };
  version(): number;
  /** Runs `fn` atomically (read-modify-write of the overrides row). */
  atomically<T>(fn: () => T): T;
  write(overrides: string, now: number): number;
}

/** One effective leaf and the layer that set it. */
export interface ExplainedSetting {
  path: string[];
  value: unknown;
  layer: Layer;
}

/** The public settings API (`spool.settings`). */
export interface SettingsStore {
  /** The effective settings, synchronously. */
  get(): Settings;
  /** Emits the current settings on subscribe, then every change. */
  readonly settings$: Observable<Settings>;
  /** Deep-merges `patch` into the overrides; `null` removes a key. Invalid patches change nothing. */
  update(patch: unknown): Promise<Settings>;
  /** Drops every override, or those under `path` (segments, since queue names may hold dots). */
  reset(path?: string[]): Promise<Settings>;
  /** Each effective leaf with the layer it came from. */
  explain(): ExplainedSetting[];
}

/** The store plus what the runtime needs. */
export interface SettingsRuntime extends SettingsStore {
  /** Re-reads overrides if their version moved (another process); emits only real changes. */
  refresh(): void;
  /** The override version last seen. */
  readonly version: number;
  complete(): void;
}

/** Validates a full document, throwing `code` with every path and reason. */
export function validateSettings(doc: unknown, code: 'INVALID_SETTINGS' | 'INVALID_OPTIONS', what: string): Settings {
  const result = settingsSchema.safeParse(doc);
  if (!result.success) {
    throw new SpoolError(code, `Invalid ${what}: ${describeZod(result.error)}`, { cause: result.error });
  }
  return deepFreeze(result.data);
}

const DEFAULTS = DEFAULT_SETTINGS as unknown as JsonObject;

/** Whether `doc` has a value at `path`. */
function hasPath(doc: JsonObject, path: string[]): boolean {
  let node: unknown = doc;
  for (const key of path) {
    if (!isObject(node) || !Object.hasOwn(node, key)) return false;
    node = node[key];
  }
  return true;
}

/** Deletes the value at `path` (which `doc` has) from `doc` itself. */
function deletePath(doc: JsonObject, path: string[]): void {
  let node = doc;
  for (const key of path.slice(0, -1)) node = node[key] as JsonObject;
  delete node[path.at(-1)!];
}

/** The paths of every `__proto__` key in `doc` (which the layering refuses). */
function protoPaths(doc: JsonObject, at: string[]): string[][] {
  const out: string[][] = [];
  for (const [key, value] of Object.entries(doc)) {
    if (key === '__proto__') out.push([...at, key]);
    else if (isObject(value)) out.push(...protoPaths(value, [...at, key]));
  }
  return out;
}

/** What salvage() reads of a zod issue. */
interface ZodIssueLike {
  code: string;
  path: PropertyKey[];
  /** The unknown keys of an `unrecognized_keys` issue. */
  keys?: string[];
}

/** The effective document: defaults ← config ← overrides, removed keys back at their default. */
function layered(config: JsonObject, overrides: JsonObject): JsonObject {
  return fillMissing(applyLayer(applyLayer(DEFAULTS, config), overrides), DEFAULTS);
}

/** Checks the config-file layer on its own: defaults overlaid with it must be valid. */
export function validateConfigLayer(config: JsonObject, source: string): void {
  validateSettings(layered(config, {}), 'INVALID_OPTIONS', `config (${source})`);
}

/**
 * Throws INVALID_SETTINGS if `patch` would be refused by update() on a store with no overrides:
 * the CLI asks before it creates a file, so that a refused patch leaves no new file behind.
 */
export function checkFirstPatch(config: JsonObject, patch: unknown): void {
  validateSettings(layered(config, mergeOverrides({}, plainPatch(patch))), 'INVALID_SETTINGS', 'settings');
}

/**
 * The patch exactly as it will be stored: serialised first, then parsed back, so a `toJSON`, a
 * getter or a Proxy cannot pass validation as one thing and be stored as another.
 */
function plainPatch(patch: unknown): JsonObject {
  const kind = patch === null ? 'null' : Array.isArray(patch) ? 'an array' : typeof patch;
  if (!isObject(patch)) throw new SpoolError('INVALID_SETTINGS', `Expected a settings patch object, got ${kind}`);
  let json: string;
  try {
    // The payload rules: NaN, undefined, a getter that throws or a toJSON would each store
    // something other than what was validated.
    json = serializePayload(patch, Number.MAX_SAFE_INTEGER, 'Settings patch');
  } catch (error) {
    const spoolError = error as SpoolError;
    throw new SpoolError('INVALID_SETTINGS', `Invalid settings: ${spoolError.message}`, { cause: error, details: spoolError.details });
  }
  return JSON.parse(json) as JsonObject;
}

/** Creates the store. `storage` is opened lazily by the caller. */
export function createSettingsStore(deps: {
  config: JsonObject;
  storage: () => OverridesStorage;
  clock: Clock;
  events: EventBus;
}): SettingsRuntime {
  const { config, clock, events } = deps;
  const base = layered(config, {});
  let overrides: JsonObject = {};
  let version = -1;
  let current: Settings = validateSettings(base, 'INVALID_OPTIONS', 'config');
  let currentJson = JSON.stringify(current);
  const subject = new BehaviorSubject<Settings>(current);
  const settings$ = events.isolate(subject.asObservable(), 'settings$');

  const effective = (layer: JsonObject) => validateSettings(layered(config, layer), 'INVALID_SETTINGS', 'settings');

  /** Adopted values still to deliver, in order (see adopt). */
  const unannounced: { next: Settings; version: number; source: 'local' | 'external'; initial: boolean }[] = [];
  let announcing = false;

  function adopt(next: Settings, nextOverrides: JsonObject, nextVersion: number, source: 'local' | 'external') {
    // The first load is the starting point, not a change: nobody can have seen the value before it.
    const initial = version < 0;
    overrides = nextOverrides;
    version = nextVersion;
    const json = JSON.stringify(next);
    if (json === currentJson) return;
    current = next;
    currentJson = json;
    unannounced.push({ next, version: nextVersion, source, initial });
    if (announcing) return;
    // A settings$ subscriber may update() while a value is delivered: its value is delivered after
    // this one reached every subscriber, never before it (the pools, subscribed last, would then
    // be left on the older value), and the events follow in the same order.
    announcing = true;
    try {
      for (let item = unannounced.shift(); item; item = unannounced.shift()) {
        subject.next(item.next);
        if (!item.initial) events.emit({ type: 'settings.changed', settings: item.next, version: item.version, source: item.source, at: clock.now() });
      }
    } finally {
      announcing = false;
      unannounced.length = 0;
    }
  }

  /**
   * The stored overrides without what makes them invalid, cut as narrowly as the fault allows: an
   * unknown key alone (a newer Spool's setting, say), an invalid value alone, or a whole queue
   * entry when its name is invalid (a queue named `.`, which 0.1.0 allowed). One bad entry must
   * not cost every other override: a paused queue would run. `unknown` tells whether an unknown
   * key was cut (a write must not delete a newer Spool's setting on its own).
   */
  function salvage(stored: JsonObject): { kept: JsonObject; dropped: string[]; first: string; unknown: boolean; invalid: string[][] } | undefined {
    // `__proto__` keys are refused by the layering itself, before zod sees the document.
    const dropped = protoPaths(stored, []);
    let kept = dropped.reduce((doc, path) => removePath(doc, path), stored);
    const cutNames = dropped.map((path) => path.join('.'));
    // The cuts of invalid values and names, apart from unknown keys (see change()).
    const invalid: string[][] = [...dropped];
    let first = dropped.length > 0 ? 'Invalid settings: "__proto__" is not a valid key' : '';
    let unknown = false;
    // Every issue of one parse is cut in one pass, so the cost does not grow with the square of
    // the bad entries; a pass can reveal a few more (a refinement runs only on a valid object).
    for (let pass = 0; pass < 10; pass++) {
      let error: unknown;
      try {
        effective(kept);
        return { kept, dropped: cutNames, first, unknown, invalid };
      } catch (caught) {
        error = caught;
      }
      const issues = ((error as SpoolError).cause as { issues?: ZodIssueLike[] } | undefined)?.issues ?? [];
      // One copy per pass, cut in place: a copy per cut costs the square of a thousand bad queues.
      const next = structuredClone(kept);
      const made: string[] = [];
      for (const issue of issues) {
        const isUnknown = issue.code === 'unrecognized_keys';
        unknown ||= isUnknown;
        const at = issue.path.map(String);
        for (let cut of issue.code === 'unrecognized_keys' && issue.keys ? issue.keys.map((key) => [...at, key]) : [at]) {
          // A fault met where the overrides have nothing (a config value beside an override):
          // cut the nearest part they do have, a queue's entry at most (never every queue).
          const floor = cut[0] === 'queues' ? 2 : 1;
          while (cut.length > floor && !hasPath(next, cut)) cut = cut.slice(0, -1);
          if (cut.length === 0 || !hasPath(next, cut)) continue;
          deletePath(next, cut);
          made.push(cut.join('.'));
          if (!isUnknown) invalid.push(cut);
        }
      }
      // Nothing of the overrides to cut (the fault is in the defaults and config): beyond repair.
      if (made.length === 0) return undefined;
      first ||= (error as Error).message;
      cutNames.push(...made);
      kept = next;
    }
    return undefined;
  }

  function load(source: 'local' | 'external') {
    const row = deps.storage().read();
    let parsed: unknown;
    try {
      parsed = JSON.parse(row.overrides);
      if (!isObject(parsed)) throw new Error('the overrides row is not a JSON object');
    } catch (error) {
      return ignore(row.version, source, `Ignoring invalid settings overrides (version ${row.version}): ${(error as Error).message}`);
    }
    const saved = salvage(parsed);
    if (!saved) return ignore(row.version, source, `Ignoring invalid settings overrides (version ${row.version}): ${invalidity(parsed)}`);
    if (saved.dropped.length > 0) {
      events.emit({
        type: 'error',
        code: 'INVALID_SETTINGS',
        message: `Ignoring the invalid settings overrides ${saved.dropped.join(', ')} (version ${row.version}); the others apply. ${saved.first}`,
        at: clock.now(),
      });
    }
    adopt(effective(saved.kept), saved.kept, row.version, source);
  }

  /** Why `overrides` give invalid settings, or undefined when they give valid ones. */
  function invalidity(overrides: JsonObject): string | undefined {
    try {
      effective(overrides);
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  }

  /** A row beyond repair (hand-edited): reported, and the spool runs on defaults + config. */
  function ignore(rowVersion: number, source: 'local' | 'external', message: string) {
    version = rowVersion;
    events.emit({ type: 'error', code: 'INVALID_SETTINGS', message, at: clock.now() });
    adopt(effective({}), {}, rowVersion, source);
  }

  function ensureLoaded() {
    if (version < 0) load('external');
  }

  function change(compute: (stored: JsonObject) => JsonObject): Settings {
    const storage = deps.storage();
    const result = storage.atomically(() => {
      // Read inside the transaction, so a concurrent writer's change is merged, not lost.
      const row = storage.read();
      let stored: JsonObject = {};
      try {
        const parsed = JSON.parse(row.overrides);
        if (isObject(parsed)) stored = parsed;
      } catch {
        // An unreadable row is replaced by the new overrides.
      }
      // Stored entries that no longer validate (see salvage) are dropped by this write rather than
      // refuse every later change; a key this version does not know (a newer Spool's setting) is
      // never dropped on its own: the change must remove it by name. The change then meets only
      // valid overrides, and is validated strictly: a change that is invalid, alone or beside
      // them, is refused and writes nothing.
      let base = stored;
      if (invalidity(stored) !== undefined) {
        const saved = salvage(stored);
        if (saved) base = saved.invalid.reduce((doc, path) => removePath(doc, path), stored);
      }
      const nextOverrides = compute(base);
      const next = effective(nextOverrides);
      const nextVersion = storage.write(JSON.stringify(nextOverrides), clock.now());
      return { next, nextOverrides, nextVersion };
    });
    adopt(result.next, result.nextOverrides, result.nextVersion, 'local');
    return result.next;
  }

  return {
    get() {
      ensureLoaded();
      return current;
    },
    get settings$() {
      ensureLoaded();
      return settings$;
    },
    get version() {
      return version;
    },
    async update(patch) {
      const plain = plainPatch(patch);
      ensureLoaded();
      return change((stored) => mergeOverrides(stored, plain));
    },
    async reset(path) {
      if (path !== undefined && (!Array.isArray(path) || path.some((s) => typeof s !== 'string'))) {
        throw new SpoolError('INVALID_SETTINGS', 'Expected reset(path) to get an array of key segments, e.g. ["queues", "email.send"]');
      }
      ensureLoaded();
      return change((stored) => removePath(stored, path ?? []));
    },
    explain() {
      ensureLoaded();
      return explainLayers(current as unknown as JsonObject, config, overrides);
    },
    refresh() {
      if (version < 0) return load('external');
      if (deps.storage().version() !== version) load('external');
    },
    complete: () => subject.complete(),
  };
}
