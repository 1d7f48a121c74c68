/**
 * Vitest global setup: makes sure dist/ (the package build that bin/spool.mjs and the package
 * tests run) is current before any test spawns it, building once per run when a source changed.
 */
import { ensureBuilt } from '../helpers/build.js';

/** Runs once, before the test files. */
export default function setup(): void {
  ensureBuilt();
}
