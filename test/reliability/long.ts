/**
 * The long tier: `npm run test:reliability -- --kills 1000`. Runs the seeded kill loop, drains,
 * checks, and prints ONE summary line of figures; exits 1 if an invariant failed.
 *
 * Options: --kills N (default 1000), --messages N per child (default 200), --seed S (default
 * random, printed), --min-delay / --max-delay ms after the child booted (default 0 / 800), --keep (keep
 * the run directory), --progress (a line every 50 runs on stderr), --pull-kills N (then the pull kill
 * loop of harness/pull-run.ts with N kills, default 100; 0 skips it).
 */
import { parseArgs } from 'node:util';
import { formatSummary } from './harness/checker.js';
import { runPullKills } from './harness/pull-run.js';
import { createRunDir, runKillLoop } from './harness/run.js';

const { values } = parseArgs({
  options: {
    kills: { type: 'string', default: '1000' },
    messages: { type: 'string', default: '200' },
    seed: { type: 'string' },
    'min-delay': { type: 'string', default: '0' },
    'max-delay': { type: 'string', default: '800' },
    keep: { type: 'boolean', default: false },
    progress: { type: 'boolean', default: false },
    'pull-kills': { type: 'string', default: '100' },
  },
});

const seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
const kills = Number(values.kills);
const { dir, cleanup } = createRunDir('spool-long-');
const started = performance.now();
process.stderr.write(`reliability long tier: seed=${seed} kills=${kills} dir=${dir}\n`);

const result = await runKillLoop({
  dir,
  seed,
  kills,
  messages: Number(values.messages),
  killDelayMs: [Number(values['min-delay']), Number(values['max-delay'])],
  onRun: values.progress
    ? (run, _exit, checked) => {
        if ((run + 1) % 50 === 0) {
          const s = Math.round((performance.now() - started) / 1000);
          process.stderr.write(`  ${run + 1}/${kills} kills, ${s} s, integrity ${checked.integrity}\n`);
        }
      }
    : undefined,
});

const seconds = Math.round((performance.now() - started) / 1000);
process.stdout.write(`seed=${seed} ${formatSummary(result.summary)} seconds=${seconds}\n`);
for (const line of result.details.slice(0, 20)) process.stderr.write(`  ${line}\n`);
for (const line of result.problems.slice(0, 10)) process.stderr.write(`  problem: ${line}\n`);
let ok = result.summary.ok && result.problems.length === 0;
if (ok && !values.keep) cleanup();
else process.stderr.write(`run directory kept: ${dir}\n`);

const pullKills = Number(values['pull-kills']);
if (pullKills > 0) {
  const pull = createRunDir('spool-long-pull-');
  const found = await runPullKills({ dir: pull.dir, seed, kills: pullKills, perGroup: Math.max(30, pullKills) });
  process.stdout.write(`pull: ${found.summary}\n`);
  for (const line of found.problems.slice(0, 10)) process.stderr.write(`  problem: ${line}\n`);
  if (found.problems.length === 0 && !values.keep) pull.cleanup();
  else process.stderr.write(`pull run directory kept: ${pull.dir}\n`);
  ok &&= found.problems.length === 0;
}
process.exit(ok ? 0 : 1);
