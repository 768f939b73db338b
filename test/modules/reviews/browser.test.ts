/**
 * The review page in a real browser (Debian's chromium driven by playwright-core): open the link,
 * choose a rating, write a comment, submit, see the thank-you page, with and without JavaScript.
 * Screenshots at phone and desktop sizes go to test-output/reviews/ for a person to look at.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { browserSkip, LAN_NAME, launchChromium } from '../../browser.ts';
import { createTestApp, type TestApp } from '../../support.ts';
import { bookOne, listReviews } from './support.ts';

const OUTPUT = path.resolve(import.meta.dirname, '../../../test-output/reviews');
const PHONE: BrowserContextOptions = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 } };

describe('review page in a browser', { skip: browserSkip }, () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;

  before(async () => {
    mkdirSync(OUTPUT, { recursive: true });
    t = await createTestApp();
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  /** A page that records every CSP refusal and page error, so a blocked style or script fails the test. */
  async function open(
    options: BrowserContextOptions & { javaScriptEnabled?: boolean },
  ): Promise<{ page: Page; problems: string[]; close(): Promise<void> }> {
    const context = await browser.newContext(options);
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (message) => {
      if (/Refused|Content Security Policy/i.test(message.text())) problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    return { page, problems, close: () => context.close() };
  }

  async function shot(page: Page, name: string): Promise<void> {
    await page.screenshot({ path: path.join(OUTPUT, `${name}.png`), fullPage: true });
  }

  /** The layout holds on this screen: no sideways scrolling, styles applied, large touch targets. */
  async function checkLayout(page: Page, width: number): Promise<void> {
    const layout = await page.evaluate(() => ({
      scrollWidth: document.documentElement.scrollWidth,
      header: getComputedStyle(document.querySelector('.top')!).backgroundColor,
      fontSize: parseFloat(getComputedStyle(document.body).fontSize),
    }));
    assert.ok(layout.scrollWidth <= width, `no horizontal scroll (${layout.scrollWidth} > ${width})`);
    assert.equal(layout.header, 'rgb(11, 92, 173)', 'the inline style sheet is applied (allowed by its CSP hash)');
    assert.ok(layout.fontSize >= 16, 'readable type');
  }

  test('phone: open the link, choose a rating, write a comment, submit, see the thank-you page', async () => {
    const { practice, token } = await bookOne(t, { clinic: { name: 'Sunrise Family Clinic' }, doctor: { firstname: 'Asha', lastname: 'Rao' } });
    const { page, problems, close } = await open(PHONE);
    try {
      const response = await page.goto(`${base}/reviews/${token}`);
      assert.equal(response?.status(), 200);
      await checkLayout(page, 390);
      assert.equal(await page.locator('header.top').innerText(), 'Sunrise Family Clinic');
      await assert.doesNotReject(page.getByText('Dr. Asha Rao').first().waitFor());
      await shot(page, 'form-phone');

      // Touch targets of at least 44 px: each rating option, the comment box and the button.
      for (const selector of ['.scale label', 'textarea', 'button[type=submit]']) {
        for (const box of await page.locator(selector).evaluateAll((elements) => elements.map((e) => e.getBoundingClientRect().toJSON()))) {
          assert.ok(box.height >= 44 && box.width >= 44, `${selector} is ${box.width}x${box.height}`);
        }
      }

      await page.getByRole('radio', { name: '4 Very good' }).check();
      assert.equal(await page.locator('#rating-4').isChecked(), true);
      const comment = 'Dr. Rao explained everything <clearly> & kindly.';
      await page.getByLabel('Comment (optional)').fill(comment);
      // The character count, an enhancement the page's own (hash-allowed) script adds.
      assert.equal(await page.locator('#comment-count').innerText(), `${comment.length} of 1000 characters`);
      await shot(page, 'filled-phone');

      // The same link open in a second tab, to send again once the first has gone through.
      const second = await page.context().newPage();
      await second.goto(`${base}/reviews/${token}`);

      const [submitted] = await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Send review' }).tap()]);
      assert.equal(submitted?.status(), 201);
      assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Thank you for your review');
      await checkLayout(page, 390);
      await shot(page, 'thanks-phone');

      const [review] = (await listReviews(t, practice.client.token)).json().reviews;
      assert.equal(review.rating, 4);
      assert.equal(review.comment, comment);

      // A second submission: a page saying it was already received (409); the first review stays.
      await second.getByRole('radio', { name: '1 Poor' }).check();
      const [again] = await Promise.all([second.waitForNavigation(), second.getByRole('button', { name: 'Send review' }).tap()]);
      assert.equal(again?.status(), 409);
      assert.equal(await second.getByRole('heading', { level: 1 }).innerText(), 'Your review was already received');
      await shot(second, 'already-received-phone');
      assert.equal((await listReviews(t, practice.client.token)).json().reviews[0].rating, 4);

      // Opening the link again shows the same, without a form.
      await page.goto(`${base}/reviews/${token}`);
      assert.equal(await page.locator('form').count(), 0);

      assert.equal((await page.goto(`${base}/reviews/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`))?.status(), 404);
      await checkLayout(page, 390);
      await shot(page, 'not-found-phone');
      assert.deepEqual(problems, []);
    } finally {
      await close();
    }
  });

  test('small phone (320 px): everything fits, the options keep their names', async () => {
    const { token } = await bookOne(t, { clinic: { name: "Dr. Mehta's Multispeciality Hospital and Diagnostic Centre" } });
    const { page, problems, close } = await open({ ...PHONE, viewport: { width: 320, height: 640 } });
    try {
      await page.goto(`${base}/reviews/${token}`);
      await checkLayout(page, 320);
      await shot(page, 'form-small-phone');
      // The words under the numbers are hidden from sight there, not from screen readers.
      await page.getByRole('radio', { name: '5 Excellent' }).check();
      assert.equal(await page.locator('#rating-5').isChecked(), true);
      assert.deepEqual(problems, []);
    } finally {
      await close();
    }
  });

  test('phone: a missing rating shows the form again with the error (400)', async () => {
    const { token } = await bookOne(t);
    const { page, problems, close } = await open(PHONE);
    try {
      await page.goto(`${base}/reviews/${token}`);
      await page.getByLabel('Comment (optional)').fill('Forgot the stars');
      // The browser itself asks for a rating (required); lift that to reach the server's answer.
      await page.locator('#rating-1').evaluate((input) => input.removeAttribute('required'));
      const [response] = await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Send review' }).tap()]);
      assert.equal(response?.status(), 400);
      assert.match(await page.getByRole('alert').innerText(), /Choose a rating from 1 to 5/);
      assert.equal(await page.getByLabel('Comment (optional)').inputValue(), 'Forgot the stars');
      await checkLayout(page, 390);
      await shot(page, 'error-phone');
      assert.deepEqual(problems, []);
    } finally {
      await close();
    }
  });

  test('desktop, without JavaScript, keyboard only: the form still works', async () => {
    const { practice, token } = await bookOne(t, { clinic: { name: 'Lakeside Dental' }, doctor: { firstname: 'Vikram', lastname: 'Shah' } });
    const { page, problems, close } = await open({ ...DESKTOP, javaScriptEnabled: false });
    try {
      await page.goto(`${base}/reviews/${token}`);
      await shot(page, 'form-desktop');
      // Tab to the rating group, arrows to choose, Tab to the comment, type, Tab to the button, Enter.
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'rating-1');
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('ArrowRight');
      assert.equal(await page.locator('#rating-3').isChecked(), true);
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'comment');
      await page.keyboard.type('Quick and painless.');
      assert.equal(await page.locator('#comment-count').innerText(), 'Up to 1000 characters.');
      await shot(page, 'filled-desktop');
      await page.keyboard.press('Tab');
      const [response] = await Promise.all([page.waitForNavigation(), page.keyboard.press('Enter')]);
      assert.equal(response?.status(), 201);
      assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Thank you for your review');
      await shot(page, 'thanks-desktop');
      const [review] = (await listReviews(t, practice.client.token)).json().reviews;
      assert.deepEqual([review.rating, review.comment], [3, 'Quick and painless.']);
      assert.deepEqual(problems, []);
    } finally {
      await close();
    }
  });

  test('over plain http by a LAN host name: the page, its style and script, and the submission work', async () => {
    const { practice, token } = await bookOne(t, { clinic: { name: 'Riverside Clinic' } });
    const { page, problems, close } = await open(DESKTOP);
    try {
      const lan = `http://${LAN_NAME}:${new URL(base).port}`;
      const response = await page.goto(`${lan}/reviews/${token}`);
      assert.equal(response?.status(), 200);
      await checkLayout(page, 1280);
      await page.getByRole('radio', { name: '5 Excellent' }).check();
      await page.getByLabel('Comment (optional)').fill('On the clinic network');
      assert.equal(await page.locator('#comment-count').innerText(), '21 of 1000 characters', 'the inline script ran');
      const [submitted] = await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Send review' }).click()]);
      assert.equal(submitted?.status(), 201);
      assert.ok(submitted?.url().startsWith(`${lan}/`), 'the form posted to the LAN name over http');
      assert.equal((await listReviews(t, practice.client.token)).json().reviews[0].rating, 5);
      assert.deepEqual(problems, []);
    } finally {
      await close();
    }
  });
});
