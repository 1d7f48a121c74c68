/** Entry point of the `spool` command (bin/spool.mjs loads it through tsx). */
import { runCli } from './run.js';

// exitCode instead of process.exit(): stdout is a pipe in scripts, and exit() can cut it short.
process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});
