/** The parent side of child.ts: starts a child for one measurement and reads its result. */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundledEntry, NODE_CHILD_FLAGS } from '../helpers/bundle.js';
import type { ChildResult, ChildSpec } from './child.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');

/** The node arguments that run `spec`: a per-system entry, bundled to plain JS. */
function entryOf(spec: ChildSpec): string[] {
  // Profiles keep tsx: their summary attributes time per source file, and a bundle is one file.
  if (spec.mode === 'profile') return ['--import', 'tsx', join(HERE, 'children', 'profile.ts')];
  // From a JS bundle, as an app runs: no loader in its RSS or boot time.
  return [...NODE_CHILD_FLAGS, bundledEntry(join(HERE, 'children', `${spec.system}.ts`))];
}

/**
 * Runs `spec` in a fresh process; a crash spec resolves once the child died by SIGKILL. `onLine`
 * hears each stdout line as it comes (a child that reports its phases).
 */
export function runChild(spec: ChildSpec, onLine?: (line: string) => void): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', ...entryOf(spec), JSON.stringify(spec)], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    let partial = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      if (!onLine) return;
      const lines = (partial + d).split('\n');
      partial = lines.pop()!;
      for (const line of lines) onLine(line);
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (spec.mode === 'crash') {
        return signal === 'SIGKILL' ? resolve({ metrics: {} }) : reject(new Error(`crash child exited with ${code ?? signal}, not by SIGKILL`));
      }
      const line = out.split('\n').find((l) => l.startsWith('BENCH_RESULT '));
      if (code !== 0 || !line) return reject(new Error(`child ${spec.mode} ${spec.system} exited with ${code ?? signal}`));
      resolve(JSON.parse(line.slice('BENCH_RESULT '.length)) as ChildResult);
    });
  });
}
