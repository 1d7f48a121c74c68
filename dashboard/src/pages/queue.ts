/** One queue: live counts, controls (pause, accepting, pool size, purge), settings, messages. */
import { useEffect, useState } from 'preact/hooks';
import { api, type BrowsePage, type MessageInfo, type MessageState, type QueueDetail, type QueueSetting } from '../api.js';
import { CountChips, LayerBadge, Notice, PoolBar, STATES, StateChip, useNotice } from '../components.js';
import { link, preview, relative, time } from '../format.js';
import { html } from '../html.js';
import { useLiveEvents, useTick } from '../live.js';
import { SeriesCharts, useLiveSeries } from './overview.js';

/** The message filter as the form holds it. */
interface Filter {
  state: MessageState | '';
  search: string;
  from: string;
  to: string;
}

/**
 * The search box: `id:abc` is an id prefix, `field.path=value` a payload field (value as JSON when
 * it parses, else a string), anything else a payload substring.
 */
export function parseSearch(text: string): { idPrefix?: string; where?: Record<string, unknown>; text?: string } {
  const s = text.trim();
  if (s === '') return {};
  if (s.startsWith('id:')) return { idPrefix: s.slice(3).trim() };
  const m = /^([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(.*)$/.exec(s);
  if (m) {
    let value: unknown = m[2]!;
    try {
      value = JSON.parse(m[2]!);
    } catch {
      // a bare word is a string
    }
    return { where: { [m[1]!]: value } };
  }
  return { text: s };
}

function query(name: string, f: Filter): Record<string, string | number | undefined> {
  const s = parseSearch(f.search);
  return {
    queue: name,
    state: f.state || undefined,
    idPrefix: s.idPrefix,
    text: s.text,
    where: s.where ? JSON.stringify(s.where) : undefined,
    from: f.from ? new Date(f.from).getTime() : undefined,
    to: f.to ? new Date(f.to).getTime() : undefined,
  };
}

/** The filter in words, for a confirmation: what "all matching" will act on. */
function describeFilter(f: Filter): string {
  const parts = [f.state ? `state ${f.state}` : 'any state', f.search ? `search ${JSON.stringify(f.search)}` : '', f.from ? `from ${f.from}` : '', f.to ? `to ${f.to}` : ''];
  return parts.filter(Boolean).join(', ');
}

const sameFilter = (a: Filter, b: Filter) => a.state === b.state && a.search === b.search && a.from === b.from && a.to === b.to;

function filterBody(name: string, f: Filter) {
  const q = query(name, f);
  return Object.fromEntries(
    Object.entries(q)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, k === 'where' ? JSON.parse(v as string) : v]),
  );
}

export function QueuePage({ name, readOnly }: { name: string; readOnly: boolean }) {
  const [detail, setDetail] = useState<QueueDetail | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [filter, setFilter] = useState<Filter>({ state: '', search: '', from: '', to: '' });
  const [applied, setApplied] = useState<Filter>(filter);
  const [messages, setMessages] = useState<MessageInfo[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [arrived, setArrived] = useState(0);
  const [concurrency, setConcurrency] = useState('');
  const [purgeState, setPurgeState] = useState<'dead' | 'pending' | 'done'>('dead');
  const tick = useTick();
  const series = useLiveSeries(name);
  const { notice, run } = useNotice();
  const enc = encodeURIComponent(name);

  const loadDetail = () =>
    api<QueueDetail>(`queues/${enc}`).then(
      (d) => {
        setDetail(d);
        setLoadError(null);
      },
      (e: { code?: string; message?: string }) => setLoadError(`${e.code}: ${e.message}`),
    );

  async function loadMessages(f: Filter, after?: string) {
    const page = await run(() => api<BrowsePage>('messages', { query: { ...query(name, f), cursor: after, limit: 50 } }));
    if (!page) return;
    setMessages((old) => (after && old ? [...old, ...page.messages] : page.messages));
    setCursor(page.cursor);
    if (!after) {
      setSelected(new Set());
      setArrived(0);
    }
  }

  useEffect(() => {
    void loadDetail();
    void loadMessages(applied);
  }, [name]);

  useLiveEvents(
    (event) => {
      if (event.type === 'settings.changed' || event.type === 'admin.reset') void loadDetail();
      if (event.type === 'message.state' && event.queue === name && event.from === null) setArrived((n) => n + 1);
    },
    [name],
  );

  if (loadError) return html`<section class="page"><h1>Queue ${name}</h1><div class="notice notice-error" role="alert">${loadError}</div></section>`;
  if (!detail) return html`<section class="page"><h1>Queue ${name}</h1><p class="muted">Loading…</p></section>`;

  const counts = { ...detail.counts, ...(tick?.stats?.queues[name] ?? {}) };
  const livePool = detail.pool.own ? tick?.stats?.pools.byQueue[name] : tick?.stats?.pools.default;
  const pool = { ...detail.pool, ...(livePool ?? {}) };

  const act = async (path: string, body: unknown, ok: string) => {
    const result = await run(() => api<QueueDetail>(`queues/${enc}/${path}`, { method: 'POST', body }), () => ok);
    if (result) setDetail(result);
  };

  async function bulk(action: 'requeue' | 'delete', scope: 'selected' | 'filter') {
    const body = scope === 'selected' ? { ids: [...selected] } : { filter: filterBody(name, applied) };
    // "All matching" acts on the search the list shows (applied), which the confirmation names.
    const question =
      scope === 'selected'
        ? action === 'delete'
          ? `Delete ${selected.size} messages?`
          : null
        : `${action === 'delete' ? 'Delete' : 'Requeue'} every message of queue ${name} matching: ${describeFilter(applied)}?`;
    if (question !== null && !confirm(question)) return;
    const result = await run(
      () => api<{ requeued?: number; removed?: number }>(`messages/${action}`, { method: 'POST', body }),
      (r) => (action === 'requeue' ? `${r.requeued} requeued` : `${r.removed} deleted`),
    );
    if (result) void loadMessages(applied);
  }

  const toggle = (id: string) =>
    setSelected((s) => {
      const next = new Set(s);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });

  return html`
    <section class="page">
      <div class="page-head">
        <h1><a href=${link.overview()} class="muted">Queues /</a> ${name}</h1>
        <div class="actions">
          ${detail.paused ? html`<span class="badge warn" data-testid="paused">paused</span>` : null}
          ${detail.accepting ? null : html`<span class="badge warn">not accepting</span>`}
        </div>
      </div>
      <${Notice} notice=${notice} />
      <div data-testid="queue-counts"><${CountChips} counts=${counts} /></div>
      <div class="card controls">
        <div class="control">
          <span class="label">${pool.own ? 'Own pool' : 'Default pool'}</span>
          <${PoolBar} active=${pool.active} concurrency=${pool.concurrency} />
        </div>
        ${readOnly
          ? null
          : html`
              <form class="inline control" onSubmit=${(e: Event) => {
                e.preventDefault();
                void act('concurrency', { concurrency: concurrency === '' ? null : Number(concurrency) }, concurrency === '' ? 'Moved to the default pool' : `Pool resized to ${concurrency}`);
              }}>
                <label>Concurrency <input data-testid="concurrency-input" type="number" min="1" value=${concurrency} placeholder=${String(pool.concurrency)} onInput=${(e: Event) => setConcurrency((e.target as HTMLInputElement).value)} /></label>
                <button type="submit" data-testid="resize">Resize pool</button>
              </form>
              <div class="control buttons">
                <button data-testid="pause-toggle" onClick=${() => act(detail.paused ? 'resume' : 'pause', {}, detail.paused ? 'Resumed' : 'Paused')}>${detail.paused ? 'Resume' : 'Pause'}</button>
                <button onClick=${() => act('accepting', { accepting: !detail.accepting }, detail.accepting ? 'Sends to this queue are refused' : 'Sends accepted again')}>
                  ${detail.accepting ? 'Stop accepting' : 'Accept sends'}
                </button>
              </div>
              <form class="inline control" onSubmit=${(e: Event) => {
                e.preventDefault();
                if (!confirm(`Delete every ${purgeState} message of ${name}?`)) return;
                void run(() => api<{ removed: number }>(`queues/${enc}/purge`, { method: 'POST', body: { state: purgeState } }), (r) => `${r.removed} purged`).then(() => loadMessages(applied));
              }}>
                <label>Purge <select value=${purgeState} onChange=${(e: Event) => setPurgeState((e.target as HTMLSelectElement).value as 'dead')}>
                  <option value="dead">dead</option><option value="pending">pending</option><option value="done">done</option>
                </select></label>
                <button type="submit" class="danger">Purge</button>
              </form>
            `}
      </div>
      <${SeriesCharts} series=${series} />

      <h2>Messages</h2>
      <form class="filters" onSubmit=${(e: Event) => {
        e.preventDefault();
        setApplied(filter);
        void loadMessages(filter);
      }}>
        <label>State <select data-testid="filter-state" value=${filter.state} onChange=${(e: Event) => setFilter({ ...filter, state: (e.target as HTMLSelectElement).value as MessageState })}>
          <option value="">any</option>
          ${STATES.map((s) => html`<option value=${s}>${s}</option>`)}
        </select></label>
        <label class="grow">Search <input data-testid="search" type="search" placeholder="text · field=value · id:prefix" value=${filter.search} onInput=${(e: Event) => setFilter({ ...filter, search: (e.target as HTMLInputElement).value })} /></label>
        <label>From <input type="datetime-local" step="1" value=${filter.from} onInput=${(e: Event) => setFilter({ ...filter, from: (e.target as HTMLInputElement).value })} /></label>
        <label>To <input type="datetime-local" step="1" value=${filter.to} onInput=${(e: Event) => setFilter({ ...filter, to: (e.target as HTMLInputElement).value })} /></label>
        <button type="submit" data-testid="apply-filter">Search</button>
      </form>
      <div class="bulk">
        ${arrived > 0 ? html`<button class="link" onClick=${() => loadMessages(applied)}>${arrived} new — refresh</button>` : null}
        ${readOnly
          ? null
          : html`
              <span class="muted">${selected.size} selected</span>
              <button disabled=${selected.size === 0} data-testid="bulk-requeue" onClick=${() => bulk('requeue', 'selected')}>Requeue</button>
              <button disabled=${selected.size === 0} class="danger" data-testid="bulk-delete" onClick=${() => bulk('delete', 'selected')}>Delete</button>
              <button disabled=${!sameFilter(filter, applied)} title=${sameFilter(filter, applied) ? '' : 'Press Search first: the list shows the last search'} data-testid="bulk-requeue-all" onClick=${() => bulk('requeue', 'filter')}>Requeue all matching</button>
              <button disabled=${!sameFilter(filter, applied)} title=${sameFilter(filter, applied) ? '' : 'Press Search first: the list shows the last search'} class="danger" data-testid="bulk-delete-all" onClick=${() => bulk('delete', 'filter')}>Delete all matching</button>
            `}
      </div>
      ${messages === null
        ? html`<p class="muted">Loading…</p>`
        : messages.length === 0
          ? html`<p class="muted" data-testid="no-messages">No messages match.</p>`
          : html`<div class="message-list" data-testid="message-list">
              <label class="message-row head">
                <input type="checkbox" aria-label="Select all" checked=${messages.length > 0 && selected.size === messages.length} onChange=${(e: Event) => setSelected((e.target as HTMLInputElement).checked ? new Set(messages.map((m) => m.id)) : new Set())} />
                <span>${messages.length} shown</span>
              </label>
              ${messages.map(
                (m) => html`<div class="message-row" data-id=${m.id}>
                  <input type="checkbox" aria-label=${`Select ${m.id}`} checked=${selected.has(m.id)} onChange=${() => toggle(m.id)} />
                  <a class="mono id" href=${link.message(m.id)}>${m.id}</a>
                  <${StateChip} state=${m.state} />
                  <span class="muted small" title=${time(m.createdAt)}>${relative(m.createdAt)} · attempt ${m.attempt}</span>
                  <code class="payload-preview">${preview(m.payload)}</code>
                </div>`,
              )}
            </div>`}
      ${cursor ? html`<button class="more" onClick=${() => loadMessages(applied, cursor)}>Load more</button>` : null}

      <h2>Settings</h2>
      <${QueueSettings} name=${name} settings=${detail.settings} readOnly=${readOnly} onChange=${setDetail} run=${run} />
    </section>
  `;
}

function QueueSettings({ name, settings, readOnly, onChange, run }: {
  name: string;
  settings: QueueSetting[];
  readOnly: boolean;
  onChange: (d: QueueDetail) => void;
  run: ReturnType<typeof useNotice>['run'];
}) {
  const [edits, setEdits] = useState<Record<string, string>>({});
  const enc = encodeURIComponent(name);
  async function save(s: QueueSetting) {
    const raw = edits[s.key.join('.')] ?? '';
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // a bare word is a string ("exponential")
    }
    const patch = s.key.reduceRight<unknown>((inner, k) => ({ [k]: inner }), value);
    const d = await run(() => api<QueueDetail>(`queues/${enc}/settings`, { method: 'PATCH', body: patch }), () => `${s.key.join('.')} saved`);
    if (d) {
      onChange(d);
      setEdits((e) => ({ ...e, [s.key.join('.')]: '' }));
    }
  }
  async function reset(s: QueueSetting) {
    const d = await run(() => api<QueueDetail>(`queues/${enc}/settings/reset`, { method: 'POST', body: { key: s.key } }), () => `${s.key.join('.')} reset`);
    if (d) onChange(d);
  }
  return html`<div class="settings-table" data-testid="queue-settings">
    ${settings.map((s) => {
      const k = s.key.join('.');
      return html`<div class="setting-row" data-key=${k}>
        <span class="mono">${k}</span>
        <span class="mono value">${JSON.stringify(s.value)}</span>
        <${LayerBadge} layer=${s.layer} own=${s.own} />
        ${readOnly
          ? null
          : html`<span class="setting-edit">
              <input aria-label=${`New value of ${k}`} value=${edits[k] ?? ''} placeholder="new value" onInput=${(e: Event) => setEdits({ ...edits, [k]: (e.target as HTMLInputElement).value })} />
              <button onClick=${() => save(s)} disabled=${(edits[k] ?? '') === ''}>Save</button>
              <button onClick=${() => reset(s)} disabled=${!s.own || s.layer !== 'override'} title="Drop this queue's override">Reset</button>
            </span>`}
      </div>`;
    })}
  </div>`;
}
