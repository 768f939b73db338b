/**
 * Idempotency-Key, errors and security: a malformed key is 400 and the same key with another request 422,
 * in the route's family body, with no effect; authentication and scopes come first; a key is a business's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';
import { bookingBody, createPractice, START, type Practice } from '../appointments/support.ts';
import { keyed, newKey } from './support.ts';

describe(`idempotency keys: errors and security (${DIALECT})`, () => {
  let t: TestApp;
  let p: Practice;
  let client: TestClient;
  const call = (method: string, url: string, key: string | null, payload?: unknown, headers: Record<string, string> = {}, token = client.token) =>
    keyed(t.app, token, method, url, key, payload, headers);
  const keyRows = async (businessId = client.businessId) =>
    t.ctx.storage.db.selectFrom('idempotency_keys').select(['idempotency_key', 'status']).where('business_id', '=', businessId).execute();

  before(async () => {
    t = await createTestApp();
    client = await createTestClient(t.ctx);
    p = await createPractice(t, { client });
  });
  after(async () => t.close());

  it('a malformed key is 400 in the family body, naming the header, and runs nothing', async () => {
    const doctors = async () =>
      (await t.ctx.storage.db.selectFrom('doctors').select('id').where('business_id', '=', client.businessId).execute()).length;
    const before = await doctors();
    for (const key of ['', 'k'.repeat(256), 'clé', 'tab\there']) {
      const clinics = await call('POST', '/cdr/v1/doctor', key, { firstname: 'Bad', lastname: 'Key' });
      assert.equal(clinics.statusCode, 400, `${JSON.stringify(key)}: ${clinics.body}`);
      assert.deepEqual(clinics.json(), { 'Idempotency-Key': ['must be 1 to 255 printable ASCII characters'] });
      const appointments = await call('POST', '/dr/v1/appointment', key, bookingBody(p));
      assert.equal(appointments.statusCode, 400);
      assert.deepEqual(appointments.json(), {
        error: { code: 'INVALID_REQUEST', message: 'Idempotency-Key: must be 1 to 255 printable ASCII characters' },
      });
    }
    assert.equal(await doctors(), before);
    const longest = await call('POST', '/cdr/v1/doctor', ' ~'.repeat(127).slice(1), { firstname: 'Long', lastname: 'Key' });
    assert.equal(longest.statusCode, 201, longest.body);
  });

  it('the same key with another body, path, query or declared header is 422 in each family, and the first response stays', async () => {
    const cases: Array<{
      first: [string, string, unknown, Record<string, string>?];
      second: [string, string, unknown, Record<string, string>?];
      body: unknown;
    }> = [
      {
        first: ['POST', '/dr/v1/appointment', bookingBody(p, { appointment_details: { start_time: START + 7200, end_time: START + 8100 } })],
        second: ['POST', '/dr/v1/appointment', bookingBody(p, { appointment_details: { start_time: START + 9000, end_time: START + 9900 } })],
        body: {
          error: {
            code: 'IDEMPOTENCY_KEY_REUSED',
            message: 'This Idempotency-Key was used with a different request; send a new key for a new request.',
          },
        },
      },
      {
        first: ['POST', '/cdr/v1/clinic', { name: 'One', address: 'A' }],
        second: ['POST', '/cdr/v1/doctor', { name: 'One', address: 'A' }],
        body: { message: ['This Idempotency-Key was used with a different request; send a new key for a new request.'] },
      },
      {
        first: ['POST', '/mr/api/v1/cases', { id: 'c-422', display_name: 'C', occurred_at: 1_700_000_000 }, { 'x-pt-id': 'pt-a' }],
        second: ['POST', '/mr/api/v1/cases', { id: 'c-422', display_name: 'C', occurred_at: 1_700_000_000 }, { 'x-pt-id': 'pt-b' }],
        body: { error: 'This Idempotency-Key was used with a different request; send a new key for a new request.', code: 'IDEMPOTENCY_KEY_REUSED' },
      },
      {
        first: ['POST', '/profiles/v1/patient/', { fn: 'A', ln: 'B', gen: 'F', dob: '1985-02-03' }],
        second: ['POST', '/profiles/v1/patient/', { fn: 'A', ln: 'C', gen: 'F', dob: '1985-02-03' }],
        body: {
          error: {
            code: 'idempotency_key_reused',
            message: 'This Idempotency-Key was used with a different request; send a new key for a new request.',
          },
        },
      },
      {
        first: ['POST', '/notification/add-device', { devicePayload: { did: 'd1', 'fcm-id': 'tok', 'app-version': '1' } }],
        second: ['POST', '/notification/add-device', { devicePayload: { did: 'd2', 'fcm-id': 'tok', 'app-version': '1' } }],
        body: { message: 'This Idempotency-Key was used with a different request; send a new key for a new request.', error_code: 422 },
      },
    ];
    for (const { first, second, body } of cases) {
      const key = newKey();
      const original = await call(first[0], first[1], key, first[2], first[3]);
      assert.ok(original.statusCode < 300, `${first[1]}: ${original.body}`);
      const reused = await call(second[0], second[1], key, second[2], second[3]);
      assert.equal(reused.statusCode, 422, `${second[1]}: ${reused.body}`);
      assert.deepEqual(reused.json(), body);
      const replayed = await call(first[0], first[1], key, first[2], first[3]);
      assert.equal(replayed.body, original.body);
      assert.equal(replayed.headers['idempotent-replayed'], 'true');
    }
    const key = newKey();
    const bookedByPartner = await call(
      'POST',
      '/dr/v1/appointment',
      key,
      bookingBody(p, { appointment_details: { start_time: START + 20_000, end_time: START + 20_900 } }),
    );
    assert.equal(bookedByPartner.statusCode, 201);
    const id = bookedByPartner.json().appointment_id;
    const cancelKey = newKey();
    assert.equal((await call('PUT', `/dr/v1/appointment/${id}/cancel`, cancelKey)).statusCode, 200);
    assert.equal((await call('PUT', `/dr/v1/appointment/${id}/cancel?partner_id=1`, cancelKey)).statusCode, 422, 'another query is another request');
  });

  it('the body is compared as JSON: another key order or spacing is the same request', async () => {
    const key = newKey();
    const first = await t.app.inject({
      method: 'POST',
      url: '/cdr/v1/clinic',
      headers: { authorization: `Bearer ${client.token}`, 'idempotency-key': key, 'content-type': 'application/json' },
      payload: '{"name":"Ordered","address":"B"}',
    });
    const second = await t.app.inject({
      method: 'POST',
      url: '/cdr/v1/clinic',
      headers: { authorization: `Bearer ${client.token}`, 'idempotency-key': key, 'content-type': 'application/json' },
      payload: '{ "address": "B",\n "name": "Ordered" }',
    });
    assert.equal(first.statusCode, 201);
    assert.equal(second.body, first.body);
    assert.equal(second.headers['idempotent-replayed'], 'true');
  });

  it('authentication and scopes come first: 401 and 403 with a key claim nothing', async () => {
    const key = newKey();
    const readOnly = await createTestClient(t.ctx, { businessId: client.businessId, scopes: ['appointment:complete'] });
    const noToken = await t.app.inject({ method: 'POST', url: '/dr/v1/appointment', headers: { 'idempotency-key': key }, payload: bookingBody(p) });
    assert.equal(noToken.statusCode, 401);
    const forbidden = await call('POST', '/dr/v1/appointment', key, bookingBody(p), {}, readOnly.token);
    assert.equal(forbidden.statusCode, 403);
    assert.ok(!(await keyRows()).some((row) => row.idempotency_key === key));
  });

  it("a key is a business's: the same key in another business is another key, and runs there", async () => {
    const other = await createTestClient(t.ctx);
    const key = newKey();
    const mine = await call('POST', '/cdr/v1/doctor', key, { firstname: 'Same', lastname: 'Key' });
    const theirs = await call('POST', '/cdr/v1/doctor', key, { firstname: 'Same', lastname: 'Key' }, {}, other.token);
    assert.equal(mine.statusCode, 201);
    assert.equal(theirs.statusCode, 201);
    assert.equal(theirs.headers['idempotent-replayed'], undefined);
    assert.notEqual(theirs.json().svcid, mine.json().svcid);
    const theirsOtherBody = await call('POST', '/cdr/v1/clinic', key, { name: 'Theirs', address: 'C' }, {}, other.token);
    assert.equal(theirsOtherBody.statusCode, 422, 'their key is theirs alone');
    const mineAgain = await call('POST', '/cdr/v1/doctor', key, { firstname: 'Same', lastname: 'Key' });
    assert.equal(mineAgain.body, mine.body);
    assert.deepEqual(await keyRows(other.businessId), [{ idempotency_key: key, status: 201 }]);
  });
});
