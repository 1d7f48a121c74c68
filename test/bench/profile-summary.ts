/**
 * Where the time went in a .cpuprofile: top functions by self time, self time by module, and
 * the heaviest subtrees (inclusive time) rooted in Spool's own code.
 * Usage: node --import tsx test/bench/profile-summary.ts <file.cpuprofile | dir> [--top 15]
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** One row of a summary. */
export interface SummaryRow {
  name: string;
  ms: number;
  percent: number;
}

/** The summary of one profile. */
export interface ProfileSummary {
  totalMs: number;
  idleMs: number;
  samples: number;
  self: SummaryRow[];
  modules: SummaryRow[];
  inclusive: SummaryRow[];
}

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));

function shortUrl(url: string): string {
  let u = url.startsWith('file://') ? fileURLToPath(url) : url;
  if (u.startsWith(ROOT + '/')) u = u.slice(ROOT.length + 1);
  return u.replace(/^node_modules\//, '');
}

/**
 * A function's label. Repo sources run through tsx, so their line numbers are those of the
 * transpiled code: only the file is shown for them.
 */
function keyOf(frame: CallFrame): string {
  const name = frame.functionName || '(anonymous)';
  if (!frame.url) return name;
  const url = shortUrl(frame.url);
  return frame.url.includes('node_modules') || frame.url.startsWith('node:') ? `${name}  ${url}:${frame.lineNumber + 1}` : `${name}  ${url}`;
}

/** A native function (no script, e.g. better-sqlite3's Statement.run) is named with its caller. */
function isNative(frame: CallFrame): boolean {
  return !frame.url && !frame.functionName.startsWith('(');
}

/** The module a frame belongs to: a package, a directory of this repo, node internals, or V8. */
function moduleOf(frame: CallFrame): string {
  if (!frame.url) return frame.functionName || '(native)';
  if (frame.url.startsWith('node:')) return 'node: internals';
  const u = shortUrl(frame.url);
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(frame.url);
  if (pkg) return pkg[1]!;
  const parts = u.split('/');
  if (parts[0] === 'src' || parts[0] === 'machines') return parts.length > 2 ? `${parts[0]}/${parts[1]}/` : u;
  if (parts[0] === 'test') return parts.slice(0, 2).join('/') + '/';
  return u;
}

/** Summarises a profile. */
export function summarize(profile: CpuProfile, top = 15): ProfileSummary {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const deltas = profile.timeDeltas;
  const sorted = [...deltas].sort((a, b) => a - b);
  const typical = sorted[sorted.length >> 1] ?? 0;
  const self = new Map<string, number>();
  const modules = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    // A sample stands for the time until the next one (DevTools' attribution).
    const us = i + 1 < deltas.length ? deltas[i + 1]! : typical;
    const node = byId.get(profile.samples[i]!)!;
    total += us;
    const frame = node.callFrame;
    if (frame.functionName === '(idle)') idle += us;
    const caller = parent.has(node.id) ? byId.get(parent.get(node.id)!)!.callFrame : undefined;
    const native = isNative(frame) && caller !== undefined;
    const key = native ? `${frame.functionName} [native] ← ${keyOf(caller)}` : keyOf(frame);
    self.set(key, (self.get(key) ?? 0) + us);
    const mod = native ? `native ← ${moduleOf(caller)}` : moduleOf(frame);
    modules.set(mod, (modules.get(mod) ?? 0) + us);
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const f = byId.get(id)!.callFrame;
      const url = f.url ? shortUrl(f.url) : '';
      if (!url.startsWith('src/') && !url.startsWith('machines/')) continue;
      const k = keyOf(f);
      if (seen.has(k)) continue;
      seen.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + us);
    }
  }
  const rows = (m: Map<string, number>, n: number): SummaryRow[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, us]) => ({ name, ms: us / 1000, percent: total ? (us / total) * 100 : 0 }));
  return {
    totalMs: total / 1000,
    idleMs: idle / 1000,
    samples: profile.samples.length,
    self: rows(self, top),
    modules: rows(modules, 20),
    inclusive: rows(inclusive, top),
  };
}

/** The summary as text. */
export function formatSummary(s: ProfileSummary, title: string): string {
  const lines = [
    `${title}: ${s.totalMs.toFixed(0)} ms sampled (${s.samples} samples), idle ${s.idleMs.toFixed(0)} ms (${((s.idleMs / s.totalMs) * 100).toFixed(1)}%)`,
    '',
    `Top ${s.self.length} functions by self time:`,
    ...s.self.map((r, i) => `${String(i + 1).padStart(3)}. ${r.percent.toFixed(1).padStart(5)}%  ${r.ms.toFixed(0).padStart(6)} ms  ${r.name}`),
    '',
    'Self time by module:',
    ...s.modules.map((r) => `     ${r.percent.toFixed(1).padStart(5)}%  ${r.ms.toFixed(0).padStart(6)} ms  ${r.name}`),
    '',
    `Heaviest subtrees in src/ and machines/ (inclusive time):`,
    ...s.inclusive.map((r) => `     ${r.percent.toFixed(1).padStart(5)}%  ${r.ms.toFixed(0).padStart(6)} ms  ${r.name}`),
  ];
  return lines.join('\n');
}

function newestProfile(dir: string): string {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => join(dir, f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  if (!files[0]) throw new Error(`No .cpuprofile in ${dir}`);
  return files[0];
}

/** Reads and summarises a profile file (or the newest one in a directory). */
export function summarizeFile(path: string, top = 15): { file: string; summary: ProfileSummary } {
  const file = statSync(path).isDirectory() ? newestProfile(path) : path;
  return { file, summary: summarize(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, top) };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const topAt = args.indexOf('--top');
  const top = topAt >= 0 ? Number(args[topAt + 1]) : 15;
  const target = args.find((a, i) => !a.startsWith('--') && (topAt < 0 || i !== topAt + 1)) ?? join(ROOT, 'test/bench/results/profiles');
  const { file, summary } = summarizeFile(target, top);
  console.log(formatSummary(summary, shortUrl(file)));
}
