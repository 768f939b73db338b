import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { up as alignWebhookDeliveries } from '../../src/db/migrations/0011_webhook_delivery_decisions.ts';
import { startReceiver, recordReviewEvent } from '../modules/webhooks/support.ts';
import { bearer, createTestApp, createTestClient, DIALECT, type TestApp } from '../support.ts';

describe(`migrations (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { CPS_WEBHOOK_RETRY_SCHEDULE: '0' } });
  });
  after(() => t.close());

  it('0011 gives a delivery written before it the state of its job, as the listing showed it', async () => {
    const client = await createTestClient(t.ctx, { scopes: ['webhook:admin'] });
    const receiver = await startReceiver(() => ({ status: 503 }));
    const created = await t.app.inject({
      method: 'POST',
      url: '/notification/v1/connect/webhook/subscriptions',
      headers: bearer(client.token),
      payload: { endpoint: receiver.url },
    });
    const subscriptionId = created.json().id as string;
    const eventId = await recordReviewEvent(t.ctx.storage, client.businessId);
    await t.ctx.jobs.runDue();
    await receiver.close();
    const db = t.ctx.storage.db;
    const delivery = () =>
      db
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('subscription_id', '=', subscriptionId)
        .where('event_id', '=', eventId)
        .executeTakeFirstOrThrow();
    const { job_id: jobId } = await delivery();

    // The job failed without the handler recording it.
    await db.updateTable('webhook_deliveries').set({ status: 'pending', last_error: null, next_attempt_at: 1 }).where('job_id', '=', jobId).execute();
    await alignWebhookDeliveries(db);
    let row = await delivery();
    assert.equal(row.status, 'failed');
    assert.equal(row.next_attempt_at, null);
    assert.equal(row.last_error, 'HTTP 503');

    // A retry the queue scheduled after the handler wrote its own time.
    const dueAt = Date.now() + 60_000;
    await db.updateTable('jobs').set({ status: 'pending', due_at: dueAt }).where('id', '=', jobId!).execute();
    await db.updateTable('webhook_deliveries').set({ status: 'pending', next_attempt_at: 1 }).where('job_id', '=', jobId).execute();
    await alignWebhookDeliveries(db);
    row = await delivery();
    assert.equal(row.status, 'pending');
    assert.equal(row.next_attempt_at, dueAt);
  });
});
