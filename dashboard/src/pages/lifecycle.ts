/**
 * The lifecycle viewer: the message statechart as the server laid it out from the machine
 * definition, live counts per state, transitions animated as `message.state` events arrive,
 * a state's messages on click, and a selected message's path highlighted.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, type BrowsePage, type LiveEvent, type MessageDetail, type MessageState, type Statechart } from '../api.js';
import { StateChip } from '../components.js';
import { count, duration, link, time, visible } from '../format.js';
import { html } from '../html.js';
import { useLiveEvents, useTick } from '../live.js';

const SVG = 'http://www.w3.org/2000/svg';
/** At most this many dots travel at once; more events than that are not drawn. */
const MAX_DOTS = 40;
const DOT_MS = 700;

function pathOf(points: { x: number; y: number }[]): string {
  return points.map((p, i) => `${i === 0 ? 'M' : 'L'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ');
}

export function LifecyclePage({ state, message }: { state?: string; message?: string }) {
  const [chart, setChart] = useState<Statechart | null>(null);
  const [queue, setQueue] = useState('');
  const [list, setList] = useState<BrowsePage | null>(null);
  const [picked, setPicked] = useState<MessageDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const dots = useRef<SVGGElement>(null);
  const tick = useTick();

  useEffect(() => {
    api<Statechart>('machine').then(setChart, (e: { code?: string; message?: string }) => setError(`${e.code}: ${e.message}`));
  }, []);
  useEffect(() => {
    setList(null);
    if (state) api<BrowsePage>('messages', { query: { state, queue: queue || undefined, limit: 50 } }).then(setList, () => {});
  }, [state, queue]);
  useEffect(() => {
    setPicked(null);
    if (message) api<MessageDetail>(`messages/${encodeURIComponent(message)}`).then(setPicked, (e: { code?: string; message?: string }) => setError(`${e.code}: ${e.message}`));
  }, [message]);

  const initialPath = chart ? initialArrow(chart) : '';
  useLiveEvents(
    (event: LiveEvent) => {
      if (event.type !== 'message.state' || !chart || !dots.current) return;
      if (queue && event.queue !== queue) return;
      animate(dots.current, chart, event.from ?? null, event.to!, initialPath);
      if (picked && event.id === picked.id) void api<MessageDetail>(`messages/${encodeURIComponent(picked.id)}`).then(setPicked, () => {});
    },
    [chart, queue, picked],
  );

  if (error && !chart) return html`<section class="page"><h1>Lifecycle</h1><div class="notice notice-error" role="alert">${error}</div></section>`;
  if (!chart) return html`<section class="page"><h1>Lifecycle</h1><p class="muted">Loading the statechart…</p></section>`;

  const queues = Object.keys(tick?.stats?.queues ?? {}).sort();
  const counts: Record<string, number> = {};
  for (const [q, c] of Object.entries(tick?.stats?.queues ?? {})) {
    if (queue && q !== queue) continue;
    for (const [s, n] of Object.entries(c)) counts[s] = (counts[s] ?? 0) + n;
  }
  const trail = new Map<string, number>();
  picked?.history.forEach((h, i) => trail.set(h.from === null ? 'initial' : `${h.from}->${h.to}`, i + 1));
  const visited = new Set(picked?.history.map((h) => h.to) ?? []);
  const pad = 28;

  return html`
    <section class="page">
      <div class="page-head">
        <h1>Lifecycle</h1>
        <label class="actions">Queue
          <select value=${queue} onChange=${(e: Event) => setQueue((e.target as HTMLSelectElement).value)} data-testid="lifecycle-queue">
            <option value="">every queue</option>
            ${queues.map((q) => html`<option value=${q}>${q}</option>`)}
          </select>
        </label>
      </div>
      <p class="muted small">Drawn from the <b>${chart.machine}</b> machine's own definition. Click a state to list its messages; pick one to see the path it took.</p>
      <div class="lifecycle">
        <svg class="statechart" data-testid="statechart" viewBox=${`${-pad} ${-pad} ${chart.width + 2 * pad} ${chart.height + 2 * pad}`} role="img" aria-label="Message statechart">
          <defs>
            <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
              <path d="M0,0 L10,5 L0,10 z" class="arrowhead" />
            </marker>
          </defs>
          <path class=${`edge ${trail.has('initial') ? 'trail' : ''}`} d=${initialPath} marker-end="url(#arrow)" data-edge="initial" />
          <circle class="initial-dot" cx=${initialStart(chart).x} cy=${initialStart(chart).y} r="6" />
          ${chart.edges.map(
            (e) => html`<g class=${`edge-group ${trail.has(e.id) ? 'trail' : ''}`}>
              <path class="edge" d=${pathOf(e.points)} marker-end="url(#arrow)" data-edge=${e.id} />
              <text class="edge-label" x=${e.label.x + 4} y=${e.label.y + 12}>${e.events.join(' · ')}${trail.has(e.id) ? ` (${trail.get(e.id)})` : ''}</text>
            </g>`,
          )}
          ${chart.nodes.map(
            (n) => html`<g
              class=${`state-node state-${n.id} ${state === n.id ? 'selected' : ''} ${visited.has(n.id as MessageState) ? 'visited' : ''}`}
              data-state=${n.id}
              tabindex="0"
              role="button"
              aria-label=${`${n.id}: ${counts[n.id] ?? 0} messages`}
              onClick=${() => (location.hash = link.lifecycleState(n.id))}
              onKeyDown=${(e: KeyboardEvent) => e.key === 'Enter' && (location.hash = link.lifecycleState(n.id))}
            >
              <rect x=${n.x} y=${n.y} width=${n.width} height=${n.height} rx="12" />
              ${n.final ? html`<rect class="final-ring" x=${n.x + 4} y=${n.y + 4} width=${n.width - 8} height=${n.height - 8} rx="9" />` : null}
              <text class="state-name" x=${n.x + n.width / 2} y=${n.y + 24}>${n.id}</text>
              <text class="state-count" data-state=${n.id} x=${n.x + n.width / 2} y=${n.y + 45}>${count(counts[n.id] ?? 0)}</text>
            </g>`,
          )}
          <g ref=${dots} class="dots"></g>
        </svg>
        <aside class="side card">
          ${picked
            ? html`<h2>Path of <a class="mono id" href=${link.message(picked.id)}>${picked.id}</a></h2>
                <ol class="timeline" data-testid="path">
                  ${picked.history.map(
                    (h, i) => html`<li>
                      <span class="muted small">${i + 1}. ${time(h.at)}${i > 0 ? ` (+${duration(h.at - picked.history[i - 1]!.at)})` : ''}</span>
                      <span>${h.from === null ? html`<i>sent</i>` : html`<${StateChip} state=${h.from} />`} → <${StateChip} state=${h.to} />${h.code ? html` <b class="mono small">${visible(h.code)}</b>` : null}</span>
                    </li>`,
                  )}
                </ol>`
            : null}
          ${state
            ? html`<h2>${state} <span class="muted">(${count(counts[state] ?? 0)})</span></h2>
                ${list === null
                  ? html`<p class="muted">Loading…</p>`
                  : list.messages.length === 0
                    ? html`<p class="muted">No stored message is ${state}${state === 'done' ? ' (done rows are kept only with retention.doneMs)' : ''}.</p>`
                    : html`<ul class="state-messages" data-testid="state-messages">
                        ${list.messages.map(
                          (m) => html`<li><a class=${`mono id ${picked?.id === m.id ? 'active' : ''}`} href=${link.lifecycleMessage(m.id)}>${m.id}</a> <span class="muted small">${m.queue}</span></li>`,
                        )}
                      </ul>`}`
            : picked
              ? null
              : html`<p class="muted">Select a state.</p>`}
        </aside>
      </div>
    </section>
  `;
}

function initialStart(chart: Statechart) {
  const n = chart.nodes.find((node) => node.initial) ?? chart.nodes[0]!;
  return { x: n.x + 16, y: n.y - 22 };
}

function initialArrow(chart: Statechart): string {
  const n = chart.nodes.find((node) => node.initial) ?? chart.nodes[0]!;
  const s = initialStart(chart);
  return `M${s.x},${s.y} L${s.x},${n.y}`;
}

/** Sends a dot along the edge `from → to`, and flashes the target state. */
function animate(layer: SVGGElement, chart: Statechart, from: MessageState | null, to: MessageState, initialPath: string) {
  const svg = layer.ownerSVGElement;
  const node = svg?.querySelector(`g.state-node[data-state="${to}"]`);
  if (node) {
    node.classList.remove('flash');
    // Restart the CSS animation.
    void (node as SVGGElement).getBBox();
    node.classList.add('flash');
  }
  if (layer.childElementCount >= MAX_DOTS) return;
  const d = from === null ? initialPath : chart.edges.find((e) => e.source === from && e.target === to) && pathOf(chart.edges.find((e) => e.source === from && e.target === to)!.points);
  if (!d) return;
  const dot = document.createElementNS(SVG, 'circle');
  dot.setAttribute('r', '5');
  dot.setAttribute('class', `dot state-${to}`);
  const motion = document.createElementNS(SVG, 'animateMotion');
  motion.setAttribute('dur', `${DOT_MS}ms`);
  motion.setAttribute('path', d);
  motion.setAttribute('fill', 'freeze');
  motion.setAttribute('begin', 'indefinite');
  dot.appendChild(motion);
  layer.appendChild(dot);
  (motion as SVGAnimationElement).beginElement();
  setTimeout(() => dot.remove(), DOT_MS + 50);
}
