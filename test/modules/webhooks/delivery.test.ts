import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { retryJob } from '../../../src/jobs/queue-repo.ts';
import { AttemptLoads } from '../../../src/modules/webhooks/delivery.ts';
import { bearer, createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';
import { recordReviewEvent, startReceiver, type Answer, type Receiver } from './support.ts';

const BASE = '/notification/v1/connect/webhook/subscriptions';

describe(`webhook delivery (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  before(async () => {
    // Retries fall due at once, so runDue() plays out a whole schedule.
    t = await createTestApp({ env: { CPS_WEBHOOK_RETRY_SCHEDULE: '0,0' } });
    client = await createTestClient(t.ctx, { scopes: ['webhook:admin'] });
  });
  after(() => t.close());

  async function subscribe(receiver: Receiver, who: TestClient = client, extra: Record<string, unknown> = {}) {
    const response = await t.app.inject({
      method: 'POST',
      url: BASE,
      headers: bearer(who.token),
      payload: { endpoint: `${receiver.url}/${randomBytes(4).toString('hex')}`, ...extra },
    });
    assert.equal(response.statusCode, 201, response.body);
    return response.json() as { id: string; signing_key: string };
  }
  const deliveries = async (id: string, who: TestClient = client, page = 0) => {
    const response = await t.app.inject({ method: 'GET', url: `${BASE}/${id}/deliveries?page_no=${page}`, headers: bearer(who.token) });
    assert.equal(response.statusCode, 200, response.body);
    return response.json().data as Array<Record<string, unknown>>;
  };
  const storedPayload = async (eventId: string) =>
    (await t.ctx.storage.db.selectFrom('events').select('payload').where('id', '=', eventId).executeTakeFirstOrThrow()).payload;

  describe('happy', () => {
    it('delivers the stored body, signed the Standard Webhooks way', async () => {
      const receiver = await startReceiver();
      const sub = await subscribe(receiver);
      const eventId = await recordReviewEvent(t.ctx.storage, client.businessId);
      await t.ctx.jobs.runDue();
      await receiver.close();
      assert.equal(receiver.received.length, 1);
      const [got] = receiver.received;
      assert.equal(got!.headers['content-type'], 'application/json');
      assert.equal(got!.headers['webhook-id'], eventId);
      assert.ok(Math.abs(Number(got!.headers['webhook-timestamp']) - Date.now() / 1000) < 10);
      assert.equal(got!.body, await storedPayload(eventId));
      const body = new Webhook(sub.signing_key).verify(got!.body, got!.headers as Record<string, string>) as Record<string, unknown>;
      assert.deepEqual(Object.keys(body).sort(), ['business_id', 'client_id', 'data', 'event', 'event_time', 'timestamp']);
      assert.equal(body.event, 'external_review.request');
      const list = await deliveries(sub.id);
      assert.deepEqual(list, [
        {
          event_id: eventId,
          event: 'external_review.request',
          status: 'succeeded',
          attempts: 1,
          last_status_code: 200,
          last_error: null,
          next_attempt_at: null,
        },
      ]);
    });

    it('retries a failing receiver with the same webhook-id and body until it succeeds', async () => {
      const receiver = await startReceiver((_d, nth) =>
        nth < 3 ? { status: nth === 1 ? 500 : 302, headers: { location: '/elsewhere' } } : { status: 202 },
      );
      const sub = await subscribe(receiver);
      const eventId = await recordReviewEvent(t.ctx.storage, client.businessId);
      await t.ctx.jobs.runDue();
      await receiver.close();
      assert.equal(receiver.received.length, 3);
      const payload = await storedPayload(eventId);
      for (const got of receiver.received) {
        assert.equal(got.headers['webhook-id'], eventId);
        assert.equal(got.body, payload);
        new Webhook(sub.signing_key).verify(got.body, got.headers as Record<string, string>);
      }
      const [delivery] = await deliveries(sub.id);
      assert.equal(delivery!.status, 'succeeded');
      assert.equal(delivery!.attempts, 3);
      assert.equal(delivery!.last_status_code, 202);
    });

    it('leaves a dead letter failed after the schedule, and a manual retry delivers it', async () => {
      let answer: Answer = { status: 503 };
      const receiver = await startReceiver(() => answer);
      const sub = await subscribe(receiver);
      const eventId = await recordReviewEvent(t.ctx.storage, client.businessId);
      await t.ctx.jobs.runDue();
      assert.equal(receiver.received.length, 3, 'one attempt plus one per delay');
      let [delivery] = await deliveries(sub.id);
      assert.deepEqual(delivery, {
        event_id: eventId,
        event: 'external_review.request',
        status: 'failed',
        attempts: 3,
        last_status_code: 503,
        last_error: 'HTTP 503',
        next_attempt_at: null,
      });

      answer = { status: 200 };
      const retry = await t.app.inject({ method: 'POST', url: `${BASE}/${sub.id}/deliveries/${eventId}/retry`, headers: bearer(client.token) });
      assert.equal(retry.statusCode, 202);
      [delivery] = await deliveries(sub.id);
      assert.equal(delivery!.status, 'pending');
      assert.equal(typeof delivery!.next_attempt_at, 'number');
      await t.ctx.jobs.runDue();
      await receiver.close();
      [delivery] = await deliveries(sub.id);
      assert.equal(delivery!.status, 'succeeded');
      assert.equal(delivery!.attempts, 4);
      assert.equal(receiver.received.at(-1)!.headers['webhook-id'], eventId);
    });

    it('waits for Retry-After when it is longer than the scheduled delay', async () => {
      const receiver = await startReceiver(() => ({ status: 429, headers: { 'retry-after': '120' } }));
      const sub = await subscribe(receiver);
      await recordReviewEvent(t.ctx.storage, client.businessId);
      await t.ctx.jobs.runDue();
      await receiver.close();
      assert.equal(receiver.received.length, 1);
      const [delivery] = await deliveries(sub.id);
      assert.equal(delivery!.status, 'pending');
      assert.equal(delivery!.last_status_code, 429);
      const wait = (delivery!.next_attempt_at as number) - Date.now() / 1000;
      assert.ok(wait > 100 && wait <= 121, `next attempt in ${wait} s`);
      // The queue decided the time once; the delivery row records that same decision.
      const row = await t.ctx.storage.db
        .selectFrom('webhook_deliveries')
        .select(['next_attempt_at', 'job_id'])
        .where('subscription_id', '=', sub.id)
        .executeTakeFirstOrThrow();
      const job = await t.ctx.storage.db.selectFrom('jobs').select(['due_at', 'status']).where('id', '=', row.job_id!).executeTakeFirstOrThrow();
      assert.equal(job.status, 'pending');
      assert.equal(row.next_attempt_at, job.due_at);
      assert.equal(delivery!.next_attempt_at, Math.ceil(job.due_at / 1000));
    });

    it('disables the subscription on 410 Gone', async () => {
      const receiver = await startReceiver(() => ({ status: 410 }));
      const sub = await subscribe(receiver);
      await recordReviewEvent(t.ctx.storage, client.businessId);
      await t.ctx.jobs.runDue();
      assert.equal(receiver.received.length, 1);
      const [delivery] = await deliveries(sub.id);
      assert.equal(delivery!.status, 'failed');
      assert.equal(delivery!.last_status_code, 410);
      const listed = (await t.app.inject({ method: 'GET', url: BASE, headers: bearer(client.token) })).json().data;
      assert.equal(listed.find((s: { id: string }) => s.id === sub.id).status, 'disabled');
      // A disabled subscription gets no new deliveries.
      await recordReviewEvent(t.ctx.storage, client.businessId);
      await t.ctx.jobs.runDue();
      await receiver.close();
      assert.equal(receiver.received.length, 1);
      assert.equal((await deliveries(sub.id)).length, 1);
    });

    it('signs with both keys for 24 h after a rotation', async () => {
      const receiver = await startReceiver();
      const sub = await subscribe(receiver);
      const newKey = `whsec_${randomBytes(32).toString('base64')}`;
      const patched = await t.app.inject({
        method: 'PATCH',
        url: `${BASE}/${sub.id}`,
        headers: bearer(client.token),
        payload: { signing_key: newKey },
      });
      assert.equal(patched.statusCode, 200);
      await recordReviewEvent(t.ctx.storage, client.businessId);
      await t.ctx.jobs.runDue();
      const rotated = receiver.received.at(-1)!;
      assert.equal(String(rotated.headers['webhook-signature']).split(' ').length, 2);
      for (const key of [sub.signing_key, newKey]) new Webhook(key).verify(rotated.body, rotated.headers as Record<string, string>);
      // After the overlap only the new key signs.
      await t.ctx.storage.db
        .updateTable('webhook_subscriptions')
        .set({ previous_key_expires_at: Date.now() - 1 })
        .where('id', '=', sub.id)
        .execute();
      await recordReviewEvent(t.ctx.storage, client.businessId);
      await t.ctx.jobs.runDue();
      await receiver.close();
      const later = receiver.received.at(-1)!;
      assert.equal(String(later.headers['webhook-signature']).split(' ').length, 1);
      new Webhook(newKey).verify(later.body, later.headers as Record<string, string>);
      assert.throws(() => new Webhook(sub.signing_key).verify(later.body, later.headers as Record<string, string>));
    });

    it('records each of many successes finishing together once, with its own status code', async () => {
      // Deliveries that succeed together are recorded by shared statements (one per status code).
      const answered = new Map<string, number>();
      let n = 0;
      const receiver = await startReceiver((delivery) => {
        const status = n++ % 2 === 0 ? 200 : 204;
        answered.set(String(delivery.headers['webhook-id']), status);
        return { status };
      });
      const sub = await subscribe(receiver);
      for (let i = 0; i < 30; i++) await recordReviewEvent(t.ctx.storage, client.businessId, i);
      await t.ctx.jobs.runDue();
      await receiver.close();
      assert.equal(receiver.received.length, 30);
      const list = await deliveries(sub.id);
      assert.equal(list.length, 30);
      for (const delivery of list) {
        assert.deepEqual(delivery, {
          event_id: delivery.event_id,
          event: 'external_review.request',
          status: 'succeeded',
          attempts: 1,
          last_status_code: answered.get(String(delivery.event_id)),
          last_error: null,
          next_attempt_at: null,
        });
      }
      assert.deepEqual(new Set(answered.values()), new Set([200, 204]));
    });

    it('attempts that start together each send their own delivery, to its endpoint, signed with its key', async () => {
      // One claim's attempts read their deliveries with one shared statement.
      const receivers = [await startReceiver(), await startReceiver(), await startReceiver()];
      const subs = [];
      for (const receiver of receivers) subs.push(await subscribe(receiver));
      const ids = new Set<string>();
      for (let i = 0; i < 10; i++) ids.add(await recordReviewEvent(t.ctx.storage, client.businessId, i));
      await t.ctx.jobs.runDue();
      for (const receiver of receivers) await receiver.close();
      for (const [i, receiver] of receivers.entries()) {
        assert.deepEqual(new Set(receiver.received.map((d) => String(d.headers['webhook-id']))), ids);
        assert.equal(receiver.received.length, 10);
        for (const got of receiver.received) {
          assert.equal(got.body, await storedPayload(String(got.headers['webhook-id'])));
          new Webhook(subs[i]!.signing_key).verify(got.body, got.headers as Record<string, string>);
        }
        assert.ok((await deliveries(subs[i]!.id)).every((delivery) => delivery.status === 'succeeded' && delivery.attempts === 1));
      }
    });

    it('reads the deliveries of attempts started together with one statement, and none of another business', async () => {
      const receiver = await startReceiver();
      const sub = await subscribe(receiver);
      for (let i = 0; i < 3; i++) await recordReviewEvent(t.ctx.storage, client.businessId, i);
      await t.ctx.jobs.runDue();
      await receiver.close();
      const rows = await t.ctx.storage.db.selectFrom('webhook_deliveries').select(['id', 'event_id']).where('subscription_id', '=', sub.id).execute();
      let statements = 0;
      const counted = t.ctx.storage.db.withPlugin({
        transformQuery: (args) => {
          statements++;
          return args.node;
        },
        transformResult: async (args) => args.result,
      });
      const loads = new AttemptLoads(counted);
      const other = await createTestClient(t.ctx);
      const [a, b, c, foreign] = await Promise.all([
        ...rows.map((row) => loads.load(client.businessId, row.id)),
        loads.load(other.businessId, rows[0]!.id),
      ]);
      assert.equal(statements, 1);
      assert.deepEqual(
        [a, b, c].map((row) => [row?.id, row?.event_id, row?.subscription_id, row?.payload === undefined]),
        rows.map((row) => [row.id, row.event_id, sub.id, false]),
      );
      assert.equal(foreign, undefined, "another business's delivery reads as gone");
      assert.equal(await loads.load(client.businessId, 'whd_unknown'), undefined);
      assert.equal(statements, 2);
    });

    it('lists deliveries newest first, 50 a page', async () => {
      const receiver = await startReceiver();
      const sub = await subscribe(receiver);
      const ids: string[] = [];
      for (let i = 0; i < 52; i++) ids.push(await recordReviewEvent(t.ctx.storage, client.businessId, i));
      await t.ctx.jobs.runDue();
      await receiver.close();
      assert.equal(new Set(receiver.received.map((d) => d.headers['webhook-id'])).size, 52);
      const first = await deliveries(sub.id, client, 0);
      const second = await deliveries(sub.id, client, 1);
      assert.equal(first.length, 50);
      assert.equal(second.length, 2);
      // Newest first: by event time, ties (the same millisecond) by id.
      const events = await t.ctx.storage.db
        .selectFrom('events')
        .select(['id', 'created_at'])
        .where('id', 'in', ids)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .execute();
      assert.deepEqual(
        [...first, ...second].map((d) => d.event_id),
        events.map((e) => e.id),
      );
    });
  });

  describe('errors', () => {
    it('a deleted subscription stops its pending deliveries', async () => {
      const receiver = await startReceiver();
      const sub = await subscribe(receiver);
      await recordReviewEvent(t.ctx.storage, client.businessId);
      await t.app.inject({ method: 'DELETE', url: `${BASE}/${sub.id}`, headers: bearer(client.token) });
      await t.ctx.jobs.runDue();
      await receiver.close();
      assert.equal(receiver.received.length, 0);
    });

    it('a repeated event dispatch adds no second delivery', async () => {
      const receiver = await startReceiver();
      const sub = await subscribe(receiver);
      const eventId = await recordReviewEvent(t.ctx.storage, client.businessId);
      await t.ctx.jobs.runDue();
      const dispatch = await t.ctx.storage.db
        .selectFrom('jobs')
        .select('id')
        .where('kind', '=', 'event.dispatch')
        .where('dedupe_key', '=', eventId)
        .executeTakeFirstOrThrow();
      await retryJob(t.ctx.storage.db, dispatch.id);
      await t.ctx.jobs.runDue();
      await receiver.close();
      assert.equal(receiver.received.length, 1);
      assert.equal((await deliveries(sub.id)).length, 1);
    });

    it('404 for retrying an unknown event', async () => {
      const receiver = await startReceiver();
      const sub = await subscribe(receiver);
      await receiver.close();
      const response = await t.app.inject({ method: 'POST', url: `${BASE}/${sub.id}/deliveries/evt_unknown/retry`, headers: bearer(client.token) });
      assert.equal(response.statusCode, 404);
      assert.equal(response.json().error.code, 'NOT_FOUND');
    });
  });

  describe('security', () => {
    it("delivers only to the event's business, and hides other businesses' deliveries", async () => {
      const other = await createTestClient(t.ctx, { scopes: ['webhook:admin'] });
      const mine = await startReceiver();
      const theirs = await startReceiver();
      const mySub = await subscribe(mine);
      const theirSub = await subscribe(theirs, other);
      const eventId = await recordReviewEvent(t.ctx.storage, client.businessId);
      await t.ctx.jobs.runDue();
      await mine.close();
      await theirs.close();
      assert.equal(mine.received.length, 1);
      assert.equal(theirs.received.length, 0);
      assert.equal((await deliveries(theirSub.id, other)).length, 0);
      const peek = await t.app.inject({ method: 'GET', url: `${BASE}/${mySub.id}/deliveries`, headers: bearer(other.token) });
      assert.equal(peek.statusCode, 404);
      const retry = await t.app.inject({ method: 'POST', url: `${BASE}/${mySub.id}/deliveries/${eventId}/retry`, headers: bearer(other.token) });
      assert.equal(retry.statusCode, 404);
    });
  });
});

describe(`webhook delivery in production (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({
      env: {
        CPS_ENV: 'production',
        CPS_JWT_PRIVATE_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
        CPS_MASTER_KEY: randomBytes(32).toString('base64'),
        CPS_PUBLIC_URL: 'https://cps.test',
        CPS_WEBHOOK_RETRY_SCHEDULE: '0',
      },
    });
  });
  after(() => t.close());

  it('never connects to a hostname that resolves to 127.0.0.1', async () => {
    const client = await createTestClient(t.ctx, { scopes: ['webhook:admin'] });
    const receiver = await startReceiver();
    const created = await t.app.inject({
      method: 'POST',
      url: BASE,
      headers: bearer(client.token),
      payload: { endpoint: 'https://93.184.215.14/hook' },
    });
    assert.equal(created.statusCode, 201);
    const id = created.json().id;
    // The name now resolves to loopback, as after DNS rebinding: the connect-time check refuses it.
    await t.ctx.storage.db
      .updateTable('webhook_subscriptions')
      .set({ endpoint: `https://localhost:${receiver.port}/hook` })
      .where('id', '=', id)
      .execute();
    await recordReviewEvent(t.ctx.storage, client.businessId);
    await t.ctx.jobs.runDue();
    await receiver.close();
    assert.equal(receiver.connections(), 0);
    const [delivery] = (await t.app.inject({ method: 'GET', url: `${BASE}/${id}/deliveries`, headers: bearer(client.token) })).json().data;
    assert.equal(delivery.status, 'failed');
    assert.equal(delivery.attempts, 2);
    assert.equal(delivery.last_status_code, null);
    assert.equal(delivery.last_error, 'address not allowed');
  });
});
