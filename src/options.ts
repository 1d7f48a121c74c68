/** createSpool()'s static options: their defaults in one place, validated at the edge. */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { systemClock, type Clock } from './clock.js';
import type { Durability } from './db/client.js';
import { SpoolError } from './errors.js';
import type { Inspect } from './runtime/supervisor.js';
import { isObject, type JsonObject } from './settings/layers.js';
import { validateConfigLayer } from './settings/store.js';
import { describeZod } from './validate.js';

/** Options of createSpool(). */
export interface SpoolOptions {
  /** The SQLite file (created if missing). The owner lock lives beside it as `<path>.lock`. */
  path: string;
  /** The config layer of the settings: a JSON file path, or the object itself. */
  config?: string | Record<string, unknown>;
  /** 'normal' (default): survives a process crash; 'full': also a power loss (fsync per commit). */
  durability?: Durability;
  /** An XState v5 inspection observer, given to the supervisor and every message actor. */
  inspect?: Inspect;
  /** Largest payload once serialised, bytes. Default 1 MiB. */
  maxPayloadBytes?: number;
  /** Time source for every timestamp and timer (tests inject one). Default: the system clock. */
  clock?: Clock;
  /**
   * Random source in [0, 1) for backoff jitter. Default Math.random. A call that throws or answers
   * outside [0, 1) (NaN, say) is answered by Math.random instead.
   */
  random?: () => number;
}

/** Defaults of the static options. */
export const OPTION_DEFAULTS = {
  durability: 'normal' as Durability,
  maxPayloadBytes: 1024 * 1024,
};


/** The largest `maxPayloadBytes` a spool may set (256 MiB). */
export const MAX_PAYLOAD_BYTES_LIMIT = 256 * 1024 * 1024;
const optionsSchema = z.strictObject({
  // SQLite cuts a path at a NUL, so `a\0b` would open `a` and its lock file would be the database.
  path: z
    .string()
    .min(1)
    .refine((p) => !p.includes('\0'), 'must not contain a NUL character')
    // SQLite's in-memory and URI names would be joined to the cwd (the lock file needs a real
    // path) and become a file literally named so; an in-memory spool could not be shared anyway.
    .refine((p) => p !== ':memory:' && !/^file:/i.test(p), "must be a file path, not ':memory:' or a file: URI (a file named so: write ./file:…)"),
  config: z.union([z.string().min(1), z.record(z.string(), z.unknown())]).optional(),
  durability: z.enum(['normal', 'full']).optional(),
  inspect: z.union([z.function(), z.object({}).loose()]).optional(),
  maxPayloadBytes: z.number().int().min(1).max(MAX_PAYLOAD_BYTES_LIMIT).optional(),
  clock: z.object({ now: z.function(), setTimeout: z.function(), clearTimeout: z.function() }).loose().optional(),
  random: z.function().optional(),
});

/** Options after defaults, with the config layer loaded. */
export interface ResolvedOptions {
  path: string;
  config: JsonObject;
  durability: Durability;
  inspect: Inspect | undefined;
  maxPayloadBytes: number;
  clock: Clock;
  random: () => number;
}

/** Validates options and loads the config file; throws INVALID_OPTIONS naming what is wrong. */
export function parseOptions(options: unknown): ResolvedOptions {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) throw new SpoolError('INVALID_OPTIONS', `Invalid createSpool options: ${describeZod(parsed.error)}`, { cause: parsed.error });
  const o = options as SpoolOptions;
  const config = loadConfig(o.config);
  return {
    path: o.path,
    config,
    durability: o.durability ?? OPTION_DEFAULTS.durability,
    inspect: o.inspect,
    maxPayloadBytes: o.maxPayloadBytes ?? OPTION_DEFAULTS.maxPayloadBytes,
    clock: o.clock ?? systemClock,
    random: o.random ? guardedRandom(o.random) : Math.random,
  };
}

/**
 * The caller's random source, kept inside [0, 1). It runs while a failed attempt is settled: a
 * throw there, or a NaN retry time the row refuses, would leave the message in flight with no
 * handler until the next boot (and a throw on a timeout's timer would crash the process).
 */
function guardedRandom(random: () => number): () => number {
  return () => {
    let value: number;
    try {
      value = random();
    } catch {
      return Math.random();
    }
    return typeof value === 'number' && value >= 0 && value < 1 ? value : Math.random();
  };
}

/** Reads the config layer from a file or takes it as given, and checks it. */
export function loadConfig(config: string | Record<string, unknown> | undefined): JsonObject {
  if (config === undefined) return {};
  let doc: unknown = config;
  const source = typeof config === 'string' ? resolve(config) : 'object';
  if (typeof config === 'string') {
    try {
      doc = JSON.parse(readFileSync(config, 'utf8'));
    } catch (cause) {
      throw new SpoolError('INVALID_OPTIONS', `Cannot read the config file ${source}: ${(cause as Error).message}`, { cause });
    }
  }
  if (!isObject(doc)) throw new SpoolError('INVALID_OPTIONS', `The config (${source}) must be a JSON object`);
  try {
    validateConfigLayer(doc, source);
  } catch (error) {
    // Whatever is wrong inside the config (a "__proto__" key included), it is an option error.
    if (error instanceof SpoolError && error.code !== 'INVALID_OPTIONS') {
      throw new SpoolError('INVALID_OPTIONS', `Invalid config (${source}): ${error.message}`, { cause: error });
    }
    throw error;
  }
  // A copy: the config is read once (README), and the caller's later edits of its object must not
  // reach the running spool, unvalidated, at the next update().
  return typeof config === 'string' ? doc : (JSON.parse(JSON.stringify(doc)) as JsonObject);
}
