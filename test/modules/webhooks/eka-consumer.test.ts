/**
 * Deliveries as Eka Care's own webhook consumer receives them (eka-care/ekapython-webhook-sdk): a
 * subscription with a plain text signing key, `Eka-Webhook-Signature` checked over the body parsed
 * and written again by Python's json.dumps, `p_aid` on a rescheduled appointment (ekapython-sdk's
 * webhooks/appointment.py), and the review requests as Eka's `google_review.request` (a completion's)
 * and `google_review.request_manual` (a manual one's). The receivers run on 127.0.0.1: eka_consumer.py
 * (Python itself) and a TypeScript re-implementation.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { bearer, createTestApp, DIALECT, type TestApp } from '../../support.ts';
import { book, createPractice, request, type Practice } from '../appointments/support.ts';
import { assertEventBody } from './event-schemas.ts';
import { ekaVerify, HAS_PYTHON, startEkaConsumer, type EkaCheck, type EkaConsumer } from './eka-verifier.ts';
import { startReceiver, until, type Receiver } from './support.ts';

const SUBSCRIPTIONS = '/notification/v1/connect/webhook/subscriptions';
const APPOINTMENT_EVENTS = ['appointment.created', 'appointment.updated', 'appointment.statuschange'];

/** partner_meta that JavaScript and Python write differently unless the body is written Python's way. */
const PARTNER_META = {
  patient_name: 'Zoë Ñúñez',
  marathi: 'स्नेहा पाटील',
  note: 'follow-up 😀 ok',
  tiny: 0.00001,
  tinier: 1.5e-7,
  ratio: 0.1,
  huge: 1e21,
  count: 42,
  nested: { clé: [1.5, -2e-9, true, null] },
};

describe(`deliveries to Eka's webhook consumer (${DIALECT})`, { skip: !HAS_PYTHON && 'python3 is not installed' }, () => {
  let t: TestApp;
  let practice: Practice;
  let consumer: EkaConsumer;
  let receiver: Receiver;
  const keys = { '/appointments': randomUUID(), '/reviews': randomUUID(), '/google': `eka-${randomUUID().replaceAll('-', '')}` };
  const subscriptions: Record<string, string> = {};

  async function subscribe(endpoint: string, signingKey: string, eventNames: string[]): Promise<string> {
    const response = await t.app.inject({
      method: 'POST',
      url: SUBSCRIPTIONS,
      headers: bearer(practice.client.token),
      payload: { endpoint, signing_key: signingKey, event_names: eventNames },
    });
    assert.equal(response.statusCode, 201, response.body);
    assert.equal(response.json().signing_key, signingKey);
    return response.json().id;
  }

  /** Runs the due deliveries and waits for eka_consumer.py to report `count` requests in all. */
  async function deliver(count: number): Promise<EkaCheck[]> {
    await t.ctx.jobs.runDue();
    await until(() => consumer.checks.length >= count);
    return consumer.checks;
  }

  const deliveries = async (id: string) =>
    (await t.app.inject({ method: 'GET', url: `${SUBSCRIPTIONS}/${id}/deliveries`, headers: bearer(practice.client.token) })).json().data as Array<
      Record<string, unknown>
    >;

  before(async () => {
    t = await createTestApp({ env: { CPS_WEBHOOK_RETRY_SCHEDULE: '0' } });
    practice = await createPractice(t);
    consumer = await startEkaConsumer(keys);
    receiver = await startReceiver();
    subscriptions.appointments = await subscribe(`${consumer.url}/appointments`, keys['/appointments'], APPOINTMENT_EVENTS);
    subscriptions.reviews = await subscribe(`${consumer.url}/reviews`, keys['/reviews'], ['external_review.request']);
    subscriptions.google = await subscribe(`${consumer.url}/google`, keys['/google'], ['google_review.request', 'google_review.request_manual']);
  });
  after(async () => {
    await consumer.close();
    await receiver.close();
    await t.close();
  });

  describe('happy', () => {
    it('accepts a booking whose body has non-ASCII text and numbers Python writes its own way, signed with a UUID key', async () => {
      const id = await book(t, practice, { partner_meta: PARTNER_META, custom_attributes: { label: ['vital_submitted', 'पहिली भेट'] } });
      const [check] = await deliver(1);
      assert.equal(check!.path, '/appointments');
      assert.equal(check!.verified, true, check!.reason ?? '');
      assert.equal(check!.body_is_canonical, true);
      assert.equal(check!.ascii_only, true);
      // The sample Lambda's unescaping step before parsing reads the same body.
      assert.equal(check!.unescaped_verified, true, check!.unescaped_reason ?? '');
      assert.equal(check!.body.event, 'appointment.created');
      assert.equal(check!.body.data.appointment_id, id);
      assert.deepEqual(check!.body.data.partner_meta, PARTNER_META);
      for (const field of ['appointment_id', 'patient_id', 'clinic_id', 'doctor_id']) assert.ok(check!.body.data[field], field);
      assertEventBody(check!.body);
      const [delivery] = await deliveries(subscriptions.appointments!);
      assert.equal(delivery!.status, 'succeeded');
      assert.equal(delivery!.last_status_code, 200);
    });

    it('signs the same bytes both ways, at the time of the attempt', async () => {
      const probe = await subscribe(`${receiver.url}/probe`, keys['/appointments'], ['appointment.created']);
      await book(t, practice, { partner_meta: PARTNER_META });
      await t.ctx.jobs.runDue();
      await until(() => receiver.received.length >= 1);
      const [got] = receiver.received;
      const header = String(got!.headers['eka-webhook-signature']);
      assert.match(header, /^t=\d+,v1=[0-9a-f]{64}$/);
      assert.equal(header.split(',')[0], `t=${got!.headers['webhook-timestamp']}`);
      assert.ok(Math.abs(Number(got!.headers['webhook-timestamp']) - Date.now() / 1000) < 10);
      assert.equal(ekaVerify(keys['/appointments'], got!.body, header), null);
      const body = new Webhook(keys['/appointments'], { format: 'raw' }).verify(got!.body, got!.headers as Record<string, string>) as Record<
        string,
        any
      >;
      assert.deepEqual(body.data.partner_meta, PARTNER_META);
      const deleted = await t.app.inject({ method: 'DELETE', url: `${SUBSCRIPTIONS}/${probe}`, headers: bearer(practice.client.token) });
      assert.equal(deleted.statusCode, 200);
    });

    it('sends p_aid, the appointment it was rescheduled from, beside prev_aids', async () => {
      const first = await book(t, practice);
      const seen = (await deliver(consumer.checks.length + 1)).length;
      let response = await request(t, practice.client.token, 'PUT', `/dr/v1/appointment/${first}/reschedule`, {
        start_time: 1_900_090_000,
        end_time: 1_900_090_900,
      });
      assert.equal(response.statusCode, 200, response.body);
      const second = response.json().appointment_id as string;
      response = await request(t, practice.client.token, 'PUT', `/dr/v1/appointment/${second}/reschedule`, {
        start_time: 1_900_190_000,
        end_time: 1_900_190_900,
      });
      assert.equal(response.statusCode, 200, response.body);
      const third = response.json().appointment_id as string;
      // Each reschedule: the old one's statuschange and the new one's created.
      const checks = (await deliver(seen + 4)).slice(seen);
      assert.ok(checks.every((check) => check.verified));
      const created = (id: string) =>
        checks.find((check) => check.body.event === 'appointment.created' && check.body.data.appointment_id === id)!.body;
      assert.equal(created(second).data.p_aid, first);
      assert.deepEqual(created(second).data.prev_aids, [first]);
      assert.equal(created(third).data.p_aid, second);
      assert.deepEqual(created(third).data.prev_aids, [first, second]);
      for (const check of checks) assertEventBody(check.body);
      const original = consumer.checks.find((check) => check.body.event === 'appointment.created' && check.body.data.appointment_id === first)!;
      assert.equal('p_aid' in original.body.data, false);
    });

    it("sends the completion's review request as google_review.request and a manual one as google_review.request_manual, with google_review_link", async () => {
      const id = await book(t, practice);
      const seen = (await deliver(consumer.checks.length + 1)).length;
      const completed = await request(t, practice.client.token, 'POST', `/dr/v1/appointment/${id}/complete`);
      assert.equal(completed.statusCode, 200, completed.body);
      const manual = await request(t, practice.client.token, 'POST', `/dr/v1/appointment/${id}/review-request`);
      assert.ok(manual.statusCode < 300, manual.body);
      // statuschange, then per request: external_review.request and Eka's event for it.
      const checks = (await deliver(seen + 5)).slice(seen);
      assert.ok(checks.every((check) => check.verified));
      const google = checks.filter((check) => check.path === '/google');
      const external = checks.filter((check) => check.path === '/reviews');
      assert.equal(google.length, 2);
      assert.equal(external.length, 2);
      // Two events of no ordering key: their deliveries may arrive in either order.
      assert.deepEqual(google.map((check) => check.body.event).sort(), ['google_review.request', 'google_review.request_manual']);
      const links = new Set(external.map((check) => check.body.data.external_review_link));
      for (const check of google) {
        assertEventBody(check.body);
        assert.deepEqual(Object.keys(check.body.data), ['doctor_id', 'google_review_link', 'patient_id', 'appointment_id', 'clinic_id']);
        assert.equal(check.body.data.appointment_id, id);
        assert.ok(links.has(check.body.data.google_review_link), 'the link its external_review.request carries');
        assert.match(check.body.data.google_review_link, /^https?:\/\//);
      }
      assert.ok(external.every((check) => check.body.event === 'external_review.request'));
    });

    it('keeps a body with quotes, backslashes and line breaks verifiable by a parser that reads it as sent', async () => {
      const meta = { note: 'said "fine"\nnext line\\end\ttab', name: 'Zoë' };
      await book(t, practice, { partner_meta: meta });
      const [check] = (await deliver(consumer.checks.length + 1)).slice(-1);
      assert.equal(check!.verified, true, check!.reason ?? '');
      assert.equal(check!.body_is_canonical, true);
      assert.deepEqual(check!.body.data.partner_meta, meta);
      // The sample Lambda's unescaping turns \" into a bare quote before parsing: no body can survive
      // it and Python's json.dumps both (docs/6-eka.md).
      assert.equal(check!.unescaped_verified, false);
    });

    it("accepts Eka's example key supersecretkey with a warning, and Eka's consumer verifies deliveries signed with it", async () => {
      const sample = await startEkaConsumer({ '/sample': 'supersecretkey' });
      try {
        const created = await t.app.inject({
          method: 'POST',
          url: SUBSCRIPTIONS,
          headers: bearer(practice.client.token),
          payload: { endpoint: `${sample.url}/sample`, signing_key: 'supersecretkey', event_names: ['appointment.created'] },
        });
        assert.equal(created.statusCode, 201, created.body);
        assert.equal(created.json().signing_key, 'supersecretkey');
        assert.equal(created.json().warnings.length, 1);
        assert.match(created.json().warnings[0], /signing_key is guessable/);
        const before = consumer.checks.length;
        await book(t, practice);
        await t.ctx.jobs.runDue();
        await until(() => sample.checks.length >= 1 && consumer.checks.length > before);
        assert.equal(sample.checks[0]!.verified, true, sample.checks[0]!.reason ?? '');
        // A strong key changed to a weak one is warned of too; a UUID is not.
        const patch = (signing_key: string) =>
          t.app.inject({
            method: 'PATCH',
            url: `${SUBSCRIPTIONS}/${created.json().id}`,
            headers: bearer(practice.client.token),
            payload: { signing_key },
          });
        assert.equal((await patch(randomUUID())).json().warnings, undefined);
        const weak = await patch('passwordpassword');
        assert.equal(weak.statusCode, 200, weak.body);
        assert.match(weak.json().warnings[0], /signing_key is guessable/);
      } finally {
        await sample.close();
      }
    });

    it("after a rotation, Eka's header carries both keys, the new one last, which a dict-reading consumer checks", async () => {
      const rotating = { '/rotating': randomUUID() };
      const second = await startEkaConsumer(rotating);
      try {
        const id = await subscribe(`${second.url}/rotating`, randomUUID(), ['appointment.created']);
        const patched = await t.app.inject({
          method: 'PATCH',
          url: `${SUBSCRIPTIONS}/${id}`,
          headers: bearer(practice.client.token),
          payload: { signing_key: rotating['/rotating'] },
        });
        assert.equal(patched.statusCode, 200, patched.body);
        const before = consumer.checks.length;
        await book(t, practice);
        await t.ctx.jobs.runDue();
        await until(() => second.checks.length >= 1 && consumer.checks.length > before);
        const [check] = second.checks;
        assert.equal(check!.verified, true, check!.reason ?? '');
        assert.equal(check!.header!.split(',').length, 3);
      } finally {
        await second.close();
      }
    });
  });

  describe('errors', () => {
    it('refuses text keys under 8 characters, with spaces or control characters, and malformed whsec_ keys, naming signing_key', async () => {
      for (const signing_key of ['secret7', 'has spaces in the key', 'line\nbreak-0123456789', 'whsec_short', 'x'.repeat(201)]) {
        const response = await t.app.inject({
          method: 'POST',
          url: SUBSCRIPTIONS,
          headers: bearer(practice.client.token),
          payload: { endpoint: `${receiver.url}/${randomUUID()}`, signing_key },
        });
        assert.equal(response.statusCode, 400, signing_key);
        assert.equal(response.json().error.code, 'INVALID_REQUEST');
        assert.match(response.json().error.message, /signing_key/);
      }
      const patched = await t.app.inject({
        method: 'PATCH',
        url: `${SUBSCRIPTIONS}/${subscriptions.reviews}`,
        headers: bearer(practice.client.token),
        payload: { signing_key: 'short' },
      });
      assert.equal(patched.statusCode, 400);
      assert.match(patched.json().error.message, /signing_key/);
    });

    it('answers the consumer’s 403 by retrying, and records it', async () => {
      const id = await subscribe(`${consumer.url}/unknown-key`, randomUUID(), ['appointment.created']);
      await book(t, practice);
      await t.ctx.jobs.runDue();
      await until(async () => (await deliveries(id)).some((delivery) => delivery.status === 'failed'));
      const [delivery] = await deliveries(id);
      assert.equal(delivery!.last_status_code, 403);
      assert.equal(delivery!.attempts, 2);
    });
  });

  describe('security', () => {
    it('stores a text key encrypted, and shows it only on creation', async () => {
      const rows = await t.ctx.storage.db.selectFrom('webhook_subscriptions').select(['id', 'signing_key']).execute();
      for (const row of rows) for (const key of Object.values(keys)) assert.ok(!row.signing_key.includes(key));
      const list = await t.app.inject({ method: 'GET', url: SUBSCRIPTIONS, headers: bearer(practice.client.token) });
      for (const key of Object.values(keys)) assert.ok(!list.body.includes(key));
    });

    it("sends a review request in Eka's name only to its own business's subscriptions", async () => {
      const other = await createPractice(t);
      const otherKey = randomUUID();
      const otherConsumer = await startEkaConsumer({ '/other': otherKey });
      try {
        const response = await t.app.inject({
          method: 'POST',
          url: SUBSCRIPTIONS,
          headers: bearer(other.client.token),
          payload: { endpoint: `${otherConsumer.url}/other`, signing_key: otherKey, event_names: ['google_review.request'] },
        });
        assert.equal(response.statusCode, 201, response.body);
        const id = await book(t, practice);
        const seen = (await deliver(consumer.checks.length + 1)).length;
        assert.equal((await request(t, practice.client.token, 'POST', `/dr/v1/appointment/${id}/complete`)).statusCode, 200);
        await deliver(seen + 3);
        await t.ctx.jobs.runDue();
        assert.equal(otherConsumer.checks.length, 0);
      } finally {
        await otherConsumer.close();
      }
    });
  });
});
