/**
 * Live settings on real files: the layers (defaults ← config file ← stored overrides), validation,
 * persistence across restarts, and the live effect on pools, pausing and admission.
 */
import Database from 'better-sqlite3';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_SETTINGS,
  type HandlerContext,
  type Message,
  type SettingsChangedEvent,
  type Settings,
  type Spool,
  type SpoolEvent,
} from '../../src/index.js';
import { nextEvent, reached } from '../helpers/events.js';
import { createBaton, createGate } from '../helpers/gate.js';
import { rejection } from '../helpers/errors.js';
import { overridesRow } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';

/** A poll this long cannot be what makes a change take effect within a test. */
const NO_POLL = { processor: { pollIntervalMs: 3_600_000 } };

const spools = useTempSpools();

/** Writes the config file of this test and returns its path. */
function writeConfig(config: Record<string, unknown>): string {
  const file = join(spools.dir, 'spool.config.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

/** Every settings.changed event from now on. */
function collectChanges(spool: Spool): SettingsChangedEvent[] {
  const seen: SettingsChangedEvent[] = [];
  spool.events$.subscribe((e) => {
    if (e.type === 'settings.changed') seen.push(e);
  });
  return seen;
}

/**
 * Holds each handler on its own gate, so a test can finish chosen messages one at a time.
 * Counts runs per id, the most inside at once, and aborted signals.
 */
function holdEach() {
  const gates = new Map<string, ReturnType<typeof createGate>>();
  const started: string[] = [];
  const runs = new Map<string, number>();
  const signals: AbortSignal[] = [];
  let inside = 0;
  let max = 0;
  let all = false;
  let waiters: { n: number; resolve: () => void }[] = [];
  return {
    async handler(message: Message, { signal }: HandlerContext) {
      const gate = createGate();
      gates.set(message.id, gate);
      if (all) gate.open();
      started.push(message.id);
      runs.set(message.id, (runs.get(message.id) ?? 0) + 1);
      signals.push(signal);
      inside += 1;
      max = Math.max(max, inside);
      waiters = waiters.filter((w) => (started.length >= w.n ? (w.resolve(), false) : true));
      try {
        await gate.wait();
      } finally {
        inside -= 1;
      }
    },
    /** Resolves once `n` handlers have started in total. */
    arrived(n: number) {
      return new Promise<void>((resolve) => (started.length >= n ? resolve() : waiters.push({ n, resolve })));
    },
    release(id: string) {
      gates.get(id)!.open();
    },
    releaseAll() {
      all = true;
      for (const gate of gates.values()) gate.open();
    },
    /** Starts measuring `max` afresh from the current count. */
    resetMax() {
      max = inside;
    },
    started,
    runs,
    get inside() {
      return inside;
    },
    get max() {
      return max;
    },
    get aborted() {
      return signals.filter((s) => s.aborted).length;
    },
  };
}

describe('live pool resizing', () => {
  it('reaches and holds the limit before and after growing, and growing needs no poll', async () => {
    const spool = spools.open({ config: { executor: { concurrency: 2 }, ...NO_POLL } });
    const baton = createBaton();
    spool.register('work', () => baton.enter());
    await spool.sendBatch('work', Array.from({ length: 12 }, (_, i) => i));
    const allDone = reached(spool.events$, 'done', 12);
    await spool.start();

    await baton.arrived(2);
    expect(baton.inside).toBe(2);
    expect(spool.supervisor.getSnapshot().context.pools['*']).toEqual({ concurrency: 2, active: 2 });

    // Nothing finishes and the poll is an hour away: only the resize itself can start more.
    await spool.settings.update({ executor: { concurrency: 5 } });
    await baton.arrived(5);
    expect(baton.inside).toBe(5);
    expect((await spool.stats()).pools.default).toEqual({ concurrency: 5, active: 5 });
    expect((await spool.stats()).queues.work).toMatchObject({ pending: 7, processing: 5 });

    // Each released wave refills the grown pool to its new limit, never beyond.
    baton.release();
    await baton.arrived(10);
    expect(baton.inside).toBe(5);
    baton.openForever();
    await allDone;
    expect(baton.max).toBe(5);
    expect(baton.total).toBe(12);
  });

  it('shrinking lets running handlers finish and starts nothing until the pool is under the new limit', async () => {
    const spool = spools.open({ config: { executor: { concurrency: 4 }, ...NO_POLL } });
    const held = holdEach();
    spool.register('work', held.handler);
    await spool.sendBatch('work', Array.from({ length: 8 }, (_, i) => i));
    const allDone = reached(spool.events$, 'done', 8);
    await spool.start();
    await held.arrived(4);

    await spool.settings.update({ executor: { concurrency: 1 } });
    // Over the limit: the four keep running (none aborted), the pool just takes no more.
    expect(spool.supervisor.getSnapshot().context.pools['*']).toEqual({ concurrency: 1, active: 4 });
    expect(held.inside).toBe(4);
    expect(held.aborted).toBe(0);

    const [a, b, c, d] = held.started as [string, string, string, string];
    const twoDone = reached(spool.events$, 'done', 2);
    held.release(a);
    held.release(b);
    await twoDone;
    // The claim that ran with those settles found no free slot: 2 active is still not under 1.
    expect(held.started).toHaveLength(4);
    expect((await spool.stats()).queues.work).toMatchObject({ pending: 4, processing: 2 });
    expect((await spool.stats()).pools.default).toEqual({ concurrency: 1, active: 2 });

    const thirdDone = reached(spool.events$, 'done', 1);
    held.release(c);
    await thirdDone;
    expect(held.started).toHaveLength(4);
    expect((await spool.stats()).pools.default).toEqual({ concurrency: 1, active: 1 });

    // Under the limit at last: exactly one starts.
    held.release(d);
    await held.arrived(5);
    expect(held.inside).toBe(1);
    expect((await spool.stats()).queues.work).toMatchObject({ pending: 3, processing: 1 });

    held.resetMax();
    held.releaseAll();
    await allDone;
    expect(held.max).toBe(1);
    expect(held.aborted).toBe(0);
    expect([...held.runs.values()].every((n) => n === 1)).toBe(true);
  });

  it('moves a queue to its own executor and back while handlers run, losing and repeating nothing', async () => {
    const spool = spools.open({ config: { executor: { concurrency: 2 }, ...NO_POLL } });
    const held = holdEach();
    spool.register('email', held.handler);
    const ids = await spool.sendBatch('email', Array.from({ length: 10 }, (_, i) => i));
    const done = reached(spool.events$, 'done', 10);
    await spool.start();
    await held.arrived(2);
    const [first, second] = held.started as [string, string];

    // Its own executor: the queue claims from a fresh pool; the two running count against '*'.
    await spool.settings.update({ queues: { email: { executor: { concurrency: 3 } } } });
    await held.arrived(5);
    expect(spool.supervisor.getSnapshot().context.pools).toEqual({
      '*': { concurrency: 2, active: 2 },
      email: { concurrency: 3, active: 3 },
    });

    // Freeing the default pool gives the queue nothing: it claims from its own, which is full.
    const twoDone = reached(spool.events$, 'done', 2);
    held.release(first);
    held.release(second);
    await twoDone;
    expect(held.started).toHaveLength(5);
    expect((await spool.stats()).pools).toEqual({
      default: { concurrency: 2, active: 0 },
      byQueue: { email: { concurrency: 3, active: 3 } },
    });

    // Back to the default executor: the old pool lingers at 0 until its three handlers finish.
    await spool.settings.update({ queues: { email: { executor: null } } });
    await held.arrived(7);
    expect(spool.supervisor.getSnapshot().context.pools).toEqual({
      '*': { concurrency: 2, active: 2 },
      email: { concurrency: 0, active: 3 },
    });
    expect(held.inside).toBe(5);

    held.releaseAll();
    const finished = (await done).map((e) => (e as { id: string }).id);
    expect(new Set(finished)).toEqual(new Set(ids));
    expect(held.started).toHaveLength(10);
    expect([...held.runs.values()].every((n) => n === 1)).toBe(true);
    expect(held.aborted).toBe(0);
    expect((await spool.stats()).pools).toEqual({ default: { concurrency: 2, active: 0 }, byQueue: {} });
    // Every row is done and deleted: the queue stays listed with zeros.
    expect((await spool.stats()).queues).toEqual({ email: { pending: 0, activating: 0, processing: 0, dead: 0, done: 0 } });
  });
});

describe('paused and accepting', () => {
  it('a paused queue claims nothing, keeps accepting, and resumes at once when un-paused', async () => {
    const spool = spools.open({ config: { executor: { concurrency: 1 }, ...NO_POLL } });
    const held = holdEach();
    spool.register('email', held.handler);
    spool.register('sms', () => {});
    await spool.start();
    await spool.sendBatch('email', [1, 2, 3, 4]);
    await held.arrived(1);

    await spool.settings.update({ queues: { email: { paused: true } } });
    // The running one finishes; its freed slot is not used for the paused queue.
    const firstDone = reached(spool.events$, 'done', 1, 'email');
    held.release(held.started[0]!);
    await firstDone;
    // Paused, not closed: sends are stored; other queues run (their claims pass over email).
    await spool.send('email', 5);
    const smsDone = reached(spool.events$, 'done', 1, 'sms');
    await spool.send('sms', 'x');
    await smsDone;
    expect(held.started).toHaveLength(1);
    expect((await spool.stats()).queues.email).toMatchObject({ pending: 4, processing: 0 });

    const rest = reached(spool.events$, 'done', 4, 'email');
    await spool.settings.update({ queues: { email: { paused: false } } });
    await held.arrived(2);
    held.releaseAll();
    await rest;
    expect(held.max).toBe(1);
  });

  it('accepting false rejects send and sendBatch with NOT_ACCEPTING, stores nothing, and keeps processing', async () => {
    const spool = spools.open({ config: NO_POLL });
    const baton = createBaton();
    spool.register('email', () => baton.enter());
    await spool.sendBatch('email', [1, 2]);
    await spool.settings.update({ accepting: false });

    expect((await rejection(spool.send('email', 3))).code).toBe('NOT_ACCEPTING');
    expect((await rejection(spool.sendBatch('email', [4, 5]))).code).toBe('NOT_ACCEPTING');
    expect((await rejection(spool.send('brand-new', 1))).code).toBe('NOT_ACCEPTING');
    expect((await spool.stats()).accepting).toBe(false);
    expect((await spool.stats()).queues).toEqual({ email: { pending: 2, activating: 0, processing: 0, dead: 0, done: 0 } });

    // Drain mode: what is stored still runs.
    const drained = reached(spool.events$, 'done', 2);
    await spool.start();
    baton.openForever();
    await drained;

    await spool.settings.update({ accepting: true });
    const again = reached(spool.events$, 'done', 1);
    await spool.send('email', 6);
    await again;
  });

  it('a queue with accepting false rejects its sends only', async () => {
    const spool = spools.open({ config: NO_POLL });
    await spool.settings.update({ queues: { 'email.send': { accepting: false } } });

    const error = await rejection(spool.send('email.send', { to: 'a@b.c' }));
    expect(error.code).toBe('NOT_ACCEPTING');
    expect(error.message).toContain('email.send');
    expect((await rejection(spool.sendBatch('email.send', [1, 2]))).code).toBe('NOT_ACCEPTING');
    await spool.send('sms', 1);
    // email.send is configured, so it is listed, idle.
    expect((await spool.stats()).queues).toEqual({ 'email.send': { pending: 0, activating: 0, processing: 0, dead: 0, done: 0 }, sms: { pending: 1, activating: 0, processing: 0, dead: 0, done: 0 } });

    await spool.settings.update({ queues: { 'email.send': { accepting: true } } });
    await spool.send('email.send', 1);
    expect((await spool.stats()).queues['email.send']?.pending).toBe(1);
  });
});

describe('validation', () => {
  const invalid: [string, unknown, string][] = [
    ['a negative concurrency', { executor: { concurrency: -1 } }, 'executor.concurrency'],
    ['zero concurrency', { queues: { email: { executor: { concurrency: 0 } } } }, 'queues.email.executor.concurrency'],
    ['NaN', { executor: { concurrency: Number.NaN } }, 'executor.concurrency'],
    ['a fraction', { processor: { batchSize: 1.5 } }, 'processor.batchSize'],
    ['a string for a number', { processor: { pollIntervalMs: '100' } }, 'processor.pollIntervalMs'],
    ['a number for a boolean', { accepting: 0 }, 'accepting'],
    ['an unknown top-level key', { concurrency: 3 }, '"concurrency"'],
    ['an unknown nested key', { executor: { size: 3 } }, 'executor'],
    ['an unknown queue key', { queues: { email: { pause: true } } }, 'queues.email'],
    ['a bad queue name', { queues: { 'bad name!': { paused: true } } }, 'queues.bad name!'],
    ['an enum outside its values', { noConsumer: 'drop' }, 'noConsumer'],
  ];

  it('reads null on a key with a built-in default as "back to the built-in default", so null means no limit', async () => {
    const spool = spools.open({ config: { executor: { concurrency: 3 }, queueDefaults: { timeoutMs: 5000, maxPending: 10 } } });
    await spool.settings.update({ executor: null, queueDefaults: { timeoutMs: null, maxPending: null } });
    const now = spool.settings.get();
    expect(now.executor).toEqual(DEFAULT_SETTINGS.executor);
    expect(now.queueDefaults.timeoutMs).toBeNull();
    expect(now.queueDefaults.maxPending).toBeNull();
    await spool.settings.reset();
    expect(spool.settings.get().queueDefaults.timeoutMs).toBe(5000);
  });

  it.each(invalid)('rejects %s with INVALID_SETTINGS naming the path, and changes nothing', async (_, patch, path) => {
    const spool = spools.open({ config: { executor: { concurrency: 3 } } });
    await spool.settings.update({ processor: { batchSize: 50 } });
    const before = spool.settings.get();
    const row = overridesRow(spools.path);
    const changes = collectChanges(spool);

    const error = await rejection(spool.settings.update(patch));
    expect(error.code).toBe('INVALID_SETTINGS');
    expect(error.message).toContain(path);
    expect(spool.settings.get()).toBe(before);
    expect(overridesRow(spools.path)).toEqual(row);
    expect(changes).toEqual([]);
  });

  it('rejects a patch that is not an object, and a reset path that is not an array of strings', async () => {
    const spool = spools.open();
    for (const patch of [null, [], 'accepting', 3]) {
      expect((await rejection(spool.settings.update(patch))).code).toBe('INVALID_SETTINGS');
    }
    for (const path of ['queues', [1], ['queues', null]]) {
      expect((await rejection(spool.settings.reset(path as string[]))).code).toBe('INVALID_SETTINGS');
    }
    expect(spool.settings.get()).toEqual(DEFAULT_SETTINGS);
    expect(overridesRow(spools.path)).toBeUndefined();
  });
});

describe('layers and persistence', () => {
  it('overrides survive a restart, and a reset returns to the config-file value', async () => {
    const config = writeConfig({ executor: { concurrency: 3 }, queues: { 'email.send': { executor: { concurrency: 2 } } } });
    const first = spools.open({ config });
    expect(first.settings.get().executor.concurrency).toBe(3);
    await first.settings.update({ executor: { concurrency: 7 }, queues: { 'email.send': { paused: true } } });
    await first.close();

    const second = spools.open({ config });
    expect(second.settings.get().executor.concurrency).toBe(7);
    expect(second.settings.get().queues['email.send']).toEqual({ executor: { concurrency: 2 }, paused: true });
    await second.start();
    expect(second.supervisor.getSnapshot().context.pools['*']).toEqual({ concurrency: 7, active: 0 });

    // Only the executor override goes; the dotted queue name's override stays.
    await second.settings.reset(['executor']);
    expect(second.settings.get().executor.concurrency).toBe(3);
    expect(second.supervisor.getSnapshot().context.pools['*']).toEqual({ concurrency: 3, active: 0 });
    expect(second.settings.get().queues['email.send']?.paused).toBe(true);
    await second.settings.reset(['queues', 'email.send']);
    expect(second.settings.get().queues['email.send']).toEqual({ executor: { concurrency: 2 } });
    await second.close();

    const third = spools.open({ config });
    expect(third.settings.get().executor.concurrency).toBe(3);
    expect(third.settings.get().queues['email.send']).toEqual({ executor: { concurrency: 2 } });
  });

  it('update with null removes a queue executor the config file defines, until reset', async () => {
    const config = writeConfig({ queues: { email: { executor: { concurrency: 2 } } } });
    const spool = spools.open({ config });
    await spool.start();
    expect((await spool.stats()).pools.byQueue).toEqual({ email: { concurrency: 2, active: 0 } });

    await spool.settings.update({ queues: { email: { executor: null } } });
    expect(spool.settings.get().queues.email).toEqual({});
    expect((await spool.stats()).pools.byQueue).toEqual({});
    await spool.close();

    const again = spools.open({ config });
    expect(again.settings.get().queues.email?.executor).toBeUndefined();
    await again.settings.reset(['queues', 'email', 'executor']);
    expect(again.settings.get().queues.email?.executor).toEqual({ concurrency: 2 });
  });

  it('a null keeps the config file\'s queue entry away when a later patch sets another key of that queue', async () => {
    const config = writeConfig({ queues: { email: { paused: true, maxAttempts: 9 } } });
    const spool = spools.open({ config });
    await spool.settings.update({ queues: { email: null } });
    expect(spool.settings.get().queues.email).toBeUndefined();
    await spool.settings.update({ queues: { email: { timeoutMs: 5000 } } });
    // Merged plainly over the config again, this brought back paused: true and stopped the queue.
    expect(spool.settings.get().queues.email).toEqual({ timeoutMs: 5000 });
    await spool.close();

    const again = spools.open({ config });
    expect(again.settings.get().queues.email).toEqual({ timeoutMs: 5000 });
    await again.settings.reset(['queues', 'email', 'timeoutMs']);
    expect(again.settings.get().queues.email).toBeUndefined();
    await again.settings.reset(['queues', 'email']);
    expect(again.settings.get().queues.email).toEqual({ paused: true, maxAttempts: 9 });
  });

  it('a config file changed between restarts changes the defaults, and overrides still win', async () => {
    const config = writeConfig({ executor: { concurrency: 3 }, processor: { batchSize: 50 } });
    const first = spools.open({ config });
    await first.settings.update({ executor: { concurrency: 6 } });
    await first.close();

    writeConfig({ executor: { concurrency: 2 }, processor: { batchSize: 20 }, noConsumer: 'delete' });
    const second = spools.open({ config });
    const s = second.settings.get();
    expect(s.executor.concurrency).toBe(6);
    expect(s.processor.batchSize).toBe(20);
    expect(s.noConsumer).toBe('delete');
    const layerOf = (path: string[]) => second.settings.explain().find((e) => e.path.join('/') === path.join('/'))?.layer;
    expect(layerOf(['executor', 'concurrency'])).toBe('override');
    expect(layerOf(['processor', 'batchSize'])).toBe('config');
    expect(layerOf(['processor', 'pollIntervalMs'])).toBe('default');
  });

  it('explain() gives every effective leaf with its value and the layer that set it', async () => {
    const spool = spools.open({ config: { executor: { concurrency: 3 }, queues: { 'email.send': { executor: { concurrency: 2 } } } } });
    await spool.settings.update({ processor: { batchSize: 10 }, queues: { 'email.send': { paused: true } } });

    const explained = spool.settings.explain();
    const byPath = new Map(explained.map((e) => [JSON.stringify(e.path), e]));
    expect(byPath.get('["executor","concurrency"]')).toEqual({ path: ['executor', 'concurrency'], value: 3, layer: 'config' });
    expect(byPath.get('["processor","batchSize"]')).toMatchObject({ value: 10, layer: 'override' });
    expect(byPath.get('["processor","pollIntervalMs"]')).toMatchObject({ value: 1000, layer: 'default' });
    expect(byPath.get('["queues","email.send","executor","concurrency"]')).toMatchObject({ value: 2, layer: 'config' });
    expect(byPath.get('["queues","email.send","paused"]')).toMatchObject({ value: true, layer: 'override' });
    expect(byPath.get('["accepting"]')).toMatchObject({ value: true, layer: 'default' });
    // Every leaf's value is the effective one.
    const get = (path: string[]) => path.reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], spool.settings.get());
    for (const e of explained) expect(get(e.path)).toEqual(e.value);
  });

  it('an override entry that no longer validates (a queue named "." from 0.1.0) is dropped alone: the others apply', async () => {
    const first = spools.open();
    await first.settings.update({ processor: { batchSize: 7 } });
    await first.close();
    const other = new Database(spools.path);
    const legacy = { queues: { '.': { paused: true }, email: { paused: true } }, executor: { concurrency: 4 } };
    other.prepare('UPDATE settings_overrides SET overrides = ?, version = version + 1 WHERE id = 1').run(JSON.stringify(legacy));
    other.close();

    const spool = spools.open();
    const errors: SpoolEvent[] = [];
    spool.events$.subscribe((e) => e.type === 'error' && errors.push(e));
    const handled: unknown[] = [];
    spool.register('email', (m) => void handled.push(m.payload));
    await spool.start();
    expect(errors).toEqual([expect.objectContaining({ code: 'INVALID_SETTINGS', message: expect.stringContaining('overrides queues.. (version') })]);
    // Before, the whole row was ignored: email ran while paused, on the default pool.
    expect(spool.settings.get().queues.email).toEqual({ paused: true });
    expect(spool.settings.get().executor.concurrency).toBe(4);
    await spool.send('email', { to: 'must wait' });
    await spool.stop();
    expect(handled).toEqual([]);
    // The next change drops the entry for good, and keeps the rest.
    await spool.settings.update({ processor: { batchSize: 5 } });
    expect(JSON.parse(overridesRow(spools.path)!.overrides)).toEqual({ queues: { email: { paused: true } }, executor: { concurrency: 4 }, processor: { batchSize: 5 } });
  });

  it('cuts an unknown key or a bad value alone; an update never deletes a key this version does not know', async () => {
    const first = spools.open();
    await first.settings.update({ processor: { batchSize: 7 } });
    await first.close();
    const row = { queues: { email: { paused: true, maxAttempts: -1, futureQueueKey: 1 } }, futureKey: { x: 1 } };
    const other = new Database(spools.path);
    other.prepare('UPDATE settings_overrides SET overrides = ?, version = version + 1 WHERE id = 1').run(JSON.stringify(row));
    other.close();

    const spool = spools.open();
    const errors: SpoolEvent[] = [];
    spool.events$.subscribe((e) => e.type === 'error' && errors.push(e));
    expect(spool.settings.get().queues.email).toEqual({ paused: true });
    expect(errors).toHaveLength(1);
    for (const path of ['futureKey', 'queues.email.maxAttempts', 'queues.email.futureQueueKey']) expect((errors[0] as { message: string }).message).toContain(path);
    // A key a newer Spool may have written stays: the update is refused (as before), the row kept.
    expect((await rejection(spool.settings.update({ processor: { batchSize: 5 } }))).code).toBe('INVALID_SETTINGS');
    expect(JSON.parse(overridesRow(spools.path)!.overrides)).toEqual(row);
    // Removing them by name is the way on; the bad value goes with that write.
    await spool.settings.update({ futureKey: null, queues: { email: { futureQueueKey: null } }, processor: { batchSize: 5 } } as never);
    expect(spool.settings.get().queues.email).toEqual({ paused: true });
    expect(JSON.parse(overridesRow(spools.path)!.overrides)).toMatchObject({ queues: { email: { paused: true } }, processor: { batchSize: 5 } });
    expect(JSON.parse(overridesRow(spools.path)!.overrides).queues.email).not.toHaveProperty('maxAttempts');
    // A change that is itself invalid is still refused, never "salvaged" away.
    expect((await rejection(spool.settings.update({ executor: { concurrency: -3 } }))).code).toBe('INVALID_SETTINGS');
    expect(spool.settings.get().processor.batchSize).toBe(5);
  });

  it('a fault made of a config value and an override cuts that override, not the row', async () => {
    const first = spools.open({ config: writeConfig({ queueDefaults: { budget: { busyMs: 100, perMs: 1000 } } }) });
    await first.settings.update({ queueDefaults: { budget: { perMs: 200 } }, queues: { work: { paused: true } } });
    await first.close();
    // The config raised busyMs (valid alone): busyMs 500 > the stored perMs 200.
    const spool = spools.open({ config: writeConfig({ queueDefaults: { budget: { busyMs: 500, perMs: 1000 } } }) });
    const errors: SpoolEvent[] = [];
    spool.events$.subscribe((e) => e.type === 'error' && errors.push(e));
    expect(spool.settings.get().queues.work).toEqual({ paused: true });
    expect(spool.settings.get().queueDefaults.budget).toEqual({ busyMs: 500, perMs: 1000 });
    expect(errors).toEqual([expect.objectContaining({ code: 'INVALID_SETTINGS', message: expect.stringContaining('overrides queueDefaults.budget (version') })]);
  });

  it('a change beside a stored leftover is validated strictly: refused, or applied whole, never half', async () => {
    const config = writeConfig({ queueDefaults: { budget: { busyMs: 10, perMs: 100 } } });
    const first = spools.open({ config });
    await first.settings.update({ processor: { batchSize: 7 } });
    await first.close();
    const row = { queueDefaults: { budget: { busyMs: 50 } }, queues: { '.': { paused: true } } };
    const other = new Database(spools.path);
    other.prepare('UPDATE settings_overrides SET overrides = ?, version = version + 1 WHERE id = 1').run(JSON.stringify(row));
    other.close();
    const spool = spools.open({ config });
    // perMs 20 under the stored busyMs 50 is invalid: refused, as it is without the leftover.
    // Before, the write dropped the valid busyMs 50 and reported success.
    expect((await rejection(spool.settings.update({ queueDefaults: { budget: { perMs: 20 } } }))).code).toBe('INVALID_SETTINGS');
    expect(JSON.parse(overridesRow(spools.path)!.overrides)).toEqual(row);
    // A valid change lands whole, and the leftover goes with it.
    await spool.settings.update({ queueDefaults: { budget: { perMs: 60 } } });
    expect(JSON.parse(overridesRow(spools.path)!.overrides)).toEqual({ queueDefaults: { budget: { busyMs: 50, perMs: 60 } } });
  });

  it('a thousand bad entries, or a "__proto__" key, cost only themselves', async () => {
    const first = spools.open();
    await first.settings.update({ processor: { batchSize: 7 } });
    await first.close();
    const bad = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`q${i}`, { maxAttempts: 0 }]));
    for (const row of [
      { queues: { keep: { paused: true }, ...bad }, accepting: false },
      JSON.parse('{"__proto__":{"x":1},"queues":{"keep":{"paused":true}},"accepting":false}'),
    ]) {
      const other = new Database(spools.path);
      other.prepare('UPDATE settings_overrides SET overrides = ?, version = version + 1 WHERE id = 1').run(JSON.stringify(row));
      other.close();
      const spool = spools.open();
      expect(spool.settings.get().queues.keep).toEqual({ paused: true });
      expect(spool.settings.get().accepting).toBe(false);
      await spool.settings.update({ executor: { concurrency: 5 } });
      expect(JSON.parse(overridesRow(spools.path)!.overrides)).toEqual({ queues: { keep: { paused: true } }, accepting: false, executor: { concurrency: 5 } });
      await spool.close();
    }
  });

  it('a hand-edited invalid overrides row is reported as an error event, ignored, and boot succeeds', async () => {
    const config = writeConfig({ executor: { concurrency: 3 } });
    const first = spools.open({ config });
    await first.settings.update({ executor: { concurrency: 9 } });
    await first.close();

    for (const garbage of ['{"executor": {"concurrency": 9', '{"executor":{"concurrency":-3}}', '[1,2]']) {
      const other = new Database(spools.path);
      other.prepare('UPDATE settings_overrides SET overrides = ?, version = version + 1 WHERE id = 1').run(garbage);
      other.close();

      const spool = spools.open({ config });
      const errors: SpoolEvent[] = [];
      spool.events$.subscribe((e) => e.type === 'error' && errors.push(e));
      spool.register('work', () => {});
      await spool.start();
      expect(errors).toEqual([expect.objectContaining({ type: 'error', code: 'INVALID_SETTINGS' })]);
      expect(spool.settings.get().executor.concurrency).toBe(3);
      expect(spool.supervisor.getSnapshot().context.pools['*']?.concurrency).toBe(3);
      const done = reached(spool.events$, 'done', 1);
      await spool.send('work', 1);
      await done;
      await spool.close();
    }

    // A valid update replaces the unreadable row.
    const last = spools.open({ config });
    await last.settings.update({ processor: { batchSize: 5 } });
    expect(JSON.parse(overridesRow(spools.path)!.overrides)).toEqual({ processor: { batchSize: 5 } });
  });
});

describe('settings$ and settings.changed', () => {
  it('settings$ emits the current value on subscribe, then each change', async () => {
    const spool = spools.open({ config: { executor: { concurrency: 3 } } });
    const seen: Settings[] = [];
    const sub = spool.settings.settings$.subscribe((s) => seen.push(s));
    // Synchronously, like a BehaviorSubject.
    expect(seen).toEqual([spool.settings.get()]);

    await spool.settings.update({ executor: { concurrency: 4 } });
    expect(seen.map((s) => s.executor.concurrency)).toEqual([3, 4]);

    const late: Settings[] = [];
    spool.settings.settings$.subscribe((s) => late.push(s)).unsubscribe();
    expect(late.map((s) => s.executor.concurrency)).toEqual([4]);
    sub.unsubscribe();
  });

  it('emits settings.changed only for real changes, local and from another connection', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock, config: { processor: { pollIntervalMs: 1000 } } });
    // Overrides present at boot are the starting point, not a change.
    await spools.open().settings.update({ executor: { concurrency: 5 } });
    const changes = collectChanges(spool);
    await spool.start();
    expect(spool.settings.get().executor.concurrency).toBe(5);
    expect(changes).toEqual([]);

    await spool.settings.update({ executor: { concurrency: 5 } });
    await spool.settings.reset(['queues']);
    expect(changes).toEqual([]);
    await spool.settings.update({ executor: { concurrency: 6 } });
    expect(changes).toEqual([expect.objectContaining({ source: 'local', settings: expect.objectContaining({ executor: { concurrency: 6 } }) })]);

    // Another connection: a send and a no-op settings write bump the file, but change nothing.
    const other = spools.open();
    await other.send('work', 1);
    await other.settings.update({ executor: { concurrency: 6 } });
    clock.advance(1000);
    expect(changes).toHaveLength(1);

    await other.settings.update({ executor: { concurrency: 2 } });
    clock.advance(1000);
    expect(changes).toHaveLength(2);
    expect(changes[1]).toMatchObject({ type: 'settings.changed', source: 'external', settings: { executor: { concurrency: 2 } } });
    expect(changes[1]!.version).toBe(overridesRow(spools.path)!.version);
    expect(spool.supervisor.getSnapshot().context.pools['*']?.concurrency).toBe(2);
  });

  it('a new poll interval applies at once, so a shorter one finds external changes sooner', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock, config: NO_POLL });
    await spool.start();
    await spool.settings.update({ processor: { pollIntervalMs: 100 } });

    const external = nextEvent<SettingsChangedEvent>(spool.events$, (e) => e.type === 'settings.changed' && e.source === 'external');
    await spools.open().settings.update({ queues: { email: { paused: true } } });
    clock.advance(100);
    expect((await external).settings.queues.email?.paused).toBe(true);
    expect(spool.supervisor.getSnapshot().context.paused).toEqual({ email: true });
  });
});

describe('settings are read once and handed out read-only', () => {
  it('a later edit of the config object the spool was made with changes nothing, an invalid one breaks nothing', async () => {
    // The store re-layered the caller's own object at every update: an edit went live unvalidated,
    // and an invalid one made every later update() fail.
    const config: { executor: { concurrency: number }; accepting?: boolean } = { executor: { concurrency: 2 } };
    const spool = spools.open({ config });
    expect(spool.settings.get().executor.concurrency).toBe(2);
    config.executor.concurrency = 0;
    config.accepting = false;
    await spool.settings.update({ processor: { batchSize: 50 } });
    expect(spool.settings.get()).toMatchObject({ accepting: true, executor: { concurrency: 2 }, processor: { batchSize: 50 } });
  });

  it('settings.get(), settings$ values and DEFAULT_SETTINGS are frozen: an edit throws and nothing changes', async () => {
    const spool = spools.open();
    const got = spool.settings.get();
    expect(() => {
      (got as { accepting: boolean }).accepting = false;
    }).toThrow(TypeError);
    expect(() => {
      (got.executor as { concurrency: number }).concurrency = 99;
    }).toThrow(TypeError);
    expect(() => {
      (DEFAULT_SETTINGS.executor as { concurrency: number }).concurrency = 0;
    }).toThrow(TypeError);
    expect(DEFAULT_SETTINGS.executor.concurrency).toBe(4);
    await expect(spool.send('q', 1)).resolves.toBeTypeOf('string');
  });

  it('a settings$ subscriber that corrects a value with update() leaves the pools on the corrected one, events in version order', async () => {
    // Its update was delivered inside the first delivery: the pools, subscribed after it, got the
    // corrected 8 and then the stale 16, and settings.changed came out as version 2, then 1.
    const spool = spools.open();
    spool.settings.settings$.subscribe((s) => {
      if (s.executor.concurrency > 8) void spool.settings.update({ executor: { concurrency: 8 } });
    });
    const versions: number[] = [];
    spool.events$.subscribe((e) => e.type === 'settings.changed' && versions.push(e.version));
    spool.register('q', () => {});
    await spool.start();
    const corrected = nextEvent<SettingsChangedEvent>(spool.events$, (e) => e.type === 'settings.changed' && e.settings.executor.concurrency === 8);
    await spool.settings.update({ executor: { concurrency: 16 } });
    await corrected;
    expect(spool.settings.get().executor.concurrency).toBe(8);
    expect((await spool.stats()).pools.default.concurrency).toBe(8);
    expect(versions).toHaveLength(2);
    expect(versions[0]).toBeLessThan(versions[1]!);
  });
});
