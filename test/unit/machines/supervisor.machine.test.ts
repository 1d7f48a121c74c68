import { afterEach, describe, expect, it } from 'vitest';
import { createActor, type Actor } from 'xstate';
import {
  adjustChangesNothing,
  byName,
  DEFAULT_POOL,
  freeSlots,
  poolOf,
  supervisorMachine,
  type PoolLimits,
  type SupervisorEvent,
} from '../../../machines/supervisor.machine.js';
import { between, createRng } from '../../helpers/random.js';

const limits = (concurrency: number, queues: Record<string, number> = {}, paused: string[] = []): PoolLimits => ({
  concurrency,
  queues,
  paused,
});

describe('supervisor machine', () => {
  let actor: Actor<typeof supervisorMachine> | undefined;
  afterEach(() => {
    actor?.stop();
    actor = undefined;
  });

  function start(input: PoolLimits) {
    actor = createActor(supervisorMachine, { input }).start();
    return actor;
  }
  const context = () => actor!.getSnapshot().context;

  it('starts stopped with pools built from its input', () => {
    const a = start(limits(4, { email: 2 }, ['sms']));
    expect(a.getSnapshot().value).toBe('stopped');
    expect(context().pools).toEqual({ [DEFAULT_POOL]: { concurrency: 4, active: 0 }, email: { concurrency: 2, active: 0 } });
    expect(context().routes).toEqual({ email: 'email' });
    expect(context().paused).toEqual({ sms: true });
    expect(freeSlots(context())).toEqual({ [DEFAULT_POOL]: 4, email: 2 });
  });

  it('moves between stopped and running on START and STOP', () => {
    const a = start(limits(1));
    a.send({ type: 'START' });
    expect(a.getSnapshot().value).toBe('running');
    a.send({ type: 'STOP' });
    expect(a.getSnapshot().value).toBe('stopped');
    a.send({ type: 'START' });
    expect(a.getSnapshot().value).toBe('running');
  });

  it('counts ACQUIRE and RELEASE per pool', () => {
    const a = start(limits(4, { email: 2 }));
    a.send({ type: 'START' });
    a.send({ type: 'ACQUIRE', counts: { [DEFAULT_POOL]: 3, email: 2 } });
    expect(context().pools).toEqual({ [DEFAULT_POOL]: { concurrency: 4, active: 3 }, email: { concurrency: 2, active: 2 } });
    expect(freeSlots(context())).toEqual({ [DEFAULT_POOL]: 1, email: 0 });

    a.send({ type: 'RELEASE', counts: { [DEFAULT_POOL]: 2 } });
    a.send({ type: 'RELEASE', counts: { email: 1 } });
    expect(context().pools).toEqual({ [DEFAULT_POOL]: { concurrency: 4, active: 1 }, email: { concurrency: 2, active: 1 } });
    expect(freeSlots(context())).toEqual({ [DEFAULT_POOL]: 3, email: 1 });
  });

  it('applies ADJUST as RELEASE then ACQUIRE, in one step', () => {
    const a = start(limits(4, { email: 2 }));
    a.send({ type: 'ACQUIRE', counts: { [DEFAULT_POOL]: 4, email: 1 } });
    let steps = 0;
    const sub = a.subscribe(() => steps++);
    // Releases first: a full pool gives back 2 and takes 2 without ever going above its limit.
    a.send({ type: 'ADJUST', release: { [DEFAULT_POOL]: 2, email: 1 }, acquire: { [DEFAULT_POOL]: 2 } });
    sub.unsubscribe();
    expect(steps).toBe(1);
    expect(context().pools).toEqual({ [DEFAULT_POOL]: { concurrency: 4, active: 4 }, email: { concurrency: 2, active: 0 } });

    // The same counts as two events give the same context.
    const b = createActor(supervisorMachine, { input: limits(4, { email: 2 }) }).start();
    b.send({ type: 'ACQUIRE', counts: { [DEFAULT_POOL]: 4, email: 1 } });
    b.send({ type: 'RELEASE', counts: { [DEFAULT_POOL]: 2, email: 1 } });
    b.send({ type: 'ACQUIRE', counts: { [DEFAULT_POOL]: 2 } });
    expect(b.getSnapshot().context).toEqual(context());
    b.stop();
  });

  it('drops a lingering pool whose last handler an ADJUST releases', () => {
    const a = start(limits(4, { email: 2 }));
    a.send({ type: 'ACQUIRE', counts: { email: 1 } });
    a.send({ type: 'CONFIGURE', limits: limits(4) });
    a.send({ type: 'ADJUST', release: { email: 1 }, acquire: { [DEFAULT_POOL]: 1 } });
    expect(context().pools).toEqual({ [DEFAULT_POOL]: { concurrency: 4, active: 1 } });
  });

  it('counts releases not yet sent as free slots, never above the limit', () => {
    const a = start(limits(4, { email: 2 }));
    a.send({ type: 'ACQUIRE', counts: { [DEFAULT_POOL]: 4, email: 2 } });
    expect(freeSlots(context(), { [DEFAULT_POOL]: 1 })).toEqual({ [DEFAULT_POOL]: 1, email: 0 });
    expect(freeSlots(context(), { email: 5 })).toEqual({ [DEFAULT_POOL]: 0, email: 2 });
    a.send({ type: 'CONFIGURE', limits: limits(1, { email: 2 }) });
    // Shrunk below active: a release frees a slot only once active is under the new limit.
    expect(freeSlots(context(), { [DEFAULT_POOL]: 3 })[DEFAULT_POOL]).toBe(0);
    expect(freeSlots(context(), { [DEFAULT_POOL]: 4 })[DEFAULT_POOL]).toBe(1);
  });

  it('ADJUST equals RELEASE then ACQUIRE, and adjustChangesNothing is true only where it changes nothing (2,000 random cases)', () => {
    // A seeded generator: the same cases on every run.
    const rng = createRng(42);
    const rand = (n: number) => between(rng, 0, n - 1);
    const keys = [DEFAULT_POOL, 'a', 'b', 'c'];
    const counts = () => {
      const out: Record<string, number> = {};
      for (const key of keys) if (rand(2)) out[key] = rand(3);
      return out;
    };
    const randomLimits = () => {
      const queues: Record<string, number> = {};
      for (const key of ['a', 'b']) if (rand(2)) queues[key] = rand(4);
      return limits(rand(5), queues);
    };
    let noops = 0;
    let busyNoops = 0;
    for (let i = 0; i < 2000; i++) {
      const input = randomLimits();
      const history: SupervisorEvent[] = [];
      // Some history: claims, releases and limit changes (which leave lingering pools).
      for (let step = rand(6); step > 0; step--) {
        const pick = rand(3);
        if (pick === 0) history.push({ type: 'ACQUIRE', counts: counts() });
        else if (pick === 1) history.push({ type: 'RELEASE', counts: counts() });
        else history.push({ type: 'CONFIGURE', limits: randomLimits() });
      }
      // Handlers running, as when a drain settles some and claims as many.
      history.push({ type: 'ACQUIRE', counts: counts() });
      const a = start(input);
      // The twin takes the same history, then the two events ADJUST stands for.
      const twin = createActor(supervisorMachine, { input }).start();
      for (const event of history) (a.send(event), twin.send(event));
      const acquire = counts();
      // Half the cases release exactly what they acquire: the steady state of a drain. The
      // others may release more than a pool holds, where the order of the two steps shows.
      const release = rand(2) ? { ...acquire } : counts();
      const before = structuredClone(context());
      const predicted = adjustChangesNothing(before, release, acquire);
      a.send({ type: 'ADJUST', release, acquire });
      twin.send({ type: 'RELEASE', counts: release });
      twin.send({ type: 'ACQUIRE', counts: acquire });
      expect(context()).toEqual(twin.getSnapshot().context);
      twin.stop();
      if (predicted) {
        noops++;
        if (Object.values(acquire).some((n) => n > 0)) busyNoops++;
        expect(context()).toEqual(before);
      }
      a.stop();
      actor = undefined;
    }
    // Enough cases of each kind that the check means something.
    expect(noops).toBeGreaterThan(200);
    expect(noops).toBeLessThan(1800);
    expect(busyNoops).toBeGreaterThan(50);
  });

  it('keeps accounting while stopped, so handlers finishing after STOP are released', () => {
    const a = start(limits(2));
    a.send({ type: 'START' });
    a.send({ type: 'ACQUIRE', counts: { [DEFAULT_POOL]: 2 } });
    a.send({ type: 'STOP' });
    a.send({ type: 'RELEASE', counts: { [DEFAULT_POOL]: 2 } });
    expect(a.getSnapshot().value).toBe('stopped');
    expect(context().pools[DEFAULT_POOL]).toEqual({ concurrency: 2, active: 0 });
    a.send({ type: 'CONFIGURE', limits: limits(6) });
    expect(context().pools[DEFAULT_POOL]).toEqual({ concurrency: 6, active: 0 });
  });

  it('never lets active go below zero on an extra RELEASE', () => {
    const a = start(limits(2));
    a.send({ type: 'ACQUIRE', counts: { [DEFAULT_POOL]: 1 } });
    a.send({ type: 'RELEASE', counts: { [DEFAULT_POOL]: 5 } });
    expect(context().pools[DEFAULT_POOL]).toEqual({ concurrency: 2, active: 0 });
    expect(freeSlots(context())[DEFAULT_POOL]).toBe(2);
  });

  it('keeps active counts across CONFIGURE and gives no free slots when shrunk below active', () => {
    const a = start(limits(4, { email: 3 }));
    a.send({ type: 'START' });
    a.send({ type: 'ACQUIRE', counts: { [DEFAULT_POOL]: 4, email: 3 } });
    a.send({ type: 'CONFIGURE', limits: limits(1, { email: 1 }) });
    expect(context().pools).toEqual({ [DEFAULT_POOL]: { concurrency: 1, active: 4 }, email: { concurrency: 1, active: 3 } });
    // Above its new limit, a pool reports 0 free, never a negative number.
    expect(freeSlots(context())).toEqual({ [DEFAULT_POOL]: 0, email: 0 });

    a.send({ type: 'RELEASE', counts: { [DEFAULT_POOL]: 3, email: 2 } });
    expect(freeSlots(context())).toEqual({ [DEFAULT_POOL]: 0, email: 0 });
    a.send({ type: 'RELEASE', counts: { [DEFAULT_POOL]: 1, email: 1 } });
    expect(freeSlots(context())).toEqual({ [DEFAULT_POOL]: 1, email: 1 });
  });

  it('gives free slots at once when a pool grows', () => {
    const a = start(limits(2));
    a.send({ type: 'ACQUIRE', counts: { [DEFAULT_POOL]: 2 } });
    expect(freeSlots(context())[DEFAULT_POOL]).toBe(0);
    a.send({ type: 'CONFIGURE', limits: limits(5) });
    expect(freeSlots(context())[DEFAULT_POOL]).toBe(3);
  });

  it('keeps a queue that lost its own executor at concurrency 0 until its handlers finish, then drops it', () => {
    const a = start(limits(4, { email: 2 }));
    a.send({ type: 'START' });
    a.send({ type: 'ACQUIRE', counts: { email: 2 } });

    a.send({ type: 'CONFIGURE', limits: limits(4) });
    expect(context().pools.email).toEqual({ concurrency: 0, active: 2 });
    expect(context().routes).toEqual({});
    // New claims for email come from the default pool; the lingering pool takes nothing new.
    expect(poolOf(context(), 'email')).toBe(DEFAULT_POOL);
    expect(freeSlots(context())).toEqual({ [DEFAULT_POOL]: 4, email: 0 });

    a.send({ type: 'RELEASE', counts: { email: 1 } });
    expect(context().pools.email).toEqual({ concurrency: 0, active: 1 });
    a.send({ type: 'CONFIGURE', limits: limits(3) });
    expect(context().pools.email).toEqual({ concurrency: 0, active: 1 });

    a.send({ type: 'RELEASE', counts: { email: 1 } });
    expect(context().pools).not.toHaveProperty('email');
    expect(Object.keys(context().pools)).toEqual([DEFAULT_POOL]);
    expect(freeSlots(context())).toEqual({ [DEFAULT_POOL]: 3 });
  });

  it('drops an idle queue executor at once when CONFIGURE removes it', () => {
    const a = start(limits(4, { email: 2 }));
    a.send({ type: 'CONFIGURE', limits: limits(4) });
    expect(context().pools).toEqual({ [DEFAULT_POOL]: { concurrency: 4, active: 0 } });
  });

  it('gives a lingering queue its executor back with the running count kept', () => {
    const a = start(limits(4, { email: 2 }));
    a.send({ type: 'ACQUIRE', counts: { email: 2 } });
    a.send({ type: 'CONFIGURE', limits: limits(4) });
    a.send({ type: 'CONFIGURE', limits: limits(4, { email: 3 }) });
    expect(context().pools.email).toEqual({ concurrency: 3, active: 2 });
    expect(poolOf(context(), 'email')).toBe('email');
    expect(freeSlots(context()).email).toBe(1);
  });

  it('routes queues with their own executor to it and every other queue to the default pool', () => {
    const a = start(limits(4, { email: 2, 'sms.v2': 1 }));
    expect(poolOf(context(), 'email')).toBe('email');
    expect(poolOf(context(), 'sms.v2')).toBe('sms.v2');
    expect(poolOf(context(), 'reports')).toBe(DEFAULT_POOL);
    a.send({ type: 'CONFIGURE', limits: limits(4, { reports: 1 }) });
    expect(poolOf(context(), 'email')).toBe(DEFAULT_POOL);
    expect(poolOf(context(), 'reports')).toBe('reports');
  });

  it('replaces the paused set on every CONFIGURE', () => {
    const a = start(limits(4, {}, ['email', 'sms']));
    expect(context().paused).toEqual({ email: true, sms: true });
    a.send({ type: 'CONFIGURE', limits: limits(4, {}, ['sms']) });
    expect(context().paused).toEqual({ sms: true });
    a.send({ type: 'CONFIGURE', limits: limits(4) });
    expect(context().paused).toEqual({});
  });

  // Valid queue names that are also Object.prototype members must stay plain keys.
  for (const name of ['constructor', 'toString', 'hasOwnProperty', '__proto__']) {
    it(`treats a queue named ${name} like any other`, () => {
      const a = start(limits(4));
      expect(poolOf(context(), name)).toBe(DEFAULT_POOL);
      expect(context().paused[name]).toBeUndefined();

      a.send({ type: 'CONFIGURE', limits: limits(4, { [name]: 2 }, [name]) });
      expect(poolOf(context(), name)).toBe(name);
      expect(context().paused[name]).toBe(true);
      expect(Object.keys(context().pools).sort()).toEqual([DEFAULT_POOL, name].sort());
      a.send({ type: 'ACQUIRE', counts: { [name]: 2 } });
      expect(context().pools[name]).toEqual({ concurrency: 2, active: 2 });
      expect(freeSlots(context())[name]).toBe(0);
      expect(Object.keys(freeSlots(context())).sort()).toEqual([DEFAULT_POOL, name].sort());

      // Losing its executor, it lingers like any queue, then goes.
      a.send({ type: 'CONFIGURE', limits: limits(4) });
      expect(context().pools[name]).toEqual({ concurrency: 0, active: 2 });
      expect(poolOf(context(), name)).toBe(DEFAULT_POOL);
      expect(context().paused[name]).toBeUndefined();
      a.send({ type: 'RELEASE', counts: { [name]: 2 } });
      expect(Object.keys(context().pools)).toEqual([DEFAULT_POOL]);
      expect(context().pools[name]).toBeUndefined();
    });
  }

  it('does not let ACQUIRE and RELEASE change limits or routes', () => {
    const a = start(limits(4, { email: 2 }, ['sms']));
    a.send({ type: 'ACQUIRE', counts: { email: 1, [DEFAULT_POOL]: 1 } });
    a.send({ type: 'RELEASE', counts: { email: 1, [DEFAULT_POOL]: 1 } });
    expect(context().routes).toEqual({ email: 'email' });
    expect(context().paused).toEqual({ sms: true });
    expect(context().pools).toEqual({ [DEFAULT_POOL]: { concurrency: 4, active: 0 }, email: { concurrency: 2, active: 0 } });
  });
});

describe('byName', () => {
  it('inherits no key, so names of Object.prototype members read undefined until set', () => {
    const record = byName<number>();
    for (const name of ['constructor', 'toString', 'hasOwnProperty', '__proto__', 'valueOf']) {
      expect(name in record).toBe(false);
      expect(record[name]).toBeUndefined();
      record[name] = 1;
      expect(Object.prototype.hasOwnProperty.call(record, name)).toBe(true);
    }
    expect(Object.keys(record).sort()).toEqual(['__proto__', 'constructor', 'hasOwnProperty', 'toString', 'valueOf']);
  });

  it('copies the entries it is given, a "__proto__" key as a plain key', () => {
    const source = JSON.parse('{"email": 2, "__proto__": 3}') as Record<string, number>;
    const record = byName(source);
    expect(Object.entries(record).sort()).toEqual([['__proto__', 3], ['email', 2]]);
    record.email = 5;
    expect(source.email).toBe(2);
    // Each record is its own: keys set on one never show on another.
    expect(byName<number>().email).toBeUndefined();
  });
});
