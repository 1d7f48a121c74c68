/**
 * The runtime's pools (src/runtime/pools.ts) over the supervisor machine: releases counted as free
 * before they are sent, one ADJUST per claim, none when it would change nothing, and that event
 * held until the claim's handlers have started. Checked against the handlers actually running,
 * through random settles, claims, failed claims and limit changes.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_POOL } from '../../../machines/supervisor.machine.js';
import { createPools, type Pools } from '../../../src/runtime/pools.js';
import { DEFAULT_SETTINGS, type Settings } from '../../../src/settings/schema.js';
import { between, createRng } from '../../helpers/random.js';

/** Settings with `concurrency` for the default executor and an own executor per entry of `own`. */
function settingsWith(concurrency: number, own: Record<string, number> = {}): Settings {
  const queues: Settings['queues'] = {};
  for (const [queue, n] of Object.entries(own)) queues[queue] = { executor: { concurrency: n } };
  return { ...DEFAULT_SETTINGS, executor: { concurrency }, queues };
}

/** How many snapshots the supervisor actor emits while `run` runs. */
function snapshotsDuring(pools: Pools, run: () => void): number {
  let n = 0;
  const sub = pools.actor.subscribe(() => n++);
  run();
  sub.unsubscribe();
  return n;
}

/** A claim's commit as the executor runs it: take the slots, start the handlers, send the event. */
function claim(pools: Pools, counts: Record<string, number>): void {
  pools.acquire(counts);
  pools.flush();
}

describe('pools', () => {
  it('counts a release as free at once, and sends it with the next claim as one event', () => {
    const pools = createPools(settingsWith(2), undefined);
    pools.acquire({ [DEFAULT_POOL]: 2 });
    expect(pools.freeSlots()[DEFAULT_POOL]).toBe(0);
    pools.release(DEFAULT_POOL);
    // Free for the plan, though the actor has not heard of it yet.
    expect(pools.freeSlots()[DEFAULT_POOL]).toBe(1);
    expect(pools.actor.getSnapshot().context.pools[DEFAULT_POOL]!.active).toBe(2);
    pools.release(DEFAULT_POOL);
    expect(snapshotsDuring(pools, () => claim(pools, { [DEFAULT_POOL]: 1 }))).toBe(1);
    expect(pools.actor.getSnapshot().context.pools[DEFAULT_POOL]).toEqual({ concurrency: 2, active: 1 });
    pools.dispose();
  });

  it("holds a claim's event until flush, and any other call sends it first, in order", () => {
    const pools = createPools(settingsWith(2), undefined);
    // The handlers start between acquire and flush: the actor has not heard of them yet.
    expect(snapshotsDuring(pools, () => pools.acquire({ [DEFAULT_POOL]: 2 }))).toBe(0);
    expect(pools.actor.getSnapshot().context.pools[DEFAULT_POOL]!.active).toBe(0);
    expect(snapshotsDuring(pools, () => pools.flush())).toBe(1);
    expect(pools.actor.getSnapshot().context.pools[DEFAULT_POOL]!.active).toBe(2);
    expect(snapshotsDuring(pools, () => pools.flush())).toBe(0);

    // A handler that settles before flush: its release must follow the claim that took its slot
    // (released first, the slot would clamp at zero and the claim would then count it forever).
    pools.release(DEFAULT_POOL);
    pools.release(DEFAULT_POOL);
    pools.acquire({ [DEFAULT_POOL]: 1 });
    pools.release(DEFAULT_POOL);
    expect(pools.actor.getSnapshot().context.pools[DEFAULT_POOL]!.active).toBe(1);
    expect(pools.view().default).toEqual({ concurrency: 2, active: 0 });

    // The plan's questions see the held event too.
    pools.acquire({ [DEFAULT_POOL]: 2 });
    expect(pools.freeSlots()[DEFAULT_POOL]).toBe(0);
    expect(pools.context().pools[DEFAULT_POOL]!.active).toBe(2);
    pools.dispose();
  });

  it('sends nothing when a claim takes what the releases gave back, unless an inspector looks', () => {
    for (const inspect of [undefined, () => {}]) {
      const pools = createPools(settingsWith(3), inspect);
      pools.acquire({ [DEFAULT_POOL]: 3 });
      pools.release(DEFAULT_POOL);
      pools.release(DEFAULT_POOL);
      const sent = snapshotsDuring(pools, () => claim(pools, { [DEFAULT_POOL]: 2 }));
      expect(sent).toBe(inspect ? 1 : 0);
      expect(pools.view().default).toEqual({ concurrency: 3, active: 3 });
      pools.dispose();
    }
  });

  it('matches the handlers running and never gives more slots than a pool has (600 random runs)', () => {
    // A seeded generator (mulberry32): the same runs every time.
    const rng = createRng(20261201);
    const rand = (n: number) => between(rng, 0, n - 1);
    const randomSettings = () => {
      const own: Record<string, number> = {};
      for (const queue of ['a', 'b']) if (rand(2)) own[queue] = rand(4);
      return settingsWith(rand(5), own);
    };
    let claims = 0;
    let skipped = 0;
    for (let run = 0; run < 600; run++) {
      const inspect = run % 3 === 0 ? () => {} : undefined;
      let settings = randomSettings();
      const pools = createPools(settings, inspect);
      // The pool of each handler running now.
      const running: string[] = [];
      const settle = () => {
        if (running.length === 0) return;
        pools.release(running.splice(rand(running.length), 1)[0]!);
      };
      const configure = () => {
        settings = randomSettings();
        pools.configure(settings);
      };
      for (let step = 0; step < 40; step++) {
        const pick = rand(4);
        if (pick === 0) settle();
        else if (pick === 1) configure();
        else {
          // A group commit that runs a claim: the plan, then callbacks of the commit's other
          // writes (a settings change, a settle), then the claim's own callback, unless it failed.
          const free = pools.freeSlots();
          const limits = pools.context();
          const counts: Record<string, number> = Object.create(null);
          for (const key of [DEFAULT_POOL, ...Object.values(limits.routes)]) {
            const n = rand((free[key] ?? 0) + 1);
            if (n > 0) counts[key] = n;
            // The plan's free slots are honest: running + taken stays within the limit.
            const now = running.filter((p) => p === key).length;
            expect(now + n).toBeLessThanOrEqual(Math.max(now, limits.pools[key]!.concurrency));
          }
          if (rand(3) === 0) configure();
          if (rand(4) === 0) settle();
          if (rand(8) === 0) continue; // The claim rolled back: its releases stay pending.
          for (const [key, n] of Object.entries(counts)) for (let i = 0; i < n; i++) running.push(key);
          const before = structuredClone(pools.actor.getSnapshot().context);
          if (Object.keys(counts).length > 0) {
            claims++;
            const sent = snapshotsDuring(pools, () => {
              pools.acquire(counts);
              // The handlers start: some may settle before the event goes out.
              if (rand(4) === 0) settle();
              pools.flush();
            });
            if (sent === 0) {
              skipped++;
              expect(inspect).toBeUndefined();
              expect(pools.actor.getSnapshot().context).toEqual(before);
            }
          } else {
            pools.applyReleases();
          }
        }
      }
      // Once every release is applied, the actor counts exactly the handlers running, per pool,
      // and keeps no empty pool that has lost its executor.
      const { pools: counted, routes } = (pools.view(), pools.actor.getSnapshot().context);
      for (const [key, pool] of Object.entries(counted)) {
        expect(pool.active).toBe(running.filter((p) => p === key).length);
        if (key !== DEFAULT_POOL && !(key in routes)) expect(pool.active).toBeGreaterThan(0);
      }
      for (const key of running) expect(counted[key]).toBeDefined();
      pools.dispose();
    }
    // Both paths ran often enough to mean something.
    expect(claims).toBeGreaterThan(2000);
    expect(skipped).toBeGreaterThan(100);
  });
});
