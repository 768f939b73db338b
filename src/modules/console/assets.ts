/**
 * The console's page and its files (static/): plain HTML, CSS and ES modules, no build step. Read once
 * when the module is created and answered from memory with an ETag; each answer carries the console's
 * Content-Security-Policy: scripts, styles and connections from this origin only, no inline script or
 * style, and no upgrade-insecure-requests (a clinic's LAN name over plain http must work too).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const STATIC_DIR = path.join(import.meta.dirname, 'static');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-resource-policy': 'same-origin',
};

export interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

/** Every file of static/ by name (the page is index.html). */
export function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const name of readdirSync(STATIC_DIR)) {
    const type = TYPES[path.extname(name)];
    if (!type) continue;
    const body = readFileSync(path.join(STATIC_DIR, name));
    assets.set(name, { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
  }
  return assets;
}
