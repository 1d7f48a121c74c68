/** Widgets shared by the pages. */
import { useEffect, useState } from 'preact/hooks';
import type { Counts, Layer, MessageState } from './api.js';
import { count } from './format.js';
import { html } from './html.js';

export const STATES: MessageState[] = ['pending', 'activating', 'processing', 'dead', 'done'];

/** A state name as a coloured chip. */
export function StateChip({ state }: { state: MessageState }) {
  return html`<span class=${`chip state-${state}`}>${state}</span>`;
}

/** Counts per state as chips with numbers. */
export function CountChips({ counts }: { counts: Counts }) {
  return html`<div class="counts">
    ${STATES.map(
      (s) => html`<span class=${`count-chip state-${s}`} data-state=${s} data-count=${counts[s]}><span class="count-name">${s}</span><b>${count(counts[s])}</b></span>`,
    )}
  </div>`;
}

/** Pool use against its limit. */
export function PoolBar({ active, concurrency, label }: { active: number; concurrency: number; label?: string }) {
  const pct = concurrency > 0 ? Math.min(100, (active / concurrency) * 100) : 0;
  return html`<div class="pool" title=${`${active} of ${concurrency} running`}>
    <div class="pool-bar"><div class="pool-fill" style=${`width:${pct}%`}></div></div>
    <span class="pool-text">${label ? `${label} ` : ''}${active}/${concurrency}</span>
  </div>`;
}

/** Where a setting's value came from. */
export function LayerBadge({ layer, own = true }: { layer: Layer; own?: boolean }) {
  return html`<span class=${`badge layer-${layer}`} title=${own ? `set by the ${layer} layer` : `inherited spool-wide value (${layer})`}>${layer}${own ? '' : ' ·  inherited'}</span>`;
}

/** Last action's outcome, or an API error, shown until replaced. */
export function Notice({ notice }: { notice: { kind: 'ok' | 'error'; text: string } | null }) {
  if (!notice) return null;
  return html`<div class=${`notice notice-${notice.kind}`} role=${notice.kind === 'error' ? 'alert' : 'status'}>${notice.text}</div>`;
}

/** State for a notice plus a helper that runs an action and reports its outcome. */
export function useNotice() {
  const [notice, setNotice] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null);
  async function run<T>(action: () => Promise<T>, ok?: (result: T) => string): Promise<T | undefined> {
    try {
      const result = await action();
      setNotice(ok ? { kind: 'ok', text: ok(result) } : null);
      return result;
    } catch (error) {
      const e = error as { code?: string; message?: string };
      setNotice({ kind: 'error', text: `${e.code ?? 'ERROR'}: ${e.message ?? String(error)}` });
      return undefined;
    }
  }
  return { notice, setNotice, run };
}

/** True while the media query matches (dark mode, phone width). */
export function useMedia(query: string): boolean {
  const [matches, setMatches] = useState(() => matchMedia(query).matches);
  useEffect(() => {
    const mq = matchMedia(query);
    const on = () => setMatches(mq.matches);
    mq.addEventListener('change', on);
    return () => mq.removeEventListener('change', on);
  }, [query]);
  return matches;
}
