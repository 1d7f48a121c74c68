/** Progress of a long CLI operation: a cli-progress bar on a terminal, nothing anywhere else. */
import cliProgress from 'cli-progress';

/** Reports how far an operation has got; `done` never exceeds the latest `total`. */
export interface Progress {
  /** Begins a bar of `total` units, labelled `label`. */
  start(total: number, label: string): void;
  /** Moves the bar to `done` units (and to a new total when it grew meanwhile). */
  update(done: number, total?: number): void;
  /** Draws the final state and releases the line; a no-op when never started. */
  stop(): void;
}

/** A bar drawn on `stream` (stderr); the caller makes one only when the stream is a TTY. */
export function createProgressBar(stream: NodeJS.WriteStream): Progress {
  let bar: cliProgress.SingleBar | undefined;
  return {
    start(total, label) {
      bar = new cliProgress.SingleBar(
        {
          stream,
          format: `${label} [{bar}] {percentage}% | {value}/{total} | {duration_formatted}`,
          hideCursor: true,
          // Redraw at most 10 times a second: a bulk operation may update it per message.
          fps: 10,
        },
        cliProgress.Presets.shades_classic,
      );
      bar.start(total, 0);
    },
    update(done, total) {
      if (total !== undefined) bar?.setTotal(total);
      bar?.update(done);
    },
    stop() {
      bar?.stop();
      bar = undefined;
    },
  };
}
