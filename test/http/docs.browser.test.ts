/**
 * /docs in a real browser (Debian's chromium driven by playwright-core) over plain http by a LAN
 * host name: Chromium maps the name to 127.0.0.1 itself (--host-resolver-rules), so no DNS question
 * is asked and nothing leaves the machine. Every asset must load over http, and the page must show
 * our own name and version.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { VERSION } from '../../src/version.ts';
import { browserSkip, LAN_NAME, launchChromium } from '../browser.ts';
import { createTestApp, type TestApp } from '../support.ts';

describe('/docs over plain http by a LAN host name, in a browser', { skip: browserSkip }, () => {
  let t: TestApp;
  let browser: Browser;
  let port: number;

  before(async () => {
    t = await createTestApp();
    port = Number(new URL(await t.app.listen({ port: 0, host: '127.0.0.1' })).port);
    browser = await launchChromium();
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
      // The interface's version (contract 9), beside the title; the release names the page.
      assert.match(title, /\b1\.0\.0\b/);
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
