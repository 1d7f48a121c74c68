/**
 * Issue #10's targets, one line each, checked against a run: medians of the per-repetition
 * ratios (every system in the same repetition), or medians of the figure itself. A target whose
 * figures the run did not take is "not measured", with the reason.
 */
import { fmt, type Durability } from './common.js';
import { perRepRatio, type Row, type Sample, type Selector } from './results.js';

/** One target line. */
export interface TargetCheck {
  target: string;
  measured: string;
  status: 'met' | 'missed' | 'not measured';
}

/** What the targets need to know about the run besides its figures. */
export interface TargetContext {
  /** sendBatch size (the target is stated for 1,000). */
  batch: number;
  /** Why BullMQ was not measured, when it was not (redis-server missing, say). */
  bullmqMissing?: string;
}

/** The depth of the disk and RSS targets. */
export const TARGET_DEPTH = 100_000;

/** "1.23×" or "0.456×". */
export function ratioText(r: number | undefined): string {
  if (r === undefined) return '–';
  return `${r >= 10 ? r.toFixed(0) : r >= 1 ? r.toFixed(2) : r.toFixed(3)}×`;
}

/** Checks every issue #10 target against the run. */
export function checkTargets(rows: Row[], samples: Sample[], ctx: TargetContext): TargetCheck[] {
  const out: TargetCheck[] = [];
  const row = (q: Selector) => rows.find((r) => r.workload === q.workload && r.durability === q.durability && r.system === q.system && r.depth === q.depth);
  const notMeasured = (target: string, why: string) => out.push({ target, measured: why, status: 'not measured' });

  /** Spool ÷ `other` per repetition, against `min` (at least) or `max` (at most). */
  const versus = (target: string, workload: string, durability: Durability, other: string, key: string, bound: { min?: number; max?: number }, unit: string, depth?: number) => {
    const spool = { workload, durability, system: 'spool', ...(depth !== undefined ? { depth } : {}) };
    const them = { ...spool, system: other };
    if (other === 'bullmq' && ctx.bullmqMissing) return notMeasured(target, `BullMQ not measured: ${ctx.bullmqMissing}`);
    const r = perRepRatio(samples, spool, them, key);
    if (!r) return notMeasured(target, `not in this run (${workload}, ${durability}, spool and ${other})`);
    const ok = (bound.min === undefined || r.ratio >= bound.min) && (bound.max === undefined || r.ratio <= bound.max);
    out.push({
      target,
      measured: `${ratioText(r.ratio)} ${other} (medians: Spool ${fmt(row(spool)?.median[key])} ${unit} vs ${fmt(row(them)?.median[key])} ${unit}; ${r.reps} rep${r.reps === 1 ? '' : 's'})`,
      status: ok ? 'met' : 'missed',
    });
  };
  /** The median of a Spool figure against a limit. */
  const limit = (target: string, workload: string, key: string, max: number, unit: string) => {
    const r = row({ workload, durability: 'normal', system: 'spool' });
    const v = r?.median[key];
    if (v === undefined) return notMeasured(target, `not in this run (${workload})`);
    out.push({ target, measured: `${fmt(v)} ${unit} (median of ${r!.reps})`, status: v <= max ? 'met' : 'missed' });
  };

  versus('drain c8, normal: ≥ 0.5× the floor', 'drain-c8', 'normal', 'floor', 'msg/s', { min: 0.5 }, 'msg/s');
  versus('drain c8, normal: ≥ 1.5× plainjob', 'drain-c8', 'normal', 'plainjob', 'msg/s', { min: 1.5 }, 'msg/s');
  versus('drain c8, normal: ≥ BullMQ', 'drain-c8', 'normal', 'bullmq', 'msg/s', { min: 1 }, 'msg/s');
  versus('drain c1, normal: ≥ plainjob c1', 'drain-c1', 'normal', 'plainjob', 'msg/s', { min: 1 }, 'msg/s');
  versus('drain c8, full: ≥ 3× the full floor', 'drain-c8', 'full', 'floor', 'msg/s', { min: 3 }, 'msg/s');
  versus('one-by-one send(), normal: ≥ plainjob', 'send', 'normal', 'plainjob', 'msg/s', { min: 1 }, 'msg/s');
  versus('one-by-one send(), normal: ≥ 0.5× the floor', 'send', 'normal', 'floor', 'msg/s', { min: 0.5 }, 'msg/s');
  const batchTarget = 'sendBatch of 1,000, normal: ≥ plainjob';
  if (ctx.batch === 1000) versus(batchTarget, 'batch', 'normal', 'plainjob', 'msg/s', { min: 1 }, 'msg/s');
  else notMeasured(batchTarget, `this run used --batch ${ctx.batch}`);
  limit('latency send → handler start, normal: p50 ≤ 0.3 ms', 'latency', 'p50', 0.3, 'ms');
  limit('latency send → handler start, normal: p99 ≤ 2 ms', 'latency', 'p99', 2, 'ms');
  // Issue 12: pull against push in the same repetition, the cross-process wake-up, groups' claim cost.
  const spoolVersus = (target: string, a: Selector, b: Selector, key: string, bound: { min?: number; max?: number }, unit: string) => {
    const r = perRepRatio(samples, a, b, key);
    if (!r) return notMeasured(target, `not in this run (${a.workload} and ${b.workload}, ${a.durability})`);
    const ok = (bound.min === undefined || r.ratio >= bound.min) && (bound.max === undefined || r.ratio <= bound.max);
    out.push({
      target,
      measured: `${ratioText(r.ratio)} (medians: ${fmt(row(a)?.median[key])} vs ${fmt(row(b)?.median[key])} ${unit}; ${r.reps} rep${r.reps === 1 ? '' : 's'})`,
      status: ok ? 'met' : 'missed',
    });
  };
  const drainC8 = { workload: 'drain-c8', durability: 'normal' as Durability, system: 'spool' };
  spoolVersus('pull-c8, normal: ≥ drain c8', { ...drainC8, workload: 'pull-c8' }, drainC8, 'msg/s', { min: 1 }, 'msg/s');
  spoolVersus('receive-10, normal: ≥ drain c8', { ...drainC8, workload: 'receive-10' }, drainC8, 'msg/s', { min: 1 }, 'msg/s');
  limit('wake-up across processes (send in one, wait in another), normal: p50 ≤ 20 ms', 'wake', 'p50 ms', 20, 'ms');
  limit('an idle pull waiter on a quiet file: ≤ 1 query per poll interval', 'wake', 'quiet queries/poll', 1, 'statements/poll');
  limit('an idle pull waiter while another queue is busy: ≤ 1 query per poll interval besides its counter reads', 'wake', 'busy queries/poll', 1, 'statements/poll');
  // Issue 12: the claim over groups of 100 messages each; the 1M line (10k groups) needs --big.
  for (const depth of [10_000, TARGET_DEPTH, 1_000_000]) {
    const grouped = { workload: 'claim-groups', durability: 'normal' as Durability, system: 'spool-groups', depth };
    const groups = (depth / 100).toLocaleString('en-US');
    const target = `claim over ${groups} groups × 100 messages (${depth.toLocaleString('en-US')} pending): ≤ 1.5× the claim without groups`;
    if (depth === 1_000_000 && !row(grouped)) notMeasured(target, 'needs --big');
    else spoolVersus(target, grouped, { ...grouped, system: 'spool' }, 'µs/msg', { max: 1.5 }, 'µs/msg');
  }
  // Issue 11: the limiter's cost must stay within the bench's noise (taken here as 10%).
  for (const durability of ['normal', 'full'] as const) {
    const target = `drain c8 under a rate limit far above the drain rate, ${durability}: ≥ 0.9× drain c8`;
    const limited = { workload: 'drain-c8-ratelimit', durability, system: 'spool' };
    const plain = { ...limited, workload: 'drain-c8' };
    const r = perRepRatio(samples, limited, plain, 'msg/s');
    if (!r) notMeasured(target, `not in this run (drain-c8 and drain-c8-ratelimit, ${durability}, spool)`);
    else {
      out.push({
        target,
        measured: `${ratioText(r.ratio)} (medians: ${fmt(row(limited)?.median['msg/s'])} vs ${fmt(row(plain)?.median['msg/s'])} msg/s; ${r.reps} rep${r.reps === 1 ? '' : 's'})`,
        status: r.ratio >= 0.9 ? 'met' : 'missed',
      });
    }
  }
  // Issue 14: the message history (on by default) costs drain c8 less than 10%.
  {
    const target = 'history costs < 10% (drain-c8 ≥ 0.9× drain-c8-nohistory), normal';
    const withHistory = { workload: 'drain-c8', durability: 'normal' as Durability, system: 'spool' };
    const without = { ...withHistory, workload: 'drain-c8-nohistory' };
    const r = perRepRatio(samples, withHistory, without, 'msg/s');
    if (!r) notMeasured(target, 'not in this run (drain-c8 and drain-c8-nohistory, normal, spool)');
    else {
      out.push({
        target,
        measured: `${ratioText(r.ratio)} (medians: ${fmt(row(withHistory)?.median['msg/s'])} vs ${fmt(row(without)?.median['msg/s'])} msg/s; ${r.reps} rep${r.reps === 1 ? '' : 's'})`,
        status: r.ratio >= 0.9 ? 'met' : 'missed',
      });
    }
  }
  versus(`disk per pending message (${TARGET_DEPTH.toLocaleString('en-US')} pending, ~100-byte payloads): ≤ 2× the floor`, 'disk', 'normal', 'floor', 'B/msg', { max: 2 }, 'B/msg', TARGET_DEPTH);
  versus(`RSS with ${TARGET_DEPTH.toLocaleString('en-US')} pending: ≤ plainjob`, 'rss', 'normal', 'plainjob', 'RSS MB', { max: 1 }, 'MB', TARGET_DEPTH);

  // Issue 13: the SQS endpoint through the SDK within 20% of fauxqs and 25% of the stub; its own capacity 2× fauxqs.
  versus('sqs: SDK drain (Receive 10 + DeleteBatch, 8 clients): ≥ 0.8× fauxqs', 'sqs-drain', 'normal', 'fauxqs', 'msg/s', { min: 0.8 }, 'msg/s');
  versus('sqs: SDK drain (Receive 10 + DeleteBatch, 8 clients): ≥ 0.75× the zero-work stub', 'sqs-drain', 'normal', 'stub', 'msg/s', { min: 0.75 }, 'msg/s');
  versus('sqs: raw keep-alive Receive 10 + DeleteBatch: ≥ 2× fauxqs', 'sqs-raw', 'normal', 'fauxqs', 'pairs/s', { min: 2 }, 'pairs/s');

  // The --big targets, as in issue #6.
  const spoolRows = (workload: string) => rows.filter((r) => r.workload === workload && r.system === 'spool').sort((a, b) => a.depth! - b.depth!);
  const big = ' (1M needs --big)';
  const rss = spoolRows('rss');
  const rssLow = rss.find((r) => r.depth === 10_000);
  const rssHigh = rss.at(-1);
  const rssTarget = 'RSS with 1M pending: within 20 MB of 10k';
  if (rssLow && rssHigh && rssHigh !== rssLow) {
    // Δ RSS (against the same process before opening) is compared: whole-process RSS varies by
    // a few MB from one fresh process to the next.
    const d = rssHigh.median['Δ RSS MB']! - rssLow.median['Δ RSS MB']!;
    const full = rssHigh.depth === 1_000_000;
    out.push({ target: rssTarget, measured: `Δ RSS ${fmt(d)} MB more at ${rssHigh.depth!.toLocaleString('en-US')} than at 10,000${full ? '' : big}`, status: full ? (d <= 20 ? 'met' : 'missed') : 'not measured' });
  } else notMeasured(rssTarget, 'not in this run (rss)');
  const claims = spoolRows('claim');
  const cLow = claims.find((r) => r.depth === 10_000);
  const cHigh = claims.at(-1);
  const claimTarget = 'claim cost at 1M: ≤ 1.5× the cost at 10k';
  if (cLow && cHigh && cHigh !== cLow) {
    const r = cHigh.median['µs/msg']! / cLow.median['µs/msg']!;
    const full = cHigh.depth === 1_000_000;
    out.push({
      target: claimTarget,
      measured: `${r.toFixed(2)}× (${fmt(cHigh.median['µs/msg'])} vs ${fmt(cLow.median['µs/msg'])} µs/msg at ${cHigh.depth!.toLocaleString('en-US')})${full ? '' : big}`,
      status: full ? (r <= 1.5 ? 'met' : 'missed') : 'not measured',
    });
  } else notMeasured(claimTarget, 'not in this run (claim)');
  const boot = spoolRows('boot').at(-1);
  const bootTarget = 'boot with 1M rows: start() < 2 s';
  if (boot) {
    const full = boot.depth === 1_000_000;
    out.push({
      target: bootTarget,
      measured: `${fmt(boot.median['start ms'])} ms at ${boot.depth!.toLocaleString('en-US')} pending${full ? '' : big}`,
      status: !full ? 'not measured' : boot.median['start ms']! < 2000 ? 'met' : 'missed',
    });
  } else notMeasured(bootTarget, 'not in this run (boot)');
  return out;
}

/** "[met]", "[MISSED]" or "[not measured]" and the line, for the printed summary. */
export function targetLine(t: TargetCheck): string {
  const mark = t.status === 'met' ? '[met]   ' : t.status === 'missed' ? '[MISSED]' : '[not measured]';
  return `${mark} ${t.target}: ${t.measured}`;
}
