/**
 * The dashboard's files: built by `npm run build:admin` (scripts/build-admin.mjs) into
 * `dist/dashboard/` at the package root, and served from there. Nothing is loaded from anywhere
 * else, which the Content-Security-Policy also enforces in the browser.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HttpError } from './http.js';

/** The package root: the nearest folder above this module holding a package.json. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('spool admin: no package.json above the admin module');
    dir = parent;
  }
  return dir;
}

/** Where the built dashboard lives. */
export const DASHBOARD_DIR = join(packageRoot(), 'dist', 'dashboard');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json; charset=utf-8',
};

/** Everything the page may load, and only from this origin. */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

async function read(name: string): Promise<Buffer> {
  try {
    return await readFile(join(DASHBOARD_DIR, name));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    if (name === 'index.html') {
      throw new HttpError(503, 'DASHBOARD_NOT_BUILT', `The dashboard is not built (no ${join(DASHBOARD_DIR, name)}): run npm run build:admin`);
    }
    throw new HttpError(404, 'NOT_FOUND', `No dashboard file ${JSON.stringify(name)}`);
  }
}

/**
 * Serves the page. Its asset URLs carry the `?token=` the page was opened with, since a
 * `<script src>` cannot send an Authorization header.
 */
export async function serveIndex(res: ServerResponse, token: string | null, head: boolean): Promise<void> {
  const html = (await read('index.html')).toString('utf8').replaceAll('%TOKEN_QUERY%', token === null ? '' : `?token=${encodeURIComponent(token)}`);
  res.writeHead(200, {
    'content-type': TYPES['.html']!,
    'content-length': Buffer.byteLength(html),
    'cache-control': 'no-store',
    'content-security-policy': CSP,
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
  });
  res.end(head ? undefined : html);
}

/** Serves one built asset by its plain file name (no folders, so no path can escape the folder). */
export async function serveAsset(res: ServerResponse, name: string, head: boolean): Promise<void> {
  const ext = name.slice(name.lastIndexOf('.'));
  if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+$/.test(name) || !TYPES[ext] || name === 'index.html') {
    throw new HttpError(404, 'NOT_FOUND', `No dashboard file ${JSON.stringify(name)}`);
  }
  const body = await read(name);
  res.writeHead(200, {
    'content-type': TYPES[ext],
    'content-length': body.length,
    'cache-control': 'no-cache',
    'x-content-type-options': 'nosniff',
  });
  res.end(head ? undefined : body);
}
