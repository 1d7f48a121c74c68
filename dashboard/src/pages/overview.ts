/** Every queue at a glance: counts per state, live throughput and latency, pools, flags. */
import { useEffect, useState } from 'preact/hooks';
import { api, type QueueSummary, type Series, type Settings, type Tick } from '../api.js';
import { Chart } from '../chart.js';
import { CountChips, Notice, PoolBar, useNotice } from '../components.js';
import { link } from '../format.js';
import { html } from '../html.js';
import { useLiveEvents, useTick } from '../live.js';

/** A series kept live: loaded once, then one point appended per tick, 15 minutes kept. */
export function useLiveSeries(queue?: string): Series | null {
  const [series, setSeries] = useState<Series | null>(null);
  useEffect(() => {
    let stale = false;
    api<Series>('series', { query: { queue } }).then((s) => !stale && setSeries(s), () => {});
    return () => {
      stale = true;
    };
  }, [queue]);
  useLiveEvents(
    (event) => {
      if (event.type !== 'admin.tick') return;
      const { rates } = event as Tick;
      setSeries((s) => {
        if (!s) return s;
        const f = queue === undefined ? rates.total : rates.queues[queue];
        let next = s;
        // Fill seconds without a tick with zeros, then add this one.
        while (next.start + next.sent.length <= rates.sec) {
          const sec = next.start + next.sent.length;
          const point = sec === rates.sec && f ? f : { sent: 0, done: 0, failed: 0, dead: 0, handlerP50: null, handlerP95: null, waitP50: null };
          next = {
            ...next,
            sent: [...next.sent, point.sent],
            done: [...next.done, point.done],
            failed: [...next.failed, point.failed],
            dead: [...next.dead, point.dead],
            handlerP50: [...next.handlerP50, point.handlerP50],
            handlerP95: [...next.handlerP95, point.handlerP95],
            waitP50: [...next.waitP50, point.waitP50],
          };
        }
        const extra = next.sent.length - 900;
        if (extra > 0) {
          next = {
            ...next,
            start: next.start + extra,
            sent: next.sent.slice(extra),
            done: next.done.slice(extra),
            failed: next.failed.slice(extra),
            dead: next.dead.slice(extra),
            handlerP50: next.handlerP50.slice(extra),
            handlerP95: next.handlerP95.slice(extra),
            waitP50: next.waitP50.slice(extra),
          };
        }
        return next;
      });
    },
    [queue],
  );
  return series;
}

/** Throughput and latency charts of one series. */
export function SeriesCharts({ series }: { series: Series | null }) {
  if (!series) return html`<div class="charts"><p class="muted">Loading charts…</p></div>`;
  const x = series.sent.map((_, i) => series.start + i);
  return html`<div class="charts">
    <${Chart}
      title="Throughput, last 15 min (messages/s)"
      testid="chart-throughput"
      unit=""
      x=${x}
      lines=${[
        { label: 'sent', color: '--c-pending', values: series.sent },
        { label: 'done', color: '--c-done', values: series.done },
        { label: 'failed', color: '--c-failed', values: series.failed },
        { label: 'dead', color: '--c-dead', values: series.dead },
      ]}
    />
    <${Chart}
      title="Latency, last 15 min"
      testid="chart-latency"
      unit=" ms"
      x=${x}
      lines=${[
        { label: 'handler p50', color: '--c-processing', values: series.handlerP50 },
        { label: 'handler p95', color: '--c-dead', values: series.handlerP95 },
        { label: 'wait p50', color: '--c-activating', values: series.waitP50 },
      ]}
    />
  </div>`;
}

export function OverviewPage({ readOnly }: { readOnly: boolean }) {
  const [queues, setQueues] = useState<QueueSummary[] | null>(null);
  const [settings, setSettings] = useState<Settings | null>(null);
  const [poolInput, setPoolInput] = useState('');
  const tick = useTick();
  const series = useLiveSeries();
  const { notice, run } = useNotice();

  const load = () => {
    api<{ queues: QueueSummary[] }>('queues').then((r) => setQueues(r.queues), () => {});
    api<Settings>('settings').then(setSettings, () => {});
  };
  useEffect(load, []);
  useLiveEvents((event) => {
    if (event.type === 'settings.changed' || event.type === 'admin.reset') load();
    // A queue this page has not listed yet: list it.
    if (event.type === 'message.state' && event.from === null && queues && !queues.some((q) => q.name === event.queue)) load();
  }, [queues]);

  const stats = tick?.stats;
  const rows = (queues ?? []).map((q) => {
    const counts = stats?.queues[q.name] ?? q.counts;
    const pool = q.pool.own ? stats?.pools.byQueue[q.name] : stats?.pools.default;
    return { ...q, counts: { ...q.counts, ...counts }, pool: { ...q.pool, ...(pool ?? {}) } };
  });
  const accepting = stats?.accepting ?? settings?.accepting ?? true;
  const defaultPool = stats?.pools.default;

  async function toggle(q: QueueSummary) {
    await run(() => api(`queues/${encodeURIComponent(q.name)}/${q.paused ? 'resume' : 'pause'}`, { method: 'POST' }), () => `${q.name} ${q.paused ? 'resumed' : 'paused'}`);
    load();
  }

  return html`
    <section class="page">
      <div class="page-head">
        <h1>Overview</h1>
        <div class="actions">
          <span class=${`badge ${accepting ? 'ok' : 'warn'}`} data-testid="spool-accepting">${accepting ? 'accepting' : 'not accepting'}</span>
          ${readOnly
            ? null
            : html`<button onClick=${() => run(() => api('accepting', { method: 'POST', body: { accepting: !accepting } }), () => (accepting ? 'Sends are now refused' : 'Sends are accepted again')).then(load)}>
                ${accepting ? 'Stop accepting' : 'Accept sends'}
              </button>`}
        </div>
      </div>
      <${Notice} notice=${notice} />
      <div class="card pool-card">
        <h2>Default pool</h2>
        ${defaultPool ? html`<${PoolBar} active=${defaultPool.active} concurrency=${defaultPool.concurrency} />` : html`<span class="muted">…</span>`}
        ${readOnly
          ? null
          : html`<form class="inline" onSubmit=${(e: Event) => {
              e.preventDefault();
              void run(() => api('concurrency', { method: 'POST', body: { concurrency: Number(poolInput) } }), () => `Default pool resized to ${poolInput}`).then(load);
            }}>
              <label>Concurrency <input type="number" min="1" required value=${poolInput} placeholder=${String(defaultPool?.concurrency ?? '')} onInput=${(e: Event) => setPoolInput((e.target as HTMLInputElement).value)} /></label>
              <button type="submit">Resize</button>
            </form>`}
      </div>
      <${SeriesCharts} series=${series} />
      <h2>Queues</h2>
      ${queues === null
        ? html`<p class="muted">Loading…</p>`
        : rows.length === 0
          ? html`<p class="muted">No queues yet: send a message.</p>`
          : html`<div class="queue-list" role="table" aria-label="Queues">
              ${rows.map(
                (q) => html`<div class="queue-row" role="row" data-queue=${q.name}>
                  <div class="queue-name" role="cell">
                    <a href=${link.queue(q.name)}>${q.name}</a>
                    ${q.paused ? html`<span class="badge warn">paused</span>` : null}
                    ${q.accepting ? null : html`<span class="badge warn">not accepting</span>`}
                  </div>
                  <div role="cell"><${CountChips} counts=${q.counts} /></div>
                  <div role="cell"><${PoolBar} active=${q.pool.active} concurrency=${q.pool.concurrency} label=${q.pool.own ? 'own pool' : 'default pool'} /></div>
                  <div role="cell" class="row-actions">
                    ${readOnly ? null : html`<button onClick=${() => toggle(q)}>${q.paused ? 'Resume' : 'Pause'}</button>`}
                  </div>
                </div>`,
              )}
            </div>`}
    </section>
  `;
}
