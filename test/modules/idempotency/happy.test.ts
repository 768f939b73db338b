/**
 * Idempotency-Key, happy paths: a retry with the key gets the first response without a second effect, on
 * every route that accepts the key; refused and failed requests are not kept; expired keys are deleted by retention.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECT } from '../../support.ts';
import { bookingBody, createPractice, events, START, type Practice } from '../appointments/support.ts';
import { createPushTest, type PushTest } from '../push/support.ts';
import { keyed, newKey, Probe, type Response } from './support.ts';

describe(`idempotency keys: happy (${DIALECT})`, () => {
  let t: PushTest;
  let p: Practice;
  const probe = new Probe();
  let slot = 0;
  /** A booking in a slot of its own. */
  const booking = (overrides: Record<string, unknown> = {}) => {
    const start = START + 3600 * ++slot;
    return bookingBody(p, { appointment_details: { start_time: start, end_time: start + 900 }, ...overrides });
  };
  const call = (method: string, url: string, key: string | null, payload?: unknown, headers: Record<string, string> = {}) =>
    keyed(t.app, p.client.token, method, url, key, payload, headers);
  const count = async (
    table:
      | 'appointments'
      | 'events'
      | 'clinics'
      | 'doctors'
      | 'cases'
      | 'patients'
      | 'push_notifications'
      | 'push_devices'
      | 'webhook_subscriptions'
      | 'idempotency_keys',
  ) =>
    Number(
      (
        await t.ctx.storage.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .where('business_id', '=', p.client.businessId)
          .executeTakeFirstOrThrow()
      ).n,
    );

  /** Sends the request twice with one key: the second answers the first's status and body, replayed, and `effect` does not move. */
  async function assertReplayed(send: (key: string) => Promise<Response>, effect: () => Promise<number>, expectedStatus: number): Promise<Response> {
    const key = newKey();
    const first = await send(key);
    assert.equal(first.statusCode, expectedStatus, first.body);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    const after = await effect();
    const second = await send(key);
    assert.equal(second.statusCode, first.statusCode);
    assert.equal(second.body, first.body);
    assert.equal(second.headers['content-type'], first.headers['content-type']);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.equal(second.headers['cache-control'], 'no-store');
    assert.equal(typeof second.headers['x-request-id'], 'string');
    assert.equal(await effect(), after, 'the retry did nothing');
    return first;
  }

  before(async () => {
    t = await createPushTest({}, { setup: (app) => probe.install(app) });
    p = await createPractice(t, { client: t.client });
  });
  after(async () => t.close());

  it('a booking retried with its key: the same 201 and body, replayed, one appointment', async () => {
    const body = booking();
    await assertReplayed(
      (key) => call('POST', '/dr/v1/appointment', key, body),
      () => count('appointments'),
      201,
    );
  });

  it('without the header a request runs every time and nothing is kept', async () => {
    const before = await count('appointments');
    const body = booking();
    const first = await call('POST', '/dr/v1/appointment', null, body);
    const second = await call('POST', '/dr/v1/appointment', null, booking());
    assert.equal(first.statusCode, 201, first.body);
    assert.equal(second.statusCode, 201, second.body);
    assert.notEqual(first.json().appointment_id, second.json().appointment_id);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    assert.equal(await count('appointments'), before + 2);
    const keys = await t.ctx.storage.db
      .selectFrom('idempotency_keys')
      .select('idempotency_key')
      .where('business_id', '=', p.client.businessId)
      .execute();
    assert.ok(keys.every((row) => row.idempotency_key.startsWith('key-')));
  });

  it('every creation and status change accepts the key: replayed, no second effect, one event per change', async () => {
    const appointment = async () => (await call('POST', '/dr/v1/appointment', null, booking())).json().appointment_id as string;
    const patient = async () =>
      (await call('POST', '/dr/v1/patient', null, { first_name: 'Ravi', last_name: 'K', gender: 'M', dob: '1990-04-01' })).json()
        .patient_id as string;
    const eventCount = () => count('events');

    await assertReplayed(
      (key) => call('POST', '/cdr/v1/clinic', key, { name: 'Keyed Clinic', address: '2 Road' }),
      () => count('clinics'),
      201,
    );
    await assertReplayed(
      (key) => call('POST', '/cdr/v1/doctor', key, { firstname: 'Keyed', lastname: 'Doctor' }),
      () => count('doctors'),
      201,
    );
    const noShow = await appointment();
    await assertReplayed((key) => call('POST', `/dr/v1/appointment/${noShow}/change-status`, key, { status: 'NS' }), eventCount, 200);
    const completed = await appointment();
    const eventsBefore = await eventCount();
    await assertReplayed((key) => call('POST', `/dr/v1/appointment/${completed}/complete`, key), eventCount, 200);
    const reviewRequests = (await events(t, p.client.businessId)).filter(
      (e) => e.type === 'external_review.request' && JSON.stringify(e.payload).includes(completed),
    );
    assert.equal(reviewRequests.length, 1, 'the completion and its retry request one review');
    assert.ok((await eventCount()) > eventsBefore);
    const cancelled = await appointment();
    await assertReplayed((key) => call('PUT', `/dr/v1/appointment/${cancelled}/cancel`, key), eventCount, 200);
    const moved = await appointment();
    const later = START + 3600 * ++slot;
    await assertReplayed(
      (key) => call('PUT', `/dr/v1/appointment/${moved}/reschedule`, key, { start_time: later, end_time: later + 900 }),
      () => count('appointments'),
      200,
    );
    const movedAgain = await appointment();
    const evenLater = START + 3600 * ++slot;
    await assertReplayed(
      (key) => call('PATCH', `/appointments/v1/${movedAgain}/reschedule`, key, { start_time: evenLater, end_time: evenLater + 900 }),
      () => count('appointments'),
      200,
    );
    const reviewed = await appointment();
    const reviewEventsBefore = await eventCount();
    await assertReplayed((key) => call('POST', `/dr/v1/appointment/${reviewed}/review-request`, key), eventCount, 202);
    // One request is its event and the same in Eka's name (google_review.request_manual).
    assert.equal((await eventCount()) - reviewEventsBefore, 2, 'one review request for the request and its retry');
    await assertReplayed(
      (key) =>
        call('POST', '/mr/api/v1/cases', key, { id: 'case-keyed', display_name: 'Keyed', occurred_at: 1_700_000_000 }, { 'x-pt-id': 'pt-keyed' }),
      () => count('cases'),
      201,
    );
    await assertReplayed(
      (key) => call('POST', '/dr/v1/patient', key, { first_name: 'Keyed', last_name: 'Patient', gender: 'F', age: 30 }),
      () => count('patients'),
      201,
    );
    await assertReplayed(
      (key) => call('POST', '/profiles/v1/patient/', key, { fn: 'Keyed', ln: 'Profile', gen: 'F', dob: '1985-02-03' }),
      () => count('patients'),
      201,
    );
    const [survivor, duplicate] = [await patient(), await patient()];
    await assertReplayed((key) => call('POST', `/dr/v1/patient/${survivor}/merge`, key, { duplicate_patient_id: duplicate }), eventCount, 200);
    const [oid, duplicateOid] = [await patient(), await patient()];
    await assertReplayed((key) => call('POST', `/profiles/v1/patient/${oid}/merge`, key, { duplicate_oid: duplicateOid }), eventCount, 200);
    await assertReplayed((key) => call('POST', '/notification/push-creds', key, { sa_key: t.saKey() }), eventCount, 200);
    await assertReplayed(
      (key) =>
        call(
          'POST',
          '/notification/add-device',
          key,
          { devicePayload: { did: 'keyed-device', 'fcm-id': 'tok', 'app-version': '1' } },
          { 'x-pt-id': 'pt-keyed' },
        ),
      () => count('push_devices'),
      200,
    );
    await assertReplayed(
      (key) => call('POST', '/notification/send', key, { patient_id: 'pt-keyed', title: 'T', body: 'B' }),
      () => count('push_notifications'),
      202,
    );
    const subscription = await assertReplayed(
      (key) => call('POST', '/notification/v1/connect/webhook/subscriptions', key, { endpoint: 'https://hooks.example.test/cps' }),
      () => count('webhook_subscriptions'),
      201,
    );
    assert.equal(typeof subscription.json().signing_key, 'string');
  });

  it('a refused request (4xx) is not kept: its retry runs again, and the key is free for another request', async () => {
    const key = newKey();
    const unknown = booking({ clinic_id: 'cl_unknown' });
    const refused = await call('POST', '/dr/v1/appointment', key, unknown);
    assert.equal(refused.statusCode, 400, refused.body);
    assert.equal((await call('POST', '/dr/v1/appointment', key, unknown)).headers['idempotent-replayed'], undefined);
    const stored = await t.ctx.storage.db.selectFrom('idempotency_keys').selectAll().where('idempotency_key', '=', key).execute();
    assert.deepEqual(stored, [], 'a refused request stores nothing');
    const booked = await call('POST', '/dr/v1/appointment', key, booking());
    assert.equal(booked.statusCode, 201, booked.body);
  });

  it('a failed request (5xx) is not kept: its retry runs again and its success is kept', async () => {
    const key = newKey();
    probe.runs = 0;
    probe.answer = (run) => (run === 1 ? { status: 500 } : { status: 201, body: { run } });
    const failed = await call('POST', Probe.URL, key, { n: 1 });
    assert.equal(failed.statusCode, 500);
    const retried = await call('POST', Probe.URL, key, { n: 1 });
    assert.equal(retried.statusCode, 201);
    assert.deepEqual(retried.json(), { run: 2 });
    const replayed = await call('POST', Probe.URL, key, { n: 1 });
    assert.deepEqual([replayed.statusCode, replayed.json(), replayed.headers['idempotent-replayed']], [201, { run: 2 }, 'true']);
    assert.equal(probe.runs, 2);
  });

  it('an expired key is a new key: the request runs again', async () => {
    const key = newKey();
    const body = booking();
    const first = await call('POST', '/dr/v1/appointment', key, body);
    assert.equal(first.statusCode, 201, first.body);
    await t.ctx.storage.db
      .updateTable('idempotency_keys')
      .set({ expires_at: Date.now() - 1 })
      .where('idempotency_key', '=', key)
      .execute();
    await t.ctx.storage.db.deleteFrom('appointments').where('id', '=', first.json().appointment_id).execute();
    const again = await call('POST', '/dr/v1/appointment', key, body);
    assert.equal(again.statusCode, 201, again.body);
    assert.equal(again.headers['idempotent-replayed'], undefined);
    assert.notEqual(again.json().appointment_id, first.json().appointment_id);
    const replay = await call('POST', '/dr/v1/appointment', key, body);
    assert.equal(replay.json().appointment_id, again.json().appointment_id);
  });

  it('retention deletes expired keys in batches, not live ones', async () => {
    const db = t.ctx.storage.db;
    const dayMs = 24 * 3600 * 1000;
    const batch = t.ctx.config.retention.batchSize;
    const expired = batch * 2 + 7;
    const now = Date.now();
    const rows = Array.from({ length: expired }, (_, i) => ({
      business_id: p.client.businessId,
      idempotency_key: `old-${i}`,
      fingerprint: 'f',
      claim: null,
      claimed_until: null,
      status: 201,
      content_type: 'application/json',
      body: 'sealed',
      created_at: now - 2 * dayMs,
      expires_at: now - dayMs - i,
    }));
    for (let i = 0; i < rows.length; i += 200)
      await db
        .insertInto('idempotency_keys')
        .values(rows.slice(i, i + 200))
        .execute();
    const live = await count('idempotency_keys');
    const report = await t.modules.retention.service.run();
    assert.equal(report.pruned.idempotency_keys, expired);
    const left = await db
      .selectFrom('idempotency_keys')
      .select(['idempotency_key', 'expires_at'])
      .where('business_id', '=', p.client.businessId)
      .execute();
    assert.equal(left.length, live - expired);
    assert.ok(left.every((row) => row.expires_at > Date.now()));
  });

  it('/openapi.json shows the header on every route that accepts it, and on no other', async () => {
    const document = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, { parameters?: Array<{ in: string; name: string; required: boolean }> }>>;
    };
    const keyed: string[] = [];
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const header = operation.parameters?.find((parameter) => parameter.in === 'header' && parameter.name === 'idempotency-key');
        if (header) {
          assert.equal(header.required, false);
          keyed.push(`${method.toUpperCase()} ${path}`);
        }
      }
    }
    assert.deepEqual(
      keyed.sort(),
      [
        'POST /cdr/v1/clinic',
        'POST /cdr/v1/doctor',
        'POST /dr/v1/appointment',
        'POST /dr/v1/appointment/{appointment_id}/change-status',
        'POST /dr/v1/appointment/{appointment_id}/complete',
        'POST /dr/v1/appointment/{appointment_id}/parked',
        'POST /dr/v1/appointment/{appointment_id}/review-request',
        'POST /dr/v1/patient',
        'POST /dr/v1/patient/{patient_id}/merge',
        `POST ${Probe.URL}`,
        'POST /mr/api/v1/cases',
        'POST /mr/api/v1/docs',
        'POST /mr/api/v2/docs',
        'POST /notification/add-device',
        'POST /notification/push-creds',
        'POST /notification/send',
        'POST /notification/v1/connect/webhook/subscriptions',
        'POST /notification/v1/connect/webhook/subscriptions/{id}/deliveries/{event_id}/retry',
        'POST /profiles/v1/patient/',
        'POST /profiles/v1/patient/{oid}/merge',
        'POST /privacy/v1/patients/{patient_id}/erase',
        'POST /privacy/v1/patients/{patient_id}/export',
        'PUT /dr/v1/appointment/{appointment_id}/cancel',
        'PUT /dr/v1/appointment/{appointment_id}/reschedule',
        'PATCH /appointments/v1/{appointment_id}/reschedule',
      ].sort(),
    );
  });

  it('a key row holds the body encrypted', async () => {
    const key = newKey();
    const created = await call('POST', '/notification/v1/connect/webhook/subscriptions', key, { endpoint: 'https://hooks.example.test/secret' });
    assert.equal(created.statusCode, 201, created.body);
    const row = await t.ctx.storage.db.selectFrom('idempotency_keys').selectAll().where('idempotency_key', '=', key).executeTakeFirstOrThrow();
    assert.ok(!row.body!.includes(created.json().signing_key));
    assert.ok(!row.body!.includes('success'));
  });
});
