/**
 * Prometheus metrics through prom-client, in a registry the caller owns (the host app's default
 * registry is never touched). Gauges and the counters kept by the core are read at scrape; the
 * handler-duration and queue-wait histograms are observed from committed events. Names follow
 * Prometheus conventions: `spool_` prefix, base units, `_total` counters, no message ids.
 */
import type { Histogram, Registry } from 'prom-client';
import type { SpoolStats } from '../index.js';
import { trackDurations } from './durations.js';
import { promClient } from './prom.js';
import type { AdminSource, Telemetry } from './source.js';

/** Latency buckets, seconds: 0.5 ms to 5 min. */
const SECONDS_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
/** Every metric name registerMetrics adds, with its type. */
export const METRIC_TYPES = {
  spool_messages: 'gauge',
  spool_accepting: 'gauge',
  spool_messages_sent_total: 'counter',
  spool_messages_completed_total: 'counter',
  spool_messages_failed_total: 'counter',
  spool_messages_dead_total: 'counter',
  spool_handler_duration_seconds: 'histogram',
  spool_queue_wait_seconds: 'histogram',
  spool_commit_duration_seconds: 'histogram',
  spool_pool_concurrency: 'gauge',
  spool_pool_active: 'gauge',
  spool_storage_busy_total: 'counter',
  spool_db_size_bytes: 'gauge',
  spool_wal_size_bytes: 'gauge',
} as const;

/**
 * The label value of the default (shared) executor pool in spool_pool_*; a queue's own pool is
 * labelled with its queue (a queue named `default`: `queue:default`).
 */
export const DEFAULT_POOL_LABEL = 'default';

/** A histogram whose buckets are read from the core's telemetry at scrape, not observed here. */
function telemetryHistogram(metricName: string, metricHelp: string, read: () => Telemetry['commit']): Histogram<string> {
  TelemetryHistogram ??= defineTelemetryHistogram(promClient().Histogram);
  return new TelemetryHistogram(metricName, metricHelp, read);
}

let TelemetryHistogram: ReturnType<typeof defineTelemetryHistogram> | undefined;

/** The class is made on first use: it extends prom-client's Histogram, which loads lazily. */
function defineTelemetryHistogram(Base: typeof Histogram) {
  return class TelemetryHistogram extends Base<string> {
    constructor(
      private readonly metricName: string,
      private readonly metricHelp: string,
      private readonly read: () => Telemetry['commit'],
    ) {
      super({ name: metricName, help: metricHelp, registers: [] });
    }

    override async get(): ReturnType<Histogram<string>['get']> {
      const { count, sumMs, buckets } = this.read();
      const name = this.metricName;
      const values = [
        ...[...buckets].sort((a, b) => a.le - b.le).map((b) => ({ labels: { le: b.le / 1000 }, value: b.count, metricName: `${name}_bucket` })),
        { labels: { le: '+Inf' }, value: count, metricName: `${name}_bucket` },
        { labels: {}, value: sumMs / 1000, metricName: `${name}_sum` },
        { labels: {}, value: count, metricName: `${name}_count` },
      ];
      // The shape prom-client's own Histogram.get() returns; its typings hide `type` as an enum.
      return { name, help: this.metricHelp, type: 'histogram' as never, values, aggregator: 'sum', collect: () => {} };
    }

    /**
     * The text format (`registry.metrics()`) reads this method, where a metric has it, not get():
     * without it /metrics showed the empty Histogram underneath (every bucket 0, default bounds).
     */
    async getForPromString(): ReturnType<Histogram<string>['get']> {
      return this.get();
    }
  };
}

/**
 * Adds Spool's metrics to `registry` (use your own `new Registry()`, or prom-client's `register`
 * if your app already exposes it). Returns `stop()`, which ends the event subscription; the
 * metrics stay registered (remove them with `registry.clear()` or `removeSingleMetric`).
 */
export function registerMetrics(source: AdminSource, registry: Registry): { stop(): void } {
  // One stats() and one telemetry() per scrape, shared by every metric that reads them: prom-client
  // calls every collect() in the same turn, so the reading is dropped at the next turn.
  const perScrape = <T>(read: () => T) => {
    let held: { value: T } | undefined;
    return () => {
      if (!held) {
        held = { value: read() };
        setImmediate(() => (held = undefined));
      }
      return held.value;
    };
  };
  const stats = perScrape(() => source.stats());
  const telemetry = perScrape(() => source.telemetry());
  const registers = [registry];
  const { Counter, Gauge, Histogram } = promClient();

  new Gauge({
    name: 'spool_messages',
    help: 'Messages stored, by queue and state (read at scrape).',
    labelNames: ['queue', 'state'] as const,
    registers,
    async collect() {
      const { queues } = await stats();
      this.reset();
      for (const [queue, counts] of Object.entries(queues)) {
        for (const [state, n] of Object.entries(counts)) this.set({ queue, state }, n);
      }
    },
  });
  new Gauge({
    name: 'spool_accepting',
    help: '1 while the spool accepts sends (settings.accepting), else 0.',
    registers,
    async collect() {
      this.set((await stats()).accepting ? 1 : 0);
    },
  });
  const counter = (name: string, help: string, read: (t: Telemetry) => number) =>
    new Counter({
      name,
      help,
      registers,
      collect() {
        // The core keeps the count; the counter mirrors it (reset + inc keeps it a counter).
        this.reset();
        this.inc(read(telemetry()));
      },
    });
  counter('spool_messages_sent_total', 'Messages stored by send() since the spool started.', (t) => t.sent);
  counter('spool_messages_completed_total', 'Messages whose handler completed (to done) since the spool started.', (t) => t.completed);
  counter('spool_messages_dead_total', 'Messages that went to dead since the spool started.', (t) => t.dead);
  counter('spool_storage_busy_total', 'Times a write found the database locked by another connection and was retried.', (t) => t.storageBusy);
  new Counter({
    name: 'spool_messages_failed_total',
    help: 'Failed attempts by error code since the spool started.',
    labelNames: ['code'] as const,
    registers,
    collect() {
      this.reset();
      for (const [code, n] of Object.entries(telemetry().failed)) this.inc({ code }, n);
    },
  });
  const handlerDuration = new Histogram({
    name: 'spool_handler_duration_seconds',
    help: 'Handler run time, from the committed start to the committed settle, by queue.',
    labelNames: ['queue'] as const,
    buckets: SECONDS_BUCKETS,
    registers,
  });
  const queueWait = new Histogram({
    name: 'spool_queue_wait_seconds',
    help: 'Time from send to the first start, by queue.',
    labelNames: ['queue'] as const,
    buckets: SECONDS_BUCKETS,
    registers,
  });
  registry.registerMetric(
    telemetryHistogram('spool_commit_duration_seconds', 'Group-commit transaction time (as measured by the core).', () => telemetry().commit),
  );
  // A queue named "default" with its own pool would share the default pool's label, and one of
  // the two would overwrite the other: its pool is labelled `queue:default` (no queue name has a colon).
  const pools = (s: SpoolStats) => [
    [DEFAULT_POOL_LABEL, s.pools.default] as const,
    ...Object.entries(s.pools.byQueue).map(([queue, p]) => [queue === DEFAULT_POOL_LABEL ? `queue:${queue}` : queue, p] as const),
  ];
  new Gauge({
    name: 'spool_pool_concurrency',
    help: 'Executor pool limits (the default pool, and each queue with its own).',
    labelNames: ['pool'] as const,
    registers,
    async collect() {
      const s = await stats();
      this.reset();
      for (const [pool, p] of pools(s)) this.set({ pool }, p.concurrency);
    },
  });
  new Gauge({
    name: 'spool_pool_active',
    help: 'Handlers running now, per executor pool.',
    labelNames: ['pool'] as const,
    registers,
    async collect() {
      const s = await stats();
      this.reset();
      for (const [pool, p] of pools(s)) this.set({ pool }, p.active);
    },
  });
  new Gauge({
    name: 'spool_db_size_bytes',
    help: 'Size of the SQLite database file.',
    registers,
    collect() {
      this.set(telemetry().dbBytes);
    },
  });
  new Gauge({
    name: 'spool_wal_size_bytes',
    help: 'Size of the SQLite write-ahead log file.',
    registers,
    collect() {
      this.set(telemetry().walBytes);
    },
  });

  const sub = trackDurations(
    source.events$,
    (queue, ms) => handlerDuration.observe({ queue }, ms / 1000),
    (queue, ms) => queueWait.observe({ queue }, ms / 1000),
  );
  return { stop: () => sub.unsubscribe() };
}
