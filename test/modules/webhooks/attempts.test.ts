/**
 * Each attempt of a webhook delivery kept (webhook_delivery_attempts) and shown, latest 50, in order,
 * by GET .../events/{id}; pruned by age.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { bearer, createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';
import { recordReviewEvent, startReceiver, type Answer, type Receiver } from './support.ts';

const SUBSCRIPTIONS = '/notification/v1/connect/webhook/subscriptions';
const EVENTS_URL = '/notification/v1/connect/webhook/events';

type Json = Record<string, any>;

describe(`webhook delivery attempts (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  const receivers: Receiver[] = [];
  before(async () => {
    // Retries fall due at once, so runDue() plays out a whole schedule (three attempts a round).
    t = await createTestApp({ env: { CPS_WEBHOOK_RETRY_SCHEDULE: '0,0' } });
    client = await createTestClient(t.ctx, { scopes: ['webhook:admin'] });
  });
  after(async () => {
    for (const receiver of receivers) await receiver.close();
    await t.close();
  });

  async function receiver(answer?: (nth: number) => Answer): Promise<Receiver> {
    const r = await startReceiver(answer && ((_delivery, nth) => answer(nth)));
    receivers.push(r);
    return r;
  }
  async function subscribe(to: Receiver | string, who: TestClient = client): Promise<string> {
    const endpoint = typeof to === 'string' ? to : `${to.url}/${randomBytes(4).toString('hex')}`;
    const response = await t.app.inject({ method: 'POST', url: SUBSCRIPTIONS, headers: bearer(who.token), payload: { endpoint } });
    assert.equal(response.statusCode, 201, response.body);
    return response.json().id as string;
  }
  async function inspect(eventId: string, who: TestClient = client): Promise<Json> {
    const response = await t.app.inject({ method: 'GET', url: `${EVENTS_URL}/${eventId}`, headers: bearer(who.token) });
    assert.equal(response.statusCode, 200, response.body);
    return response.json();
  }
  async function unsubscribe(id: string): Promise<void> {
    const response = await t.app.inject({ method: 'DELETE', url: `${SUBSCRIPTIONS}/${id}`, headers: bearer(client.token) });
    assert.equal(response.statusCode, 200, response.body);
  }
  const outcomes = (history: Json[]) => history.map(({ attempt, status_code, error }) => ({ attempt, status_code, error }));

  it('records each attempt of a delivery that fails, then succeeds, and shows them in order', async () => {
    const failing = await receiver((nth) => (nth === 1 ? { status: 503 } : nth === 2 ? { status: 500, delayMs: 40 } : { status: 200 }));
    const subscription = await subscribe(failing);
    const eventId = await recordReviewEvent(t.ctx.storage, client.businessId);
    const started = Date.now();
    await t.ctx.jobs.runDue();
    assert.equal(failing.received.length, 3);

    const view = await inspect(eventId);
    assert.equal(view.deliveries.length, 1);
    const [delivery] = view.deliveries;
    assert.equal(delivery.subscription_id, subscription);
    assert.equal(delivery.status, 'succeeded');
    assert.equal(delivery.attempts, 3);
    assert.deepEqual(outcomes(delivery.attempt_history), [
      { attempt: 1, status_code: 503, error: 'HTTP 503' },
      { attempt: 2, status_code: 500, error: 'HTTP 500' },
      { attempt: 3, status_code: 200, error: null },
    ]);
    for (const [i, a] of (delivery.attempt_history as Json[]).entries()) {
      assert.ok(a.started_at >= Math.floor(started / 1000) && a.finished_at >= a.started_at, JSON.stringify(a));
      assert.ok(a.duration_ms >= 0);
      if (i > 0) assert.ok(a.started_at >= delivery.attempt_history[i - 1].finished_at);
    }
    assert.ok(delivery.attempt_history[1].duration_ms >= 40, 'the receiver took 40 ms to answer the second');

    // Stored as shown, and nothing but the outcome: no body, no header, no key.
    const rows = await t.ctx.storage.db.selectFrom('webhook_delivery_attempts').selectAll().where('business_id', '=', client.businessId).execute();
    assert.equal(rows.length, 3);
    assert.deepEqual(Object.keys(rows[0]!).sort(), [
      'attempt',
      'business_id',
      'delivery_id',
      'duration_ms',
      'error',
      'finished_at',
      'started_at',
      'status_code',
    ]);
    await unsubscribe(subscription);
  });

  it('numbers a manual retry’s attempts after the earlier ones, and records a failure to connect without an answer', async () => {
    const closed = await startReceiver();
    await closed.close();
    const subscription = await subscribe(`${closed.url}/gone`);
    const eventId = await recordReviewEvent(t.ctx.storage, client.businessId);
    await t.ctx.jobs.runDue();
    let [delivery] = (await inspect(eventId)).deliveries;
    assert.equal(delivery.status, 'failed');
    assert.equal(delivery.attempt_history.length, 3);
    for (const a of delivery.attempt_history) {
      assert.equal(a.status_code, null);
      assert.equal(a.error, delivery.last_error);
      assert.match(a.error, /connect/);
    }

    const retry = await t.app.inject({
      method: 'POST',
      url: `${SUBSCRIPTIONS}/${subscription}/deliveries/${eventId}/retry`,
      headers: bearer(client.token),
    });
    assert.equal(retry.statusCode, 202);
    await t.ctx.jobs.runDue();
    [delivery] = (await inspect(eventId)).deliveries;
    assert.equal(delivery.attempts, 6);
    assert.deepEqual(
      delivery.attempt_history.map((a: Json) => a.attempt),
      [1, 2, 3, 4, 5, 6],
    );
    await unsubscribe(subscription);
  });

  it('keeps one attempt per delivery when many succeed together (the batched success record)', async () => {
    const ok = await receiver(() => ({ status: 204 }));
    const first = await subscribe(ok);
    const second = await subscribe(ok);
    const events = await Promise.all(Array.from({ length: 30 }, (_, n) => recordReviewEvent(t.ctx.storage, client.businessId, n)));
    await t.ctx.jobs.runDue();
    assert.equal(ok.received.length, 60);
    for (const eventId of events) {
      const view = await inspect(eventId);
      assert.deepEqual(view.deliveries.map((d: Json) => d.subscription_id).sort(), [first, second].sort());
      for (const delivery of view.deliveries) {
        assert.equal(delivery.attempts, 1);
        assert.deepEqual(outcomes(delivery.attempt_history), [{ attempt: 1, status_code: 204, error: null }]);
      }
    }
    await unsubscribe(first);
    await unsubscribe(second);
  });

  it('shows the latest 50 attempts of a delivery, oldest first', async () => {
    const ok = await receiver();
    const subscription = await subscribe(ok);
    const eventId = await recordReviewEvent(t.ctx.storage, client.businessId);
    await t.ctx.jobs.runDue();
    const row = await t.ctx.storage.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('event_id', '=', eventId)
      .where('subscription_id', '=', subscription)
      .executeTakeFirstOrThrow();
    const now = Date.now();
    await t.ctx.storage.db
      .insertInto('webhook_delivery_attempts')
      .values(
        Array.from({ length: 59 }, (_, i) => ({
          delivery_id: row.id,
          attempt: i + 2,
          business_id: client.businessId,
          started_at: now + i,
          finished_at: now + i,
          duration_ms: 0,
          status_code: 503,
          error: 'HTTP 503',
        })),
      )
      .execute();
    const [delivery] = (await inspect(eventId)).deliveries;
    assert.deepEqual(
      delivery.attempt_history.map((a: Json) => a.attempt),
      Array.from({ length: 50 }, (_, i) => i + 11),
    );
    await unsubscribe(subscription);
  });

  it('shows another business neither the event nor its attempts', async () => {
    const ok = await receiver();
    const subscription = await subscribe(ok);
    const eventId = await recordReviewEvent(t.ctx.storage, client.businessId);
    await t.ctx.jobs.runDue();
    const stranger = await createTestClient(t.ctx, { scopes: ['webhook:admin'] });
    // The stranger's own subscription and event, delivered too.
    const theirs = await subscribe(ok, stranger);
    const theirEvent = await recordReviewEvent(t.ctx.storage, stranger.businessId);
    await t.ctx.jobs.runDue();

    const asStranger = await t.app.inject({ method: 'GET', url: `${EVENTS_URL}/${eventId}`, headers: bearer(stranger.token) });
    assert.equal(asStranger.statusCode, 404);
    assert.equal(asStranger.json().error.code, 'NOT_FOUND');
    const own = await inspect(theirEvent, stranger);
    assert.deepEqual(
      own.deliveries.map((d: Json) => d.subscription_id),
      [theirs],
    );
    assert.equal(own.deliveries[0].attempt_history.length, 1);
    const mine = await inspect(eventId);
    assert.deepEqual(
      mine.deliveries.map((d: Json) => d.subscription_id),
      [subscription],
    );
    const noScope = await createTestClient(t.ctx, { businessId: client.businessId, scopes: ['search'] });
    assert.equal((await t.app.inject({ method: 'GET', url: `${EVENTS_URL}/${eventId}`, headers: bearer(noScope.token) })).statusCode, 403);
    await unsubscribe(subscription);
  });

  it('retention deletes the attempts finished before CPS_RETENTION_EVENTS_DAYS, and a deleted subscription takes its attempts', async () => {
    const db = t.ctx.storage.db;
    await db.deleteFrom('webhook_delivery_attempts').execute();
    const ok = await receiver();
    const subscription = await subscribe(ok);
    const eventId = await recordReviewEvent(t.ctx.storage, client.businessId);
    await t.ctx.jobs.runDue();
    const { id } = await db.selectFrom('webhook_deliveries').select('id').where('event_id', '=', eventId).executeTakeFirstOrThrow();
    const old = Date.now() - 400 * 86_400_000;
    await db
      .insertInto('webhook_delivery_attempts')
      .values(
        Array.from({ length: 7 }, (_, i) => ({
          delivery_id: id,
          attempt: 100 + i,
          business_id: client.businessId,
          started_at: old + i,
          finished_at: old + i,
          duration_ms: 0,
          status_code: 500,
          error: 'HTTP 500',
        })),
      )
      .execute();
    const report = await t.modules.retention.service.run();
    assert.equal(report.pruned.webhook_delivery_attempts, 7);
    assert.deepEqual(
      (await db.selectFrom('webhook_delivery_attempts').select('attempt').execute()).map((row) => Number(row.attempt)),
      [1],
    );
    // Deleting the subscription deletes its deliveries and their attempts.
    await unsubscribe(subscription);
    assert.equal((await db.selectFrom('webhook_delivery_attempts').select('attempt').execute()).length, 0);
  });
});
