/** The figures of a run: one sample per repetition, rows of medians, ratios taken per repetition. */
import { median, type Durability } from './common.js';
import type { Metrics } from './workloads.js';

/** One repetition of one workload on one system. */
export interface Sample {
  workload: string;
  system: string;
  durability: Durability;
  depth?: number;
  rep: number;
  metrics: Metrics;
}

/** The medians over repetitions of one workload on one system. */
export interface Row {
  workload: string;
  system: string;
  durability: Durability;
  depth?: number;
  reps: number;
  median: Metrics;
  /** Median over repetitions of (this system ÷ the floor of the same repetition). */
  ratio: Metrics;
  values: Metrics[];
}

/** Which samples a figure is taken from. */
export interface Selector {
  workload: string;
  durability: Durability;
  system: string;
  depth?: number;
}

const matches = (s: Sample, q: Selector) => s.workload === q.workload && s.durability === q.durability && s.system === q.system && s.depth === q.depth;

/** The median over repetitions of a ÷ b, each pair from the same repetition; undefined if no pair. */
export function perRepRatio(samples: Sample[], a: Selector, b: Selector, key: string): { ratio: number; reps: number } | undefined {
  const ratios: number[] = [];
  for (const s of samples) {
    if (!matches(s, a)) continue;
    const other = samples.find((o) => matches(o, b) && o.rep === s.rep);
    const x = s.metrics[key];
    const y = other?.metrics[key];
    if (x !== undefined && y !== undefined && y !== 0) ratios.push(x / y);
  }
  return ratios.length ? { ratio: median(ratios), reps: ratios.length } : undefined;
}

/** Groups samples into rows: medians per metric and per-repetition ratios to the floor. */
export function summarise(samples: Sample[]): Row[] {
  const groups = new Map<string, Sample[]>();
  for (const s of samples) {
    const key = [s.workload, s.depth ?? '', s.durability, s.system].join('|');
    let g = groups.get(key);
    if (!g) groups.set(key, (g = []));
    g.push(s);
  }
  const rows: Row[] = [];
  for (const g of groups.values()) {
    const first = g[0]!;
    const med: Metrics = {};
    const ratio: Metrics = {};
    for (const k of Object.keys(first.metrics)) {
      med[k] = median(g.map((s) => s.metrics[k]!));
      const r = perRepRatio(samples, first, { ...first, system: 'floor' }, k);
      if (r) ratio[k] = r.ratio;
    }
    rows.push({ workload: first.workload, system: first.system, durability: first.durability, ...(first.depth !== undefined ? { depth: first.depth } : {}), reps: g.length, median: med, ratio, values: g.map((s) => s.metrics) });
  }
  return rows;
}
