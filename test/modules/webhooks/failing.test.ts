/**
 * A subscription's run of failures (failing_since) ends with any success finishing after it began,
 * even one whose delivery was read before the first failure: one later failure does not disable it.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { bearer, createTestApp, createTestClient, DIALECT, type TestApp } from '../../support.ts';
import { subscribe } from './event-schemas.ts';
import { recordReviewEvent, startReceiver, until } from './support.ts';

const SUBSCRIPTIONS = '/notification/v1/connect/webhook/subscriptions';

describe(`webhooks: a subscription's run of failures (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { CPS_WEBHOOK_RETRY_SCHEDULE: '3600', CPS_WEBHOOK_DISABLE_AFTER_SECONDS: '1' } });
    await t.ctx.jobs.start();
  });
  after(async () => t.close());

  it('a success in flight while the first failure landed ends the run', async () => {
    const receiver = await startReceiver((delivery) => {
      const doctor = (JSON.parse(delivery.body) as { data: { doctor_id: string } }).data.doctor_id;
      // A is accepted slowly; B and C are refused at once.
      return doctor === 'doc_1' ? { status: 200, delayMs: 600 } : { status: 503 };
    });
    try {
      const client = await createTestClient(t.ctx);
      const subscription = await subscribe(t, client.token, receiver.url, ['external_review.request']);
      const db = t.ctx.storage.db;
      await recordReviewEvent(t.ctx.storage, client.businessId, 1);
      await until(() => receiver.received.length === 1);
      await recordReviewEvent(t.ctx.storage, client.businessId, 2);
      await until(() => receiver.received.length === 2);
      await until(async () => {
        const rows = await db.selectFrom('webhook_deliveries').select('status').where('subscription_id', '=', subscription.id).execute();
        return rows.some((row) => row.status === 'succeeded');
      });
      const afterSuccess = await db
        .selectFrom('webhook_subscriptions')
        .select('failing_since')
        .where('id', '=', subscription.id)
        .executeTakeFirstOrThrow();
      assert.equal(afterSuccess.failing_since, null, "A's success, finishing after B's failure, ended the run");
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
});
