/** One message: its fields, payload, last error with stack, and its timeline. */
import { useEffect, useState } from 'preact/hooks';
import { api, type MessageDetail } from '../api.js';
import { Notice, StateChip, useNotice } from '../components.js';
import { duration, link, time, visible } from '../format.js';
import { html } from '../html.js';
import { useLiveEvents } from '../live.js';

export function MessagePage({ id, readOnly }: { id: string; readOnly: boolean }) {
  const [message, setMessage] = useState<MessageDetail | null>(null);
  const [missing, setMissing] = useState<string | null>(null);
  const { notice, run } = useNotice();
  const enc = encodeURIComponent(id);

  const load = () =>
    api<MessageDetail>(`messages/${enc}`).then(
      (m) => {
        setMessage(m);
        setMissing(null);
      },
      (e: { code?: string; message?: string }) => setMissing(`${e.code}: ${e.message}`),
    );
  useEffect(() => void load(), [id]);
  useLiveEvents(
    (event) => {
      if ((event.type === 'message.state' && event.id === id) || event.type === 'admin.reset') void load();
    },
    [id],
  );

  if (missing && !message) return html`<section class="page"><h1 class="mono">${id}</h1><div class="notice notice-error" role="alert">${missing}</div></section>`;
  if (!message) return html`<section class="page"><h1 class="mono">${id}</h1><p class="muted">Loading…</p></section>`;
  const m = message;

  return html`
    <section class="page">
      <div class="page-head">
        <h1><a class="muted" href=${link.queue(m.queue)}>${m.queue} /</a> <span class="mono id">${m.id}</span></h1>
        <div class="actions">
          <span data-testid="message-state"><${StateChip} state=${m.state} /></span>
          ${missing ? html`<span class="badge warn">gone: ${missing}</span>` : null}
          ${readOnly
            ? null
            : html`
                <button data-testid="requeue" disabled=${m.state !== 'dead'} onClick=${() => run(() => api<{ requeued: number }>(`messages/${enc}/requeue`, { method: 'POST' }), (r) => `${r.requeued} requeued`).then(load)}>Requeue</button>
                <button class="danger" disabled=${m.state === 'activating' || m.state === 'processing'} onClick=${() => confirm('Delete this message?') && run(() => api<{ removed: number }>(`messages/${enc}/delete`, { method: 'POST' }), (r) => `${r.removed} deleted`).then(load)}>Delete</button>
              `}
        </div>
      </div>
      <${Notice} notice=${notice} />
      ${m.removed
        ? html`<p class="notice" data-testid="removed">Its row was deleted (${m.removed.reason}) at ${time(m.removed.at)}; the message history keeps its timeline.</p>`
        : html`<${Details} m=${m} />`}
      <h2>Timeline</h2>
      <ol class="timeline" data-testid="timeline">
        ${m.history.map(
          (h, i) => html`<li>
            <span class="when mono">${time(h.at)}</span>
            <span>${h.from === null ? html`<i>sent</i>` : html`<${StateChip} state=${h.from} />`} → <${StateChip} state=${h.to} /></span>
            <span class="muted small">attempt ${h.attempt}${h.code ? html` · <b class="mono">${visible(h.code)}</b>` : null}${i > 0 ? ` · +${duration(h.at - m.history[i - 1]!.at)}` : ''}</span>
          </li>`,
        )}
      </ol>
      <p class="muted small"><a href=${link.lifecycleMessage(m.id)} data-testid="show-path">Show this path on the lifecycle viewer</a></p>
    </section>
  `;
}

/** The row's own fields, payload and last error (absent once the row is deleted). */
function Details({ m }: { m: MessageDetail }) {
  return html`
      <dl class="facts card">
        <dt>Queue</dt><dd><a href=${link.queue(m.queue)}>${m.queue}</a></dd>
        <dt>Attempt</dt><dd data-testid="attempt">${m.attempt}</dd>
        <dt>Deliveries</dt><dd>${m.deliveries}</dd>
        <dt>Priority</dt><dd>${m.priority}</dd>
        <dt>Created</dt><dd>${time(m.createdAt)}</dd>
        <dt>Updated</dt><dd>${time(m.updatedAt)}</dd>
        <dt>Visible at</dt><dd>${time(m.visibleAt)}</dd>
        <dt>Finished</dt><dd>${time(m.finishedAt)}</dd>
        <dt>First delivered</dt><dd>${time(m.firstDeliveredAt)}</dd>
        <dt>Lease expires</dt><dd>${time(m.leaseExpiresAt)}</dd>
        ${m.group === undefined ? null : html`<dt>Group</dt><dd class="mono" data-testid="group">${m.group}</dd>`}
        ${m.dedupeId === undefined ? null : html`<dt>Deduplication id</dt><dd class="mono" data-testid="dedupe-id">${m.dedupeId}</dd>`}
        ${m.sourceQueue === undefined ? null : html`<dt>Moved from</dt><dd><a href=${link.queue(m.sourceQueue)} data-testid="source-queue">${m.sourceQueue}</a></dd>`}
      </dl>
      <h2>Payload</h2>
      <pre class="code" data-testid="payload">${visible(JSON.stringify(m.payload, null, 2))}</pre>
      ${m.lastError
        ? html`<h2>Last error</h2>
            <div class="card error-card" data-testid="last-error">
              <p><b class="mono">${visible(m.lastError.code)}</b> <span class="data">${visible(m.lastError.message)}</span></p>
              ${m.lastError.stack ? html`<pre class="code stack">${visible(m.lastError.stack)}</pre>` : null}
            </div>`
        : null}
  `;
}
