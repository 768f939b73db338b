/** The service's name and version, from package.json (shown by `cps --version` and /docs). */
import { readFileSync } from 'node:fs';

const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

export const PRODUCT = 'OpenCPS';
export const VERSION: string = manifest.version;
/**
 * The version of the HTTP interface (`info.version` of /openapi.json): 1.0.0, as the contract and the
 * specification's versioning say. It is not the package's version, which names a release of this code.
 */
export const API_VERSION = '1.0.0';
