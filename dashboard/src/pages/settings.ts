/** The whole settings document: every leaf with its layer, editable; patches and resets. */
import { useEffect, useState } from 'preact/hooks';
import { api, type Explained } from '../api.js';
import { LayerBadge, Notice, useNotice } from '../components.js';
import { html } from '../html.js';
import { useLiveEvents } from '../live.js';

export function SettingsPage({ readOnly }: { readOnly: boolean }) {
  const [explained, setExplained] = useState<Explained[] | null>(null);
  const [doc, setDoc] = useState<unknown>(null);
  const [edits, setEdits] = useState<Record<string, string>>({});
  const [patch, setPatch] = useState('');
  const { notice, run } = useNotice();

  const load = () => {
    api<Explained[]>('settings/explain').then(setExplained, () => {});
    api<unknown>('settings').then(setDoc, () => {});
  };
  useEffect(load, []);
  useLiveEvents((event) => {
    if (event.type === 'settings.changed' || event.type === 'admin.reset') load();
  }, []);

  async function save(e: Explained) {
    const key = JSON.stringify(e.path);
    const raw = edits[key] ?? '';
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // a bare word is a string
    }
    const body = e.path.reduceRight<unknown>((inner, k) => ({ [k]: inner }), value);
    if (await run(() => api('settings', { method: 'PATCH', body }), () => `${e.path.join('.')} saved`)) {
      setEdits((x) => ({ ...x, [key]: '' }));
      load();
    }
  }

  return html`
    <section class="page">
      <div class="page-head">
        <h1>Settings</h1>
        ${readOnly
          ? null
          : html`<div class="actions"><button class="danger" onClick=${() => confirm('Drop every override?') && run(() => api('settings/reset', { method: 'POST', body: {} }), () => 'Every override dropped').then(load)}>Reset all overrides</button></div>`}
      </div>
      <${Notice} notice=${notice} />
      <p class="muted">Each value comes from a layer: <${LayerBadge} layer="default" /> built in, <${LayerBadge} layer="config" /> the app's config, <${LayerBadge} layer="override" /> changed at run time (stored in the database).</p>
      ${explained === null
        ? html`<p class="muted">Loading…</p>`
        : html`<div class="settings-table" data-testid="settings-table">
            ${explained.map((e) => {
              const key = JSON.stringify(e.path);
              return html`<div class="setting-row" data-path=${e.path.join('.')}>
                <span class="mono">${e.path.join('.')}</span>
                <span class="mono value">${JSON.stringify(e.value)}</span>
                <${LayerBadge} layer=${e.layer} />
                ${readOnly
                  ? null
                  : html`<span class="setting-edit">
                      <input aria-label=${`New value of ${e.path.join('.')}`} value=${edits[key] ?? ''} placeholder="new value" onInput=${(ev: Event) => setEdits({ ...edits, [key]: (ev.target as HTMLInputElement).value })} />
                      <button disabled=${(edits[key] ?? '') === ''} onClick=${() => save(e)}>Save</button>
                      <button disabled=${e.layer !== 'override'} onClick=${() => run(() => api('settings/reset', { method: 'POST', body: { path: e.path } }), () => `${e.path.join('.')} reset`).then(load)}>Reset</button>
                    </span>`}
              </div>`;
            })}
          </div>`}
      ${readOnly
        ? null
        : html`<h2>Apply a patch</h2>
            <form class="patch" onSubmit=${(ev: Event) => {
              ev.preventDefault();
              let body: unknown;
              try {
                body = JSON.parse(patch);
              } catch (error) {
                void run(() => Promise.reject({ code: 'INVALID_SETTINGS', message: `The patch is not JSON: ${(error as Error).message}` }));
                return;
              }
              void run(() => api('settings', { method: 'PATCH', body }), () => 'Patch applied').then(load);
            }}>
              <textarea rows="4" placeholder='{"queues":{"email":{"executor":{"concurrency":8}}}}' value=${patch} onInput=${(ev: Event) => setPatch((ev.target as HTMLTextAreaElement).value)}></textarea>
              <button type="submit">Apply</button>
            </form>`}
      <h2>Effective document</h2>
      <pre class="code" data-testid="settings-json">${doc === null ? '…' : JSON.stringify(doc, null, 2)}</pre>
    </section>
  `;
}
