/** The service's name and version, from package.json (shown by `cps --version` and /docs). */
import { readFileSync } from 'node:fs';

const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

export const PRODUCT = 'OpenCPS';
export const VERSION: string = manifest.version;
