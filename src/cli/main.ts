/** Entry point of the `spool` command (bin/spool.mjs runs its build, dist/src/cli/main.js). */
import { createProgressBar } from './progress.js';
import { runCli } from './run.js';

// exitCode instead of process.exit(): stdout is a pipe in scripts, and exit() can cut it short.
process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  stdoutIsTTY: process.stdout.isTTY === true,
  // Progress only on a terminal: piped stderr stays a clean log.
  ...(process.stderr.isTTY ? { progress: () => createProgressBar(process.stderr) } : {}),
});
