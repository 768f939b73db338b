/**
 * The operator in a real browser, over plain http by a LAN host name: a business created (its client's
 * secret shown once), a front desk's client added to it with fewer scopes, both working at the login;
 * the businesses listed with a business's week of usage, the desk client's secret rotated with a grace period and the client revoked;
 * the access log across businesses and for one; the service's readiness, backups' last runs and each chain's verdict.
 * WCAG 2.1 AA by axe-core; screenshots at 390 px and desktop widths, where every operator page fits without sideways scrolling.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { SCOPES } from '../../../src/auth/scopes.ts';
import { recordBackupRun } from '../../../src/modules/ops/index.ts';
import { browserSkip, LAN_NAME, launchChromium } from '../../browser.ts';
import { ADMIN_TOKEN, createTestApp, type TestApp } from '../../support.ts';
import { checkAccessibility, checkFits, DESKTOP, openConsole, PHONE, shot, signInThroughPage } from './support.ts';

describe('operator in a browser', { skip: browserSkip }, () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;

  before(async () => {
    t = await createTestApp();
    const port = new URL(await t.app.listen({ port: 0, host: '127.0.0.1' })).port;
    base = `http://${LAN_NAME}:${port}`;
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  async function login(clientId: string, clientSecret: string) {
    const response = await t.app.inject({
      method: 'POST',
      url: '/connect-auth/v1/account/login',
      payload: { client_id: clientId, client_secret: clientSecret },
    });
    assert.equal(response.statusCode, 200, response.body);
    const claims = JSON.parse(Buffer.from(response.json().access_token.split('.')[1], 'base64url').toString());
    return claims as { scope?: string; scopes?: string[] };
  }

  test('desktop: a business and a front desk client made, the access log read, the health seen', async () => {
    const { page, problems, close } = await openConsole(browser, DESKTOP);
    try {
      await signInThroughPage(page, base, { adminToken: ADMIN_TOKEN });
      await page.getByRole('link', { name: 'Businesses' }).click();
      await page.getByRole('heading', { level: 1, name: 'Businesses and API clients' }).waitFor();
      assert.deepEqual(
        await page.locator('#ops-client input[name=scopes]').evaluateAll((inputs) => inputs.map((i) => (i as HTMLInputElement).value)),
        [...SCOPES],
        'every scope is offered',
      );

      await page.getByLabel('Name').fill('Lotus Clinic');
      await page.locator('#ops-business').getByRole('button', { name: 'Create' }).click();
      await page.locator('#made').waitFor();
      const businessId = await page.locator('#made-business').innerText();
      await login(await page.locator('#made-client').innerText(), await page.locator('#made-secret').innerText());
      const stored = await t.ctx.storage.db.selectFrom('businesses').select('name').where('id', '=', businessId).executeTakeFirst();
      assert.equal(stored?.name, 'Lotus Clinic');

      await page.getByLabel('Business id').fill(businessId);
      await page.locator('#ops-client').getByRole('button', { name: 'Create' }).click();
      await page.locator('#status', { hasText: 'The API client was created.' }).waitFor();
      const deskClient = await page.locator('#made-client').innerText();
      await login(deskClient, await page.locator('#made-secret').innerText());
      const client = await t.ctx.storage.db
        .selectFrom('api_clients')
        .select(['business_id', 'scopes'])
        .where('id', '=', deskClient)
        .executeTakeFirst();
      assert.deepEqual(client, { business_id: businessId, scopes: 'appointment:write appointment:complete clinic:write patient:read patient:write' });

      // The listing, then the business's clients: the desk's secret rotated with an hour's grace, then revoked.
      await page.locator(`#ops-businesses-table tr[data-business="${businessId}"]`).waitFor();
      assert.match(await page.locator(`#ops-businesses-table tr[data-business="${businessId}"]`).innerText(), /Lotus Clinic[\s\S]*\b2\b/);
      await page.getByRole('button', { name: 'API clients of Lotus Clinic' }).click();
      await page.locator(`#ops-clients-table tr[data-client="${deskClient}"]`).waitFor();
      const today = new Date().toISOString().slice(0, 10);
      assert.equal(await page.locator('#ops-usage-table tbody tr').count(), 7, 'a week of usage');
      assert.match(await page.locator(`#ops-usage-table tr[data-day="${today}"]`).innerText(), /^\d{4}-\d\d-\d\d\t\d+\t\d+\t0\t0$/);
      const deskSecret = await page.locator('#made-secret').innerText();
      await page.getByLabel('Hours the replaced secret keeps working').fill('1');
      await page.getByRole('button', { name: `Rotate secret of ${deskClient}` }).click();
      await page.locator('#status', { hasText: 'The secret was replaced.' }).waitFor();
      const rotatedSecret = await page.locator('#made-secret').innerText();
      assert.notEqual(rotatedSecret, deskSecret);
      await login(deskClient, deskSecret);
      await login(deskClient, rotatedSecret);
      await page.locator(`#ops-clients-table tr[data-client="${deskClient}"]`, { hasText: 'the old secret works until' }).waitFor();
      assert.equal(await page.getByLabel('Hours the replaced secret keeps working').inputValue(), '1', 'the hours chosen stay');
      await checkAccessibility(page, 'businesses');
      await shot(page, 'businesses-desktop');
      await page.getByRole('button', { name: `Revoke ${deskClient}` }).click();
      await page.locator('#status', { hasText: `${deskClient} was revoked.` }).waitFor();
      await page.locator(`#ops-clients-table tr[data-client="${deskClient}"]`, { hasText: 'Revoked' }).waitFor();
      const refused = await t.app.inject({
        method: 'POST',
        url: '/connect-auth/v1/account/login',
        payload: { client_id: deskClient, client_secret: rotatedSecret },
      });
      assert.equal(refused.statusCode, 401, 'a revoked client logs in no more');
      assert.match(await page.locator(`#ops-businesses-table tr[data-business="${businessId}"]`).innerText(), /Lotus Clinic[\s\S]*\b1\b/);

      await page.getByRole('link', { name: 'Audit log' }).click();
      await page.getByRole('heading', { level: 1, name: 'Access log' }).waitFor();
      // This very read's entry is written a moment later: it shows on the next read.
      await page.locator('#audit-area').locator('table, p').first().waitFor();
      await t.ctx.audit.flush();
      await page.getByRole('button', { name: 'Show' }).click();
      await page.locator('#audit-table tbody tr').first().waitFor();
      await page.locator('#audit-table', { hasText: 'GET /admin/v1/audit/events' }).waitFor();
      assert.match(
        await page.locator('#audit-table').innerText(),
        /POST \/admin\/v1\/businesses\/:business_id\/clients\/:client_id\/revoke/,
        'the revocation',
      );
      await checkAccessibility(page, 'access log');
      await shot(page, 'audit-desktop');

      // Two nights of cps backup as the command records them: the second failed (its directory cut from the reason).
      const night = Date.parse('2026-11-28T21:30:00Z');
      await recordBackupRun(t.ctx.storage.db, {
        command: 'backup',
        started_at: night,
        finished_at: night + 4_200,
        outcome: 'succeeded',
        bytes: 12_345_678,
        file: '/var/backups/cps/nightly-1128.sqlite',
        error: null,
      });
      await recordBackupRun(t.ctx.storage.db, {
        command: 'backup',
        started_at: night + 86_400_000,
        finished_at: night + 86_400_300,
        outcome: 'failed',
        bytes: null,
        file: '/mnt/offsite/nightly-1129.sqlite',
        error: 'the directory /mnt/offsite does not exist',
      });
      await page.getByRole('link', { name: 'Health' }).click();
      await page.getByText('The service is ready.').waitFor();
      assert.match(await page.locator('#health-table').innerText(), /database\tPassing/);
      assert.match(await page.locator('#retention-last').innerText(), /^(Retention has not run yet\.|Last run finished .*)$/);
      assert.equal(await page.locator('#queue-table, #queue-empty').count(), 1, 'the queue depth, or that it is empty');
      assert.equal(await page.locator('#chains-verdict').count(), 0, 'the chains are verified when asked');
      await page.getByRole('button', { name: 'Verify every chain' }).click();
      await page.locator('#status', { hasText: 'Every chain holds.' }).waitFor();
      assert.equal(await page.locator('#chains-verdict').innerText(), 'Every chain holds.');
      assert.match(await page.locator(`#chains-table tr[data-chain="${businessId}"]`).innerText(), /\d+\tHolds/);
      assert.match(await page.locator('#backups-last').innerText(), /^Last backup that succeeded: .+, nightly-1128\.sqlite \(12\.3 MB\)\.$/);
      assert.deepEqual(
        (await page.locator('#backups-table tbody tr').allInnerTexts()).map((row) => row.split('\t').slice(1)),
        [
          ['cps backup', 'Failed', 'nightly-1129.sqlite', '–', '0.3 s', 'the directory offsite does not exist'],
          ['cps backup', 'Succeeded', 'nightly-1128.sqlite', '12.3 MB', '4.2 s', '–'],
        ],
      );
      await checkAccessibility(page, 'health');
      await shot(page, 'health-desktop');
      assert.deepEqual(problems, []);
    } finally {
      await close();
    }
  });

  test('phone: the operator’s pages fit at 390 px', async () => {
    const { page, problems, close } = await openConsole(browser, PHONE);
    try {
      await signInThroughPage(page, base, { adminToken: ADMIN_TOKEN });
      for (const [link, heading, name] of [
        ['Businesses', 'Businesses and API clients', 'businesses-phone'],
        ['Audit log', 'Access log', 'audit-phone'],
        ['Health', 'Health', 'health-phone'],
      ] as const) {
        await page.getByRole('link', { name: link }).tap();
        await page.getByRole('heading', { level: 1, name: heading }).waitFor();
        await checkFits(page, 390);
        await checkAccessibility(page, `${link} (phone)`);
        await shot(page, name);
      }
      // The health page, last shown, with every chain's verdict too.
      await page.getByRole('button', { name: 'Verify every chain' }).tap();
      await page.locator('#chains-table').waitFor();
      await checkFits(page, 390);
      await shot(page, 'health-phone');
      assert.deepEqual(problems, []);
    } finally {
      await close();
    }
  });
});
