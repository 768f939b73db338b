/**
 * Lifecycle events: one per change, in the change's transaction, each body valid against its schema
 * (src/events.ts) and against Eka's post_webhook.yaml where Eka has the event; numbered per
 * appointment and per patient's cases; inspected by GET .../events/{id}.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { bearer, createTestClient, createTestApp, DIALECT, type TestApp } from '../../support.ts';
import { book, createPractice, request, type Practice } from '../appointments/support.ts';
import { casesApi, newCase } from '../cases/support.ts';
import { assertEventBody, subscribe } from './event-schemas.ts';
import { startReceiver, type Receiver } from './support.ts';

const SUBSCRIPTIONS = '/notification/v1/connect/webhook/subscriptions';
const EVENTS_URL = '/notification/v1/connect/webhook/events';

type Json = Record<string, any>;

async function stored(
  t: TestApp,
  businessId: string,
): Promise<Array<{ id: string; type: string; body: Json; key: string | null; sequence: number | null }>> {
  const rows = await t.ctx.storage.db
    .selectFrom('events')
    .selectAll()
    .where('business_id', '=', businessId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((row) => ({
    id: row.id,
    type: row.type,
    body: JSON.parse(row.payload) as Json,
    key: row.ordering_key,
    sequence: row.sequence === null ? null : Number(row.sequence),
  }));
}

describe(`lifecycle events (${DIALECT})`, () => {
  let t: TestApp;
  let practice: Practice;
  let receiver: Receiver;
  let subscription: { id: string; key: string };
  before(async () => {
    t = await createTestApp();
    practice = await createPractice(t);
    receiver = await startReceiver();
    subscription = await subscribe(t, practice.client.token, receiver.url);
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });

  it('records one event per appointment change, numbered per appointment, valid against its schema and Eka’s', async () => {
    const token = practice.client.token;
    const id = await book(t, practice, { partner_appointment_id: 'pa-1', partner_meta: { visit: 'v1' } });
    const other = await book(t, practice);
    let response = await request(t, token, 'PATCH', `/dr/v1/appointment/${id}`, { start_time: 1_900_000_600, end_time: 1_900_001_200, notes: 'x' });
    assert.equal(response.statusCode, 200, response.body);
    // The same values again alter nothing: no event.
    response = await request(t, token, 'PATCH', `/dr/v1/appointment/${id}`, { notes: 'x' });
    assert.equal(response.statusCode, 200, response.body);
    assert.equal((await request(t, token, 'POST', `/dr/v1/appointment/${id}/change-status`, { status: 'NS' })).statusCode, 200);
    assert.equal((await request(t, token, 'POST', `/dr/v1/appointment/${id}/complete`)).statusCode, 200);
    assert.equal((await request(t, token, 'POST', `/dr/v1/appointment/${id}/complete`)).statusCode, 200);
    assert.equal((await request(t, token, 'PUT', `/dr/v1/appointment/${other}/cancel`)).statusCode, 200);
    assert.equal((await request(t, token, 'PUT', `/dr/v1/appointment/${other}/cancel`)).statusCode, 200);

    const events = await stored(t, practice.client.businessId);
    const of = (appointment: string) => events.filter((event) => event.key === `appointment:${appointment}`);
    assert.deepEqual(
      of(id).map((event) => [event.type, event.sequence]),
      [
        ['appointment.created', 1],
        ['appointment.updated', 2],
        ['appointment.statuschange', 3],
        ['appointment.statuschange', 4],
      ],
    );
    // The review request keeps interface 6's body: no sequence, and not held back behind the appointment's events.
    const review = events.find((event) => event.type === 'external_review.request');
    assert.deepEqual([review?.key, review?.sequence, review?.body.data.appointment_id], [null, null, id]);
    assert.deepEqual(
      of(other).map((event) => [event.type, event.sequence]),
      [
        ['appointment.created', 1],
        ['appointment.statuschange', 2],
      ],
    );
    for (const event of events) {
      assertEventBody(event.body);
      assert.equal(event.body.sequence, event.sequence ?? undefined);
    }
    const [created, updated, noShow, completed] = of(id).map((event) => event.body);
    assert.equal(created!.service, 'appointment');
    assert.equal(created!.client_id, practice.client.clientId);
    assert.equal(created!.data.partner_appointment_id, 'pa-1');
    assert.equal(created!.data.partner_clinic_id, practice.partnerClinicId);
    assert.deepEqual(created!.data.partner_meta, { visit: 'v1' });
    assert.equal(created!.data.status, 'BK');
    assert.deepEqual(updated!.data.changed, ['start_time', 'end_time', 'notes']);
    assert.equal(updated!.data.start_time, 1_900_000_600);
    assert.deepEqual([noShow!.data.transition, noShow!.data.previous_status, noShow!.data.status], ['no_show', 'BK', 'NS']);
    assert.deepEqual([completed!.data.transition, completed!.data.previous_status, completed!.data.status], ['completed', 'NS', 'CM']);
    assert.equal(JSON.stringify(created).includes('mobile'), false, 'no patient contact detail');
  });

  it('records case events with no more than the listing shows, numbered per patient', async () => {
    const cases = casesApi(t.app, practice.client.token, 'pt-events-1');
    assert.equal((await cases.create(newCase('c1', { partner_meta: { ward: 'a' } }))).statusCode, 201);
    assert.equal((await cases.update('c1', { display_name: 'Renamed' })).statusCode, 204);
    assert.equal((await cases.create(newCase('c2'))).statusCode, 201);
    assert.equal((await cases.remove('c1')).statusCode, 204);
    assert.equal((await cases.remove('c1')).statusCode, 404);
    const events = (await stored(t, practice.client.businessId)).filter((event) => event.type.startsWith('case.'));
    assert.deepEqual(
      events.map((event) => [event.type, event.body.data.case_id, event.sequence]),
      [
        ['case.created', 'c1', 1],
        ['case.updated', 'c1', 2],
        ['case.created', 'c2', 3],
        ['case.deleted', 'c1', 4],
      ],
    );
    for (const event of events) assertEventBody(event.body);
    const listed = (await cases.get('c2')).json();
    assert.deepEqual(events[2]!.body.data.item, listed.item);
    assert.deepEqual(events[1]!.body.data.changed, ['display_name']);
    assert.equal('item' in events[3]!.body.data, false);
  });

  it('delivers every event signed, and shows one event with its deliveries', async () => {
    await t.ctx.jobs.runDue();
    const events = await stored(t, practice.client.businessId);
    assert.equal(receiver.received.length, events.length);
    const verifier = new Webhook(subscription.key);
    for (const delivery of receiver.received) {
      const body = verifier.verify(delivery.body, delivery.headers as Record<string, string>) as Json;
      assertEventBody(body);
    }
    const one = events[0]!;
    const response = await t.app.inject({ method: 'GET', url: `${EVENTS_URL}/${one.id}`, headers: bearer(practice.client.token) });
    assert.equal(response.statusCode, 200, response.body);
    const view = response.json();
    assert.equal(view.event, one.type);
    assert.deepEqual(view.body, one.body);
    assert.equal(view.sequence, 1);
    assert.equal(view.deliveries.length, 1);
    assert.equal(view.deliveries[0].subscription_id, subscription.id);
    assert.equal(view.deliveries[0].status, 'succeeded');
    assert.equal(view.deliveries[0].attempts, 1);
    assert.equal(view.deliveries[0].last_status_code, 200);
  });

  it('filters deliveries by state, event name and time', async () => {
    const list = (query: string) =>
      t.app.inject({ method: 'GET', url: `${SUBSCRIPTIONS}/${subscription.id}/deliveries?${query}`, headers: bearer(practice.client.token) });
    const all = (await list('')).json().data as Json[];
    const created = (await list('event=appointment.created')).json().data as Json[];
    assert.equal(created.length, 2);
    assert.ok(created.every((delivery) => delivery.event === 'appointment.created'));
    const two = (await list('event=appointment.created,case.deleted')).json().data as Json[];
    assert.equal(two.length, 3);
    assert.equal((await list('status=succeeded')).json().data.length, all.length);
    assert.equal((await list('status=failed')).json().data.length, 0);
    const now = Math.floor(Date.now() / 1000);
    assert.equal((await list(`since=${now + 10}`)).json().data.length, 0);
    assert.equal((await list(`until=${now + 10}`)).json().data.length, all.length);
    assert.equal((await list('status=lost')).statusCode, 400);
    assert.match((await list('event=nope')).json().error.message, /event_names|nope/);
    assert.equal((await list(`since=${now}&until=${now - 5}`)).statusCode, 400);
  });

  it('keeps other businesses’ events and subscriptions unknown, and asks for webhook:admin', async () => {
    const stranger = await createTestClient(t.ctx);
    const [event] = await stored(t, practice.client.businessId);
    const asStranger = await t.app.inject({ method: 'GET', url: `${EVENTS_URL}/${event!.id}`, headers: bearer(stranger.token) });
    assert.equal(asStranger.statusCode, 404);
    assert.equal(asStranger.json().error.code, 'NOT_FOUND');
    const unknown = await t.app.inject({ method: 'GET', url: `${EVENTS_URL}/evt_nope`, headers: bearer(stranger.token) });
    assert.deepEqual(unknown.json(), asStranger.json());
    const replay = await t.app.inject({
      method: 'POST',
      url: `${SUBSCRIPTIONS}/${subscription.id}/replay`,
      headers: bearer(stranger.token),
      payload: { since: 0 },
    });
    assert.equal(replay.statusCode, 404);
    const narrow = await createTestClient(t.ctx, { businessId: practice.client.businessId, scopes: ['appointment:write'] });
    for (const [method, url, payload] of [
      ['GET', `${EVENTS_URL}/${event!.id}`, undefined],
      ['POST', `${SUBSCRIPTIONS}/${subscription.id}/replay`, { since: 0 }],
      ['GET', `${SUBSCRIPTIONS}/${subscription.id}/deliveries?status=failed`, undefined],
    ] as const) {
      assert.equal((await t.app.inject({ method, url, headers: bearer(narrow.token), payload })).statusCode, 403, url);
      assert.equal((await t.app.inject({ method, url, payload })).statusCode, 401, url);
    }
  });

  it('a reschedule: the old appointment’s statuschange (rescheduled, naming its successor), then the new one’s created', async () => {
    const token = practice.client.token;
    const id = await book(t, practice);
    const response = await request(t, token, 'PUT', `/dr/v1/appointment/${id}/reschedule`, { start_time: 1_900_090_000, end_time: 1_900_090_900 });
    assert.equal(response.statusCode, 200, response.body);
    const next = response.json().appointment_id as string;
    const events = await stored(t, practice.client.businessId);
    const old = events.filter((event) => event.key === `appointment:${id}`);
    assert.deepEqual(
      old.map((event) => [event.type, event.sequence, event.body.data.transition, event.body.data.status, event.body.data.next_aid]),
      [
        ['appointment.created', 1, undefined, 'BK', undefined],
        ['appointment.statuschange', 2, 'rescheduled', 'RES', next],
      ],
    );
    const created = events.filter((event) => event.key === `appointment:${next}`);
    assert.deepEqual(
      created.map((event) => [event.type, event.sequence, event.body.data.prev_aids]),
      [['appointment.created', 1, [id]]],
    );
    for (const event of [...old, ...created]) assertEventBody(event.body);
  });
});
