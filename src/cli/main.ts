/** Entry point of the `spool` command (bin/spool.mjs runs its build, dist/src/cli/main.js). */
import { createProgressBar } from './progress.js';
import { runCli } from './run.js';

// A reader that went away (`spool dead … | head`) must not end the command halfway with an
// unhandled EPIPE: the command finishes (a requeue still requeues, the spool closes) and the
// output it cannot take is dropped.
const gone = new Set<NodeJS.WriteStream>();
const writer = (stream: NodeJS.WriteStream) => {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    gone.add(stream);
  });
  return (text: string) => {
    if (!gone.has(stream)) stream.write(text);
  };
};

// exitCode instead of process.exit(): stdout is a pipe in scripts, and exit() can cut it short.
process.exitCode = await runCli(process.argv.slice(2), {
  stdout: writer(process.stdout),
  stderr: writer(process.stderr),
  stdoutIsTTY: process.stdout.isTTY === true,
  stdin: async (limit) => {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of process.stdin) {
      chunks.push(chunk as Buffer);
      size += (chunk as Buffer).length;
      // Past the limit the payload is refused anyway: stop reading rather than hold it all.
      if (size > limit) break;
    }
    return Buffer.concat(chunks);
  },
  // Progress only on a terminal: piped stderr stays a clean log.
  ...(process.stderr.isTTY ? { progress: () => createProgressBar(process.stderr) } : {}),
});
