/**
 * Debian's chromium for the browser tests, driven by playwright-core (which never downloads a browser).
 * A LAN host name is answered by the browser itself (--host-resolver-rules), so no DNS question is
 * asked, and every other name fails: nothing leaves the machine.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
export const LAN_NAME = 'cps.clinic.test';

const missing = !existsSync(CHROMIUM);
if (missing && process.env.CI === 'true') throw new Error(`${CHROMIUM} is missing: .ci/run installs Debian's chromium before the tests`);
/** The `skip` option of a browser test's describe: a reason when chromium is not installed (never under CI=true). */
export const browserSkip = missing ? `${CHROMIUM} is not installed (apt-get install chromium); the browser test runs under CI=true` : false;

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-sync',
      `--host-resolver-rules=MAP ${LAN_NAME} 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1`,
    ],
  });
}
