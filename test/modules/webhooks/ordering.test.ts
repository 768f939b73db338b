/**
 * Per-appointment order of deliveries under concurrent changes through two app instances on one
 * database (each running its job workers), replay, and the disabling of a subscription that keeps
 * failing.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { inTransaction } from '../../../src/db/index.ts';
import { patientKey, recordEvent } from '../../../src/jobs/outbox.ts';
import { envelope } from '../../../src/events.ts';
import { bearer, createTestApp, createTestClient, DIALECT, PG_URL, type TestApp } from '../../support.ts';
import { book, createPractice, request } from '../appointments/support.ts';
import { assertEventBody, subscribe } from './event-schemas.ts';
import { reviewEvent, startReceiver, until, type Receiver } from './support.ts';

const SUBSCRIPTIONS = '/notification/v1/connect/webhook/subscriptions';
const APPOINTMENT_EVENTS = ['appointment.created', 'appointment.updated', 'appointment.statuschange'];

describe(`webhook ordering under concurrent changes, two app instances on PostgreSQL (${DIALECT})`, () => {
  const env = { CPS_WEBHOOK_RETRY_SCHEDULE: '0,0,0,0,0,0,0,0' };
  let first: TestApp;
  let second: TestApp;
  before(async () => {
    first = await createTestApp({ env });
    // SQLite is one process's database (its writers would wait on each other's file lock): one instance there.
    second = PG_URL ? await createTestApp({ env, database: first.database }) : first;
    await first.ctx.jobs.start();
    await second.ctx.jobs.start();
  });
  after(async () => {
    if (second !== first) await second.close();
    await first.close();
  });

  it('delivers each appointment’s events in sequence, retries included, while appointments flow in parallel', async () => {
    const practice = await createPractice(first);
    const accepted = new Map<string, number>();
    const violations: string[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    let failures = 0;
    const receiver = await startReceiver((delivery, nth) => {
      const body = JSON.parse(delivery.body) as { sequence: number; data: { appointment_id: string } };
      const id = body.data.appointment_id;
      const last = accepted.get(id) ?? 0;
      if (body.sequence > last + 1) violations.push(`${id}: ${body.sequence} arrived after ${last}`);
      // Every fourth event fails its first attempt: its successors must wait for the retry.
      if (nth === 1 && body.sequence % 4 === 2) {
        failures++;
        return { status: 503 };
      }
      accepted.set(id, Math.max(last, body.sequence));
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      setTimeout(() => inFlight--, 15);
      return { status: 200, delayMs: 15 };
    });
    try {
      await subscribe(first, practice.client.token, receiver.url, APPOINTMENT_EVENTS);
      const appointments: string[] = [];
      for (let i = 0; i < 6; i++) appointments.push(await book(first, practice));
      // Six changes per appointment, all at once, half through each instance.
      const changes = appointments.flatMap((id) =>
        Array.from({ length: 6 }, (_, n) => {
          const app = n % 2 === 0 ? first : second;
          return n === 5
            ? request(app, practice.client.token, 'PUT', `/dr/v1/appointment/${id}/cancel`)
            : request(app, practice.client.token, 'PATCH', `/dr/v1/appointment/${id}`, { notes: `change ${n}` });
        }),
      );
      for (const response of await Promise.all(changes)) assert.equal(response.statusCode, 200, response.body);
      // 1 created + 5 updates + 1 cancel per appointment.
      await until(() => appointments.every((id) => accepted.get(id) === 7), 25);
      assert.deepEqual(violations, []);
      assert.ok(failures > 0, 'some first attempts failed');
      assert.ok(maxInFlight > 1, 'deliveries of different appointments overlapped');
      for (const delivery of receiver.received) assertEventBody(JSON.parse(delivery.body));
    } finally {
      await receiver.close();
    }
  });
});

describe(`webhook replay and disabling (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { CPS_WEBHOOK_RETRY_SCHEDULE: '0,0,0', CPS_WEBHOOK_DISABLE_AFTER_SECONDS: '1' } });
  });
  after(async () => t.close());

  async function recordReviews(businessId: string, count: number): Promise<void> {
    await inTransaction(t.ctx.storage.db, async (trx) => {
      for (let i = 0; i < count; i++) await recordEvent(trx, { businessId, type: 'external_review.request', payload: reviewEvent(businessId, i) });
    });
  }

  const replay = (token: string, id: string, payload: unknown) =>
    t.app.inject({ method: 'POST', url: `${SUBSCRIPTIONS}/${id}/replay`, headers: bearer(token), payload: payload as object });

  it('queues a window’s events again, a page at a time, also to a subscription that never got them', async () => {
    const client = await createTestClient(t.ctx);
    const receiver = await startReceiver();
    const later = await startReceiver();
    try {
      const { id } = await subscribe(t, client.token, receiver.url, ['external_review.request']);
      const since = Math.floor(Date.now() / 1000) - 1;
      await recordReviews(client.businessId, 205);
      await t.ctx.jobs.runDue();
      assert.equal(receiver.received.length, 205);

      const page1 = await replay(client.token, id, { since });
      assert.equal(page1.statusCode, 202, page1.body);
      assert.equal(page1.json().queued, 200);
      assert.ok(page1.json().next_token);
      const changed = await replay(client.token, id, { since: since + 1, page_token: page1.json().next_token });
      assert.equal(changed.statusCode, 400, 'a token continues only its own replay');
      const page2 = await replay(client.token, id, { since, page_token: page1.json().next_token });
      assert.deepEqual([page2.json().queued, page2.json().next_token], [5, null]);
      await t.ctx.jobs.runDue();
      assert.equal(receiver.received.length, 410);
      assert.equal(new Set(receiver.received.map((d) => d.headers['webhook-id'])).size, 205, 'the same event ids again');

      const other = await subscribe(t, client.token, later.url, ['external_review.request']);
      const backfill = await replay(client.token, other.id, { since, until: Math.floor(Date.now() / 1000) + 1 });
      assert.equal(backfill.json().queued, 200);
      await t.ctx.jobs.runDue();
      assert.equal(later.received.length, 200);

      assert.equal((await replay(client.token, id, { since, event_names: ['case.created'] })).statusCode, 400);
      assert.equal((await replay(client.token, id, { since, until: since })).statusCode, 400);
      assert.equal((await replay(client.token, id, { since, page_token: 'bogus' })).statusCode, 400);
      assert.equal((await replay(client.token, id, {})).statusCode, 400);
      const disabled = await t.app.inject({
        method: 'PATCH',
        url: `${SUBSCRIPTIONS}/${other.id}`,
        headers: bearer(client.token),
        payload: { status: 'disabled' },
      });
      assert.equal(disabled.statusCode, 200);
      assert.equal((await replay(client.token, other.id, { since })).statusCode, 409);
    } finally {
      await receiver.close();
      await later.close();
    }
  });

  it('limits replays per subscription (429 with Retry-After)', async () => {
    const client = await createTestClient(t.ctx);
    const { id } = await subscribe(t, client.token, 'http://127.0.0.1:9/never', ['external_review.request']);
    const future = Math.floor(Date.now() / 1000) + 3600;
    const answers = [];
    for (let i = 0; i < 11; i++) answers.push(await replay(client.token, id, { since: future, until: future + 10 }));
    assert.deepEqual(
      answers.slice(0, 10).map((answer) => answer.statusCode),
      Array(10).fill(202),
    );
    assert.equal(answers[10]!.statusCode, 429);
    assert.equal(answers[10]!.json().error.code, 'RATE_LIMITED');
    assert.ok(Number(answers[10]!.headers['retry-after']) >= 1);
  });

  it('disables a subscription whose attempts keep failing, with an event and a metric; a success ends a run of failures', async () => {
    const client = await createTestClient(t.ctx);
    let flaky = 0;
    const failing: Receiver = await startReceiver(() => ({ status: 500 }));
    const watcher: Receiver = await startReceiver();
    const recovering: Receiver = await startReceiver(() => ({ status: flaky++ === 0 ? 500 : 200 }));
    try {
      const bad = await subscribe(t, client.token, failing.url, ['external_review.request']);
      const good = await subscribe(t, client.token, recovering.url, ['external_review.request']);
      await subscribe(t, client.token, watcher.url, ['webhook.subscription.disabled']);
      const failingSince = async (id: string) =>
        await t.ctx.storage.db.selectFrom('webhook_subscriptions').select(['failing_since', 'status']).where('id', '=', id).executeTakeFirstOrThrow();

      await recordReviews(client.businessId, 1);
      await t.ctx.jobs.runDue();
      assert.equal(failing.received.length, 4, 'one attempt and three retries');
      assert.notEqual((await failingSince(bad.id)).failing_since, null);
      assert.equal((await failingSince(bad.id)).status, 'active', 'not failing for long enough yet');
      assert.equal((await failingSince(good.id)).failing_since, null, 'the success after a failure ends the run');

      await sleep(1100);
      await recordReviews(client.businessId, 1);
      await t.ctx.jobs.runDue();
      assert.equal(failing.received.length, 5, 'disabled at the first failure past the limit');
      assert.equal((await failingSince(bad.id)).status, 'disabled');
      const listed = (await t.app.inject({ method: 'GET', url: SUBSCRIPTIONS, headers: bearer(client.token) })).json().data;
      assert.equal(listed.find((s: { id: string }) => s.id === bad.id).status, 'disabled');

      assert.equal(watcher.received.length, 1);
      const body = JSON.parse(watcher.received[0]!.body);
      assertEventBody(body);
      assert.equal(body.data.subscription_id, bad.id);
      assert.equal(body.data.endpoint, failing.url);
      assert.match(body.data.reason, /failed/);
      const metric = await t.ctx.metrics.getSingleMetric('cps_webhook_subscriptions_disabled_total')!.get();
      assert.equal(metric.values.find((value) => value.labels.reason === 'failing')?.value, 1);

      const enabled = await t.app.inject({
        method: 'PATCH',
        url: `${SUBSCRIPTIONS}/${bad.id}`,
        headers: bearer(client.token),
        payload: { status: 'active' },
      });
      assert.equal(enabled.statusCode, 200);
      assert.deepEqual(await failingSince(bad.id), { failing_since: null, status: 'active' });
    } finally {
      await failing.close();
      await watcher.close();
      await recovering.close();
    }
  });
});

describe(`webhook replay after retention (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    // Jobs are kept longer than deliveries, as an operator may set them.
    t = await createTestApp({ env: { CPS_RETENTION_JOBS_DAYS: '60', CPS_RETENTION_FAILED_JOBS_DAYS: '60', CPS_RETENTION_EVENTS_DAYS: '30' } });
  });
  after(async () => t.close());

  it('sends again an event whose delivery retention pruned while its job stayed', async () => {
    const client = await createTestClient(t.ctx);
    const receiver = await startReceiver();
    try {
      const { id } = await subscribe(t, client.token, receiver.url, ['case.deleted']);
      const since = Math.floor(Date.now() / 1000) - 1;
      const now = Date.now();
      // The last event of its key: retention keeps it (the key's next is numbered after it).
      await inTransaction(t.ctx.storage.db, (trx) =>
        recordEvent(trx, {
          businessId: client.businessId,
          orderingKey: patientKey('pt-kept'),
          type: 'case.deleted',
          payload: {
            service: 'case',
            ...envelope('case.deleted', { businessId: client.businessId }, now),
            data: { case_id: 'case-1', patient_id: 'pt-kept', status: 'D', updated_at: Math.floor(now / 1000) },
          },
        }),
      );
      await t.ctx.jobs.runDue();
      assert.equal(receiver.received.length, 1);
      // 40 days on: the delivery and its attempts are past CPS_RETENTION_EVENTS_DAYS, its job is not.
      await t.modules.retention.service.run(undefined, now + 40 * 86_400_000);
      assert.equal((await t.ctx.storage.db.selectFrom('webhook_deliveries').selectAll().execute()).length, 0);
      assert.equal((await t.ctx.storage.db.selectFrom('events').selectAll().execute()).length, 1);

      const replayed = await t.app.inject({
        method: 'POST',
        url: `${SUBSCRIPTIONS}/${id}/replay`,
        headers: bearer(client.token),
        payload: { since },
      });
      assert.equal(replayed.json().queued, 1, replayed.body);
      await t.ctx.jobs.runDue();
      const deliveries = await t.app.inject({ method: 'GET', url: `${SUBSCRIPTIONS}/${id}/deliveries`, headers: bearer(client.token) });
      assert.deepEqual(
        deliveries.json().data.map((d: { status: string }) => d.status),
        ['succeeded'],
        'the replayed delivery was given the old job, which never ran again',
      );
      assert.equal(receiver.received.length, 2);
    } finally {
      await receiver.close();
    }
  });
});
