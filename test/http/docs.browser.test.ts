/**
 * /docs in a real browser (Debian's chromium driven by playwright-core) over plain http by a LAN
 * host name: Chromium maps the name to 127.0.0.1 itself (--host-resolver-rules), so no DNS question
 * is asked and nothing leaves the machine. Every asset must load over http, and the page must show
 * our own name and version.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import { VERSION } from '../../src/version.ts';
import { createTestApp, type TestApp } from '../support.ts';

const CHROMIUM = '/usr/bin/chromium';
const LAN_NAME = 'cps.clinic.test';

const missing = !existsSync(CHROMIUM);
if (missing && process.env.CI === 'true') throw new Error(`${CHROMIUM} is missing: .ci/run installs Debian's chromium before the tests`);
const skip = missing ? `${CHROMIUM} is not installed (apt-get install chromium); the browser test runs under CI=true` : false;

describe('/docs over plain http by a LAN host name, in a browser', { skip }, () => {
  let t: TestApp;
  let browser: Browser;
  let port: number;

  before(async () => {
    t = await createTestApp();
    port = Number(new URL(await t.app.listen({ port: 0, host: '127.0.0.1' })).port);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--no-first-run',
        '--disable-sync',
        // The LAN name is answered by the browser itself; every other name fails without a lookup.
        `--host-resolver-rules=MAP ${LAN_NAME} 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1`,
      ],
    });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  test('every asset loads over http and the reference renders under our name and version', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const requested: string[] = [];
    const failed: string[] = [];
    const problems: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    page.on('requestfailed', (request) => failed.push(`${request.url()}: ${request.failure()?.errorText}`));
    page.on('console', (message) => {
      // Loads refused or blocked (by the CSP, as mixed content, ...). Swagger UI's own inline style
      // attributes, which its CSP does not allow, change nothing that is checked here.
      if (/Refused to (load|connect|execute)|Mixed Content|Failed to load/i.test(message.text())) problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    try {
      const base = `http://${LAN_NAME}:${port}`;
      const response = await page.goto(`${base}/docs/`);
      assert.equal(response?.status(), 200);
      await page.locator('.info .title').waitFor({ timeout: 30_000 });
      const title = await page.locator('.info .title').innerText();
      assert.match(title, /OpenCPS — Clinical Practice Service/);
      assert.match(title, new RegExp(VERSION.replaceAll('.', '\\.')));
      assert.ok((await page.locator('.opblock').count()) > 10, 'the operations are listed');
      assert.equal(await page.title(), `OpenCPS ${VERSION} — API reference`);
      const logo = await page.locator('.topbar-wrapper img').getAttribute('src');
      assert.match(String(logo), /^data:image\/svg\+xml;base64,/);
      assert.match(Buffer.from(String(logo).split(',')[1]!, 'base64').toString(), /OpenCPS/, 'our own logo');
      assert.deepEqual(failed, [], 'no request failed');
      assert.deepEqual(problems, [], 'no load refused, no page error');
      const network = requested.filter((url) => !url.startsWith('data:'));
      assert.ok(
        network.some((url) => url.endsWith('swagger-ui-bundle.js')),
        'the bundle was fetched',
      );
      assert.deepEqual(
        network.filter((url) => !url.startsWith(`${base}/`)),
        [],
        'every asset came over http from the LAN name (none upgraded to https, none from elsewhere)',
      );
    } finally {
      await context.close();
    }
  });
});
