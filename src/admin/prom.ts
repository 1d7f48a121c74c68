/**
 * prom-client, loaded on first use: it is the heaviest package Spool depends on (about 8 MB of RSS
 * once imported), and an application that never mounts the admin handler or registers metrics
 * should not carry it. prom-client is CommonJS, so a synchronous require keeps
 * createAdminHandler() and registerMetrics() synchronous.
 */
import { createRequire } from 'node:module';

/** The prom-client module, required on the first call. */
export function promClient(): typeof import('prom-client') {
  loaded ??= createRequire(import.meta.url)('prom-client') as typeof import('prom-client');
  return loaded;
}

let loaded: typeof import('prom-client') | undefined;
