/**
 * The console's foundation in a real browser (Debian's chromium driven by playwright-core), over plain
 * http by a LAN host name: sign-in for a business's client and for the operator, what the page keeps
 * (no readable cookie, nothing in its storage), sign-out, WCAG 2.1 AA by axe-core, no CSP refusal.
 * Screenshots at phone and desktop widths go to test-output/console/.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserSkip, LAN_NAME, launchChromium } from '../../browser.ts';
import { ADMIN_TOKEN, createTestApp, createTestClient, type TestApp, type TestClient } from '../../support.ts';
import { checkAccessibility, checkFits, DESKTOP, openConsole, PHONE, shot, signInThroughPage } from './support.ts';

describe('console sign-in in a browser', { skip: browserSkip }, () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;
  let desk: TestClient;

  before(async () => {
    t = await createTestApp();
    const port = new URL(await t.app.listen({ port: 0, host: '127.0.0.1' })).port;
    base = `http://${LAN_NAME}:${port}`;
    browser = await launchChromium();
    desk = await createTestClient(t.ctx, { scopes: ['appointment:write', 'appointment:complete', 'clinic:write', 'patient:read', 'patient:write'] });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  for (const [size, options, width] of [
    ['phone', PHONE, 390],
    ['desktop', DESKTOP, 1280],
  ] as const) {
    test(`${size}: a client signs in, keeps nothing readable, signs out; the operator signs in`, async () => {
      const { page, problems, close } = await openConsole(browser, options);
      try {
        await page.goto(`${base}/console`);
        await page.locator('body[data-ready=true]').waitFor();
        assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Sign in');
        await checkFits(page, width);
        await checkAccessibility(page, `sign-in (${size})`);
        await shot(page, `signin-${size}`);

        // A wrong secret: the form says so, no session.
        await page.getByLabel('Client id').fill(desk.clientId);
        await page.getByLabel('Client secret').fill('cs_not-the-secret');
        await page.locator('form', { hasText: 'With an API client' }).getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('alert').filter({ hasText: 'Sign-in failed' }).waitFor();
        await checkAccessibility(page, `sign-in failed (${size})`);

        await signInThroughPage(page, base, desk);
        assert.match(await page.locator('#who').innerText(), new RegExp(`API client ${desk.clientId} of Test Business`));
        await checkFits(page, width);
        await checkAccessibility(page, `home (${size})`);
        await shot(page, `home-client-${size}`);
        const kept = await page.evaluate(() => ({ cookie: document.cookie, local: localStorage.length, session: sessionStorage.length }));
        assert.deepEqual(kept, { cookie: '', local: 0, session: 0 }, 'the cookie is HttpOnly, nothing is stored by the page');

        // A reload keeps the session (the cookie), the keyboard reaches the menu.
        await page.reload();
        await page.getByRole('button', { name: 'Sign out' }).waitFor();
        await page.keyboard.press('Tab');
        assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content');

        await page.getByRole('button', { name: 'Sign out' }).click();
        await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
        assert.equal(await page.locator('#status').innerText(), 'You have signed out.');
        // Asked from the page (the browser resolves the LAN name itself; node would ask DNS).
        const status = await page.evaluate(async () => (await fetch('/console/session')).status);
        assert.equal(status, 401, 'the session ended on the server');

        await signInThroughPage(page, base, { adminToken: ADMIN_TOKEN });
        assert.equal(await page.locator('#who').innerText(), 'You are signed in as the operator of this service.');
        await checkAccessibility(page, `operator home (${size})`);
        await shot(page, `home-operator-${size}`);
        assert.deepEqual(problems, []);
      } finally {
        await close();
      }
    });
  }
});
