/**
 * A partner's developer in a real browser, over plain http by a LAN host name: a webhook subscription
 * added (its key shown once), a delivery that failed (503) seen with its attempts and answers, retried
 * until delivered, its event's body and attempt history inspected with how to verify the signature, a
 * replay window; the business's own API clients (never another's); the search as it answers, why each ranked, the look-alike warning. Scopes are the
 * client's: a client without webhook:admin has no webhooks page, and another business's deliveries stay
 * out of sight. WCAG 2.1 AA by axe-core; screenshots at 390 px and desktop widths.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserSkip, LAN_NAME, launchChromium } from '../../browser.ts';
import { bearer, createTestApp, createTestClient, type TestApp, type TestClient } from '../../support.ts';
import { recordReviewEvent, startReceiver, type Receiver } from '../webhooks/support.ts';
import { checkAccessibility, checkFits, DESKTOP, openConsole, PHONE, shot, signInThroughPage } from './support.ts';

describe('partner developer in a browser', { skip: browserSkip }, () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;
  let partner: TestClient;
  let receiver: Receiver;

  before(async () => {
    t = await createTestApp();
    const port = new URL(await t.app.listen({ port: 0, host: '127.0.0.1' })).port;
    base = `http://${LAN_NAME}:${port}`;
    browser = await launchChromium();
    partner = await createTestClient(t.ctx, { scopes: ['webhook:admin', 'search'] });
    // The first attempt of each delivery is refused (503), the next accepted.
    receiver = await startReceiver((_delivery, nth) => ({ status: nth === 1 ? 503 : 200 }));
  });
  after(async () => {
    await receiver?.close();
    await browser?.close();
    await t?.close();
  });

  test('desktop: subscribe, see a failed delivery, retry it, inspect its event, replay; search', async () => {
    const { page, problems, close } = await openConsole(browser, DESKTOP);
    try {
      await signInThroughPage(page, base, partner);
      await page.getByRole('link', { name: 'Webhooks' }).click();
      await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
      await page.getByText('No subscription yet.').waitFor();

      await page.getByLabel('Endpoint').fill(`${receiver.url}/hooks`);
      await page.getByLabel('Events (separated by spaces)').fill('external_review.request');
      await page.getByRole('button', { name: 'Add', exact: true }).click();
      const key = await page.locator('#hooks-key').innerText();
      assert.match(key, /^whsec_/, 'the signing key, shown once');
      const [subscription] = (
        await t.app.inject({ method: 'GET', url: '/notification/v1/connect/webhook/subscriptions', headers: bearer(partner.token) })
      ).json().data;
      assert.equal(subscription.endpoint, `${receiver.url}/hooks`);

      // Another business's event and subscription: never shown here.
      const other = await createTestClient(t.ctx, { scopes: ['webhook:admin'] });
      await t.app.inject({
        method: 'POST',
        url: '/notification/v1/connect/webhook/subscriptions',
        headers: bearer(other.token),
        payload: { endpoint: `${receiver.url}/other` },
      });
      const otherEvent = await recordReviewEvent(t.ctx.storage, other.businessId);

      const eventId = await recordReviewEvent(t.ctx.storage, partner.businessId);
      await t.ctx.jobs.runDue();
      await page.getByRole('button', { name: `Deliveries to ${receiver.url}/hooks` }).click();
      const row = page.locator('#deliveries-table tbody tr', { hasText: eventId });
      await row.getByText('Pending').waitFor();
      assert.equal(await row.locator('td').nth(1).innerText(), '1', 'one attempt');
      assert.equal(await row.locator('td').nth(2).innerText(), '503');
      assert.equal(await page.getByText(otherEvent).count(), 0, "another business's event is not listed");
      await checkAccessibility(page, 'webhooks');

      await row.getByRole('button', { name: `Retry event ${eventId}` }).click();
      await page.locator('#status', { hasText: 'The delivery is queued again.' }).waitFor();
      await t.ctx.jobs.runDue();
      await page.getByRole('button', { name: `Deliveries to ${receiver.url}/hooks` }).click();
      await row.getByText('Delivered').waitFor();
      assert.equal(await row.locator('td').nth(1).innerText(), '2');

      await row.getByRole('button', { name: `Inspect event ${eventId}` }).click();
      await page.getByRole('heading', { level: 2, name: `external_review.request ${eventId}` }).waitFor();
      const body = JSON.parse(await page.locator('#event-body').innerText());
      assert.equal(body.event, 'external_review.request');
      assert.equal(body.business_id, partner.businessId);
      assert.deepEqual(
        (await page.locator('#attempts-table tbody tr').allInnerTexts()).map((text) => text.split('\t').at(-1)),
        ['503', '200'],
        'each attempt and its answer',
      );
      assert.match(await page.locator('#verify-code').innerText(), /createHmac\('sha256'/);
      await checkAccessibility(page, 'event inspection');
      await shot(page, 'webhooks-desktop');

      // A replay of the last hour: the event is queued again (and delivered).
      await page
        .getByLabel('Send again every event since')
        .fill(new Date(Date.now() - 3600_000 - new Date().getTimezoneOffset() * 60_000).toISOString().slice(0, 16));
      await page.getByRole('button', { name: 'Replay' }).click();
      await page.locator('#status', { hasText: '1 events queued again.' }).waitFor();

      // The search as it answers.
      await page.getByRole('link', { name: 'Search' }).click();
      await page.getByLabel('Query').fill('clonazepam');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.getByText(/^\d+ results, best first\.$/).waitFor();
      const first = page.locator('#search-results li').first();
      assert.match(await first.locator('h2').innerText(), /^1\. Clonazepam/);
      assert.equal(await first.locator('h2 mark').first().innerText(), 'Clonazepam', 'the matched part is marked');
      assert.match(await first.innerText(), /Matched in: name/);
      assert.match(await first.innerText(), /Look-alike: .*may be confused with/);
      await checkAccessibility(page, 'search');
      await shot(page, 'search-desktop');
      assert.deepEqual(problems, []);
    } finally {
      await close();
    }
  });

  test("the business's API clients: its own only, at desktop and phone widths", async () => {
    const second = await createTestClient(t.ctx, { businessId: partner.businessId, scopes: ['appointment:write'] });
    const elsewhere = await createTestClient(t.ctx, { scopes: ['webhook:admin'] });
    for (const [options, name] of [
      [DESKTOP, 'clients-desktop'],
      [PHONE, 'clients-phone'],
    ] as const) {
      const { page, problems, close } = await openConsole(browser, options);
      try {
        await signInThroughPage(page, base, partner);
        await page.getByRole('link', { name: 'API clients' }).click();
        await page.locator('#clients-table').waitFor();
        const listed = await page.locator('#clients-table tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-client')));
        const ours = await t.ctx.storage.db.selectFrom('api_clients').select('id').where('business_id', '=', partner.businessId).execute();
        assert.deepEqual(listed.sort(), ours.map((client) => client.id).sort());
        assert.ok(listed.includes(partner.clientId) && listed.includes(second.clientId));
        assert.equal(await page.getByText(elsewhere.clientId).count(), 0, "another business's client is not shown");
        assert.match(await page.locator(`#clients-table tr[data-client="${partner.clientId}"]`).innerText(), /signed in/);
        if (options === PHONE) await checkFits(page, 390);
        await checkAccessibility(page, `API clients (${name})`);
        await shot(page, name);
        assert.deepEqual(problems, []);
      } finally {
        await close();
      }
    }
  });

  test('phone: the webhooks page fits at 390 px; a client without webhook:admin has no such page', async () => {
    const { page, problems, close } = await openConsole(browser, PHONE);
    try {
      const endpoint = `${receiver.url}/phone`;
      await t.app.inject({
        method: 'POST',
        url: '/notification/v1/connect/webhook/subscriptions',
        headers: bearer(partner.token),
        payload: { endpoint },
      });
      await recordReviewEvent(t.ctx.storage, partner.businessId);
      await t.ctx.jobs.runDue();
      await signInThroughPage(page, base, partner);
      await page.getByRole('link', { name: 'Webhooks' }).tap();
      await page.getByRole('button', { name: `Deliveries to ${endpoint}` }).tap();
      await page.locator('#deliveries-table').waitFor();
      await checkFits(page, 390);
      await checkAccessibility(page, 'webhooks (phone)');
      await shot(page, 'webhooks-phone');

      const searchOnly = await createTestClient(t.ctx, { scopes: ['search'] });
      await page.getByRole('button', { name: 'Sign out' }).tap();
      await signInThroughPage(page, base, searchOnly);
      assert.equal(await page.getByRole('link', { name: 'Webhooks' }).count(), 0);
      assert.equal(await page.getByRole('link', { name: 'API clients' }).count(), 0);
      await page.goto(`${base}/console/webhooks`);
      await page.getByRole('heading', { level: 1, name: 'Page not found' }).waitFor();
      assert.deepEqual(problems, []);
    } finally {
      await close();
    }
  });
});
