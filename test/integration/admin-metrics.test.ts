import { register as defaultRegistry, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { METRIC_TYPES } from '../../src/admin/metrics.js';
import { COMMIT_BUCKETS_MS } from '../../src/runtime/committer.js';
import { registerMetrics } from '../../src/index.js';
import { call, serveAdminFor } from '../helpers/admin.js';
import { reached } from '../helpers/events.js';
import { useTempSpools } from '../helpers/spool.js';

const temp = useTempSpools();

interface Family {
  type?: string;
  help?: string;
  samples: { name: string; labels: Record<string, string>; value: number }[];
}

/** Parses the Prometheus text exposition format (0.0.4), strictly enough to fail on a malformed line. */
function parsePrometheus(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const family = (name: string) => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { samples: [] }));
    return f;
  };
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let m = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (m) {
      if (m[1] === 'TYPE') family(m[2]!).type = m[3];
      else family(m[2]!).help = m[3];
      continue;
    }
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a Prometheus line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (m[2] ?? '').match(/[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"/g) ?? []) {
      const eq = pair.indexOf('=');
      labels[pair.slice(0, eq)] = pair.slice(eq + 2, -1);
    }
    const value = m[3] === '+Inf' ? Infinity : Number(m[3]);
    if (Number.isNaN(value)) throw new Error(`not a number: ${line}`);
    const base = m[1]!.replace(/_(bucket|sum|count)$/, '');
    const owner = families.has(m[1]!) ? m[1]! : base;
    family(owner).samples.push({ name: m[1]!, labels, value });
  }
  return families;
}

const value = (f: Family | undefined, name: string, labels: Record<string, string> = {}) =>
  f?.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

describe('GET /metrics', () => {
  it('serves every metric in Prometheus format, with the right types, base units and no id labels', async () => {
    const spool = temp.open({ config: { queues: { work: { executor: { concurrency: 3 } } } } });
    spool.register('work', async () => {});
    await spool.start();
    const { base } = await serveAdminFor(temp, spool);
    const done = reached(spool.events$, 'done', 4, 'work');
    for (let i = 0; i < 4; i++) await spool.send('work', { i });
    await done;
    const dead = reached(spool.events$, 'dead', 1, 'orphan');
    await spool.send('orphan', {});
    await dead;

    const res = await call(base, '/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    expect(res.headers.get('content-type')).toContain('version=0.0.4');
    const families = parsePrometheus(res.text);
    for (const [name, type] of Object.entries(METRIC_TYPES)) {
      expect(families.get(name)?.type, name).toBe(type);
      expect(families.get(name)?.help, name).toBeTruthy();
      expect(name).toMatch(/^spool_/);
      if (type === 'counter') expect(name).toMatch(/_total$/);
    }
    for (const f of families.values()) for (const s of f.samples) expect(Object.keys(s.labels)).not.toContain('id');

    const messages = families.get('spool_messages');
    expect(value(messages, 'spool_messages', { queue: 'orphan', state: 'dead' })).toBe(1);
    expect(value(families.get('spool_messages_sent_total'), 'spool_messages_sent_total')).toBe(5);
    expect(value(families.get('spool_messages_completed_total'), 'spool_messages_completed_total')).toBe(4);
    expect(value(families.get('spool_messages_dead_total'), 'spool_messages_dead_total')).toBe(1);
    expect(value(families.get('spool_messages_failed_total'), 'spool_messages_failed_total', { code: 'NO_CONSUMER' })).toBe(1);
    expect(value(families.get('spool_pool_concurrency'), 'spool_pool_concurrency', { pool: 'work' })).toBe(3);
    expect(value(families.get('spool_pool_concurrency'), 'spool_pool_concurrency', { pool: 'default' })).toBe(4);
    expect(value(families.get('spool_pool_active'), 'spool_pool_active', { pool: 'work' })).toBe(0);
    expect(value(families.get('spool_db_size_bytes'), 'spool_db_size_bytes')).toBeGreaterThan(0);
    expect(value(families.get('spool_accepting'), 'spool_accepting')).toBe(1);
    const handler = families.get('spool_handler_duration_seconds');
    expect(value(handler, 'spool_handler_duration_seconds_count', { queue: 'work' })).toBe(4);
    expect(value(handler, 'spool_handler_duration_seconds_bucket', { queue: 'work', le: '+Inf' })).toBe(4);
    expect(value(families.get('spool_queue_wait_seconds'), 'spool_queue_wait_seconds_count', { queue: 'work' })).toBe(4);
    // Buckets are cumulative: never decreasing with le.
    const buckets = handler!.samples.filter((s) => s.name.endsWith('_bucket') && s.labels.queue === 'work').map((s) => s.value);
    expect(buckets).toEqual([...buckets].sort((a, b) => a - b));
    // The commit histogram is the core's own (telemetry().commit), its buckets in seconds.
    const commits = families.get('spool_commit_duration_seconds')!;
    const scraped = value(commits, 'spool_commit_duration_seconds_count')!;
    expect(scraped).toBeGreaterThan(0);
    expect(scraped).toBeLessThanOrEqual(spool.telemetry().commit.count);
    expect(value(commits, 'spool_commit_duration_seconds_bucket', { le: '+Inf' })).toBe(scraped);
    expect(value(commits, 'spool_commit_duration_seconds_sum')).toBeGreaterThan(0);
    const bounds = commits.samples.filter((s) => s.name.endsWith('_bucket')).map((s) => s.labels.le);
    expect(bounds).toEqual([...COMMIT_BUCKETS_MS.map((ms) => String(ms / 1000)), '+Inf']);
  });

  it('keeps the default pool apart from the own pool of a queue named "default"', async () => {
    const spool = temp.open({ config: { executor: { concurrency: 4 }, queues: { default: { executor: { concurrency: 2 } } } } });
    spool.register('default', async () => {});
    await spool.start();
    const { base } = await serveAdminFor(temp, spool);
    const families = parsePrometheus((await call(base, '/metrics')).text);
    for (const name of ['spool_pool_concurrency', 'spool_pool_active']) {
      const pools = families.get(name)!.samples.map((s) => s.labels.pool);
      // One series per pool: the same labels twice would be one pool's value overwriting the other's.
      expect(new Set(pools).size).toBe(pools.length);
    }
    expect(value(families.get('spool_pool_concurrency'), 'spool_pool_concurrency', { pool: 'default' })).toBe(4);
    expect(value(families.get('spool_pool_concurrency'), 'spool_pool_concurrency', { pool: 'queue:default' })).toBe(2);
    expect(value(families.get('spool_pool_active'), 'spool_pool_active', { pool: 'queue:default' })).toBe(0);
  });

  it('keeps counters monotonic across scrapes', async () => {
    const spool = temp.open();
    spool.register('work', async () => {});
    await spool.start();
    const { base } = await serveAdminFor(temp, spool);
    const sent = async () => value(parsePrometheus((await call(base, '/metrics')).text).get('spool_messages_sent_total'), 'spool_messages_sent_total')!;
    const readings = [await sent()];
    for (let round = 0; round < 3; round++) {
      const done = reached(spool.events$, 'done', 3, 'work');
      for (let i = 0; i < 3; i++) await spool.send('work', { round, i });
      await done;
      readings.push(await sent());
    }
    expect(readings).toEqual([0, 3, 6, 9]);
  });

  it('registers into the registry it is given and leaves prom-client\'s default registry alone', async () => {
    const spool = temp.open();
    const registry = new Registry();
    const metrics = registerMetrics(spool, registry);
    temp.onCleanup(() => metrics.stop());
    await spool.send('q', { a: 1 });
    const text = await registry.metrics();
    expect(parsePrometheus(text).get('spool_messages')?.type).toBe('gauge');
    expect(value(parsePrometheus(text).get('spool_messages'), 'spool_messages', { queue: 'q', state: 'pending' })).toBe(1);
    expect((await defaultRegistry.getMetricsAsJSON()).some((m) => m.name.startsWith('spool_'))).toBe(false);
  });
});
