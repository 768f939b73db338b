/**
 * Failures that overlap other work: a subscription's run of failures (failing_since) ends with any
 * success finishing after it began, even one whose delivery was read before the first failure; a
 * manual retry asked while an attempt is in flight is sent as that attempt fails.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { bearer, createTestApp, createTestClient, DIALECT, type TestApp } from '../../support.ts';
import { subscribe } from './event-schemas.ts';
import { recordReviewEvent, startReceiver, until } from './support.ts';

const SUBSCRIPTIONS = '/notification/v1/connect/webhook/subscriptions';

describe(`webhooks: failures overlapping other work (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { CPS_WEBHOOK_RETRY_SCHEDULE: '3600', CPS_WEBHOOK_DISABLE_AFTER_SECONDS: '1' } });
    await t.ctx.jobs.start();
  });
  after(async () => t.close());

  it('a success in flight while the first failure landed ends the run', async () => {
    const receiver = await startReceiver((delivery) => {
      const doctor = (JSON.parse(delivery.body) as { data: { doctor_id: string } }).data.doctor_id;
      // A is accepted after 3 s; B and C are refused at once.
      return doctor === 'doc_1' ? { status: 200, delayMs: 3000 } : { status: 503 };
    });
    try {
      const client = await createTestClient(t.ctx);
      const subscription = await subscribe(t, client.token, receiver.url, ['external_review.request']);
      const db = t.ctx.storage.db;
      const read = () => db.selectFrom('webhook_subscriptions').select('failing_since').where('id', '=', subscription.id).executeTakeFirstOrThrow();
      const succeeded = async () =>
        (await db.selectFrom('webhook_deliveries').select('status').where('subscription_id', '=', subscription.id).execute()).some(
          (row) => row.status === 'succeeded',
        );
      await recordReviewEvent(t.ctx.storage, client.businessId, 1);
      await until(() => receiver.received.length === 1);
      await recordReviewEvent(t.ctx.storage, client.businessId, 2);
      await until(async () => (await read()).failing_since !== null);
      assert.equal(await succeeded(), false, "B's failure was recorded while A was in flight");
      await until(succeeded);
      assert.equal((await read()).failing_since, null, "A's success, finishing after B's failure, ended the run");
      // Longer than the disabling period later, one failure starts a new run and disables nothing.
      await sleep(1200);
      await recordReviewEvent(t.ctx.storage, client.businessId, 3);
      await until(() => receiver.received.length === 3);
      await sleep(300);
      const listed = await t.app.inject({ method: 'GET', url: SUBSCRIPTIONS, headers: bearer(client.token) });
      assert.equal(listed.json().data[0].status, 'active');
    } finally {
      await receiver.close();
    }
  });

  it('a retry asked while an attempt is in flight is sent when that attempt fails', async () => {
    // The first attempt is refused after 800 ms; the schedule alone would wait an hour.
    const receiver = await startReceiver((_delivery, nth) => (nth === 1 ? { status: 503, delayMs: 800 } : { status: 200 }));
    try {
      const client = await createTestClient(t.ctx);
      const subscription = await subscribe(t, client.token, receiver.url, ['external_review.request']);
      const eventId = await recordReviewEvent(t.ctx.storage, client.businessId);
      await until(() => receiver.received.length === 1);
      const retried = await t.app.inject({
        method: 'POST',
        url: `${SUBSCRIPTIONS}/${subscription.id}/deliveries/${eventId}/retry`,
        headers: bearer(client.token),
      });
      assert.equal(retried.statusCode, 202, retried.body);
      const deadline = Date.now() + 5000;
      await until(() => receiver.received.length === 2 || Date.now() > deadline);
      assert.equal(receiver.received.length, 2, 'sent again as the first attempt failed, not an hour later');
      await until(async () => {
        const listed = await t.app.inject({ method: 'GET', url: `${SUBSCRIPTIONS}/${subscription.id}/deliveries`, headers: bearer(client.token) });
        return listed.json().data[0].status === 'succeeded';
      });
    } finally {
      await receiver.close();
    }
  });
});
