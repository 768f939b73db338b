import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { bearer, createTestApp, DIALECT, type TestApp } from '../../support.ts';
import { startReceiver } from '../webhooks/support.ts';
import { book, createPractice, events, request } from './support.ts';

/** From an appointment's completion and a manual review request to the partner's webhook endpoint. */
describe(`appointments: review requests reach webhooks (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(async () => t.close());

  it('delivers the first completion and a manual request, signed, with the stored body', async () => {
    const practice = await createPractice(t, { doctor: { review_link: 'https://r.example/doctor' } });
    const receiver = await startReceiver();
    const subscribed = await t.app.inject({
      method: 'POST',
      url: '/notification/v1/connect/webhook/subscriptions',
      headers: bearer(practice.client.token),
      payload: { endpoint: receiver.url },
    });
    assert.equal(subscribed.statusCode, 201, subscribed.body);
    const id = await book(t, practice);
    await request(t, practice.client.token, 'POST', `/dr/v1/appointment/${id}/complete`);
    await request(t, practice.client.token, 'POST', `/dr/v1/appointment/${id}/complete`);
    const manual = await request(t, practice.client.token, 'POST', `/dr/v1/appointment/${id}/review-request`);
    assert.equal(manual.statusCode, 202);
    await t.ctx.jobs.runDue();
    await receiver.close();

    const stored = await events(t, practice.client.businessId);
    assert.equal(stored.length, 2);
    assert.equal(receiver.received.length, 2);
    const verifier = new Webhook(subscribed.json().signing_key);
    for (const delivery of receiver.received) {
      const body = verifier.verify(delivery.body, delivery.headers as Record<string, string>) as { data: Record<string, string> };
      const event = stored.find((e) => e.id === delivery.headers['webhook-id']);
      assert.ok(event, 'webhook-id is the event id');
      assert.deepEqual(body, event.payload);
      assert.equal(body.data.appointment_id, id);
      assert.equal(body.data.external_review_link, 'https://r.example/doctor');
    }
    assert.ok(receiver.received.some((d) => d.headers['webhook-id'] === manual.json().event_id));
  });
});
