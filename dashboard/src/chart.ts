/** A live time-series chart (uPlot), sized to its container and themed from CSS variables. */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { useMedia } from './components.js';
import { html } from './html.js';

/** One line of a chart. */
export interface Line {
  label: string;
  /** A CSS variable name holding the colour, e.g. '--c-done'. */
  color: string;
  values: (number | null)[];
}

const css = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';

/** Draws `lines` over `x` (epoch seconds). */
export function Chart({ title, x, lines, unit, testid }: { title: string; x: number[]; lines: Line[]; unit: string; testid: string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const dark = useMedia('(prefers-color-scheme: dark)');
  const shape = lines.map((l) => l.label).join('|');

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const axis = { stroke: css('--muted'), grid: { stroke: css('--grid'), width: 1 }, ticks: { stroke: css('--grid'), width: 1 } };
    const u = new uPlot(
      {
        width: Math.max(200, el.clientWidth),
        height: 180,
        legend: { show: true },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true } },
        axes: [axis, { ...axis, size: 72, values: (_u: uPlot, ticks: number[]) => ticks.map((t) => `${+t.toFixed(2)}${unit}`) }],
        series: [{}, ...lines.map((l) => ({ label: l.label, stroke: css(l.color), width: 1.5, spanGaps: false, points: { show: false } }))],
      },
      [x, ...lines.map((l) => l.values)] as uPlot.AlignedData,
      el,
    );
    plot.current = u;
    const ro = new ResizeObserver(() => u.setSize({ width: Math.max(200, el.clientWidth), height: 180 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
    // Rebuilt when the lines or the colour scheme change; data updates go through setData.
  }, [shape, dark, unit]);

  useEffect(() => {
    plot.current?.setData([x, ...lines.map((l) => l.values)] as uPlot.AlignedData);
  });

  return html`<figure class="chart" data-testid=${testid}>
    <figcaption>${title}</figcaption>
    <div ref=${box} class="chart-box"></div>
  </figure>`;
}
