/** The dashboard: one page, hash-routed, live over one SSE connection. */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, type Meta } from './api.js';
import { html } from './html.js';
import { connect, useStatus } from './live.js';
import { LifecyclePage } from './pages/lifecycle.js';
import { MessagePage } from './pages/message.js';
import { OverviewPage } from './pages/overview.js';
import { QueuePage } from './pages/queue.js';
import { SettingsPage } from './pages/settings.js';
import './styles.css';

function useRoute(): string[] {
  const read = () => {
    try {
      return location.hash.replace(/^#\/?/, '').split('/').filter((s) => s !== '').map((s) => decodeURIComponent(s));
    } catch {
      // A malformed escape in a pasted link ("%E0%A4%A"): the overview, not a blank page.
      return [];
    }
  };
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () => setRoute(read());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

function App() {
  const route = useRoute();
  const status = useStatus();
  const [meta, setMeta] = useState<Meta | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<Meta>('meta').then(setMeta, (e: { code?: string; message?: string }) => setError(`${e.code ?? 'ERROR'}: ${e.message ?? ''}`));
    connect();
  }, []);

  const [page, arg] = route;
  const readOnly = meta?.readOnly ?? true;
  let body;
  if (error) body = html`<div class="notice notice-error" role="alert">${error}</div>`;
  else if (!meta) body = html`<p class="muted">Loading…</p>`;
  else if (page === 'queue' && arg !== undefined) body = html`<${QueuePage} key=${arg} name=${arg} readOnly=${readOnly} />`;
  else if (page === 'message' && arg !== undefined) body = html`<${MessagePage} key=${arg} id=${arg} readOnly=${readOnly} />`;
  else if (page === 'settings') body = html`<${SettingsPage} readOnly=${readOnly} />`;
  else if (page === 'lifecycle') body = html`<${LifecyclePage} state=${arg === 'state' ? route[2] : undefined} message=${arg === 'message' ? route[2] : undefined} />`;
  else body = html`<${OverviewPage} readOnly=${readOnly} />`;

  const nav = (href: string, label: string, active: boolean) => html`<a href=${href} class=${active ? 'active' : ''} aria-current=${active ? 'page' : undefined}>${label}</a>`;
  return html`
    <header class="top">
      <a class="brand" href="#/">Spool</a>
      <nav>
        ${nav('#/', 'Overview', page === undefined || page === 'queue' || page === 'message')}
        ${nav('#/lifecycle', 'Lifecycle', page === 'lifecycle')}
        ${nav('#/settings', 'Settings', page === 'settings')}
      </nav>
      <span class=${`live live-${status}`} data-testid="live-status" title="Server-sent events">${status === 'live' ? 'live' : status}</span>
      ${meta?.readOnly ? html`<span class="badge ro">read-only</span>` : null}
    </header>
    ${meta?.detached
      ? html`<div class="notice notice-info" data-testid="detached">
          This dashboard does not run in the process that owns the spool: counts are read from the file every second, but pool use
          and live events come only from the owning process.
        </div>`
      : null}
    <main>${body}</main>
  `;
}

render(html`<${App} />`, document.getElementById('app')!);
