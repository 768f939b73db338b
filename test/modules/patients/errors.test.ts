/** Patients: every refusal names its field, in the family body of its path. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';
import { bookingBody, createPractice } from '../appointments/support.ts';
import { createDr, createProfile, drBody, partnerId, request } from './support.ts';

describe(`patients: errors (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  const call = (method: string, url: string, payload?: unknown) => request(t, client.token, method, url, payload);
  before(async () => {
    t = await createTestApp();
    client = await createTestClient(t.ctx);
  });
  after(async () => t.close());

  const drError = async (method: string, url: string, payload: unknown, status: number, code: string, field: RegExp) => {
    const response = await call(method, url, payload);
    assert.equal(response.statusCode, status, response.body);
    assert.deepEqual(Object.keys(response.json()), ['error']);
    assert.equal(response.json().error.code, code);
    assert.match(response.json().error.message, field);
  };

  it('refuses bad input to /dr/v1/patient, naming the field', async () => {
    await drError('POST', '/dr/v1/patient', { gender: 'M', dob: '1990-01-01' }, 400, 'INVALID_REQUEST', /first_name/);
    await drError('POST', '/dr/v1/patient', drBody({ dob: undefined }), 400, 'INVALID_REQUEST', /dob/);
    await drError('POST', '/dr/v1/patient', drBody({ age: 30 }), 400, 'INVALID_REQUEST', /either dob or age/);
    await drError('POST', '/dr/v1/patient', drBody({ dob: '2990-01-01' }), 400, 'INVALID_REQUEST', /dob: must be a date in the past/);
    await drError('POST', '/dr/v1/patient', drBody({ dob: '1990-02-30' }), 400, 'INVALID_REQUEST', /dob/);
    await drError('POST', '/dr/v1/patient', drBody({ mobile: '12345' }), 400, 'INVALID_REQUEST', /mobile/);
    await drError('POST', '/dr/v1/patient', drBody({ abha_number: '1234' }), 400, 'INVALID_REQUEST', /abha_number/);
    await drError('POST', '/dr/v1/patient', drBody({ abha_address: 'x@gmail.com' }), 400, 'INVALID_REQUEST', /abha_address/);
    await drError('POST', '/dr/v1/patient', drBody({ abha_address: '.abcdefgh@abdm' }), 400, 'INVALID_REQUEST', /abha_address/);
    await drError('POST', '/dr/v1/patient', drBody({ email: 'not-an-email' }), 400, 'INVALID_REQUEST', /email/);
    await drError('POST', '/dr/v1/patient', drBody({ blood_group: 'C+' }), 400, 'INVALID_REQUEST', /blood_group/);
    await drError('POST', '/dr/v1/patient', drBody({ gender: 'X' }), 400, 'INVALID_REQUEST', /gender/);
    await drError('POST', '/dr/v1/patient', drBody({ age: '5', dob: undefined }), 400, 'INVALID_REQUEST', /age/);
  });

  it('409 PATIENT_ALREADY_EXISTS for a taken partner id, in both families', async () => {
    const partner = partnerId();
    const first = await createDr(t, client.token, { partner_patient_id: partner });
    await drError('POST', '/dr/v1/patient', drBody({ partner_patient_id: partner }), 409, 'PATIENT_ALREADY_EXISTS', new RegExp(partner));
    const profile = await call('POST', '/profiles/v1/patient/', { fn: 'A', gen: 'F', dob: '1990-01-01', username: partner });
    assert.equal(profile.statusCode, 409);
    assert.equal(profile.json().error.code, 'profile_already_exists');
    const other = await createProfile(t, client.token, { username: partnerId() });
    const taken = await call('PATCH', `/profiles/v1/patient/${other}`, { username: partner });
    assert.equal(taken.statusCode, 409);
    assert.equal(taken.json().error.code, 'profile_already_exists');
    assert.equal((await call('GET', `/dr/v1/patient/${partner}`)).json().patient_id, first);
  });

  it("refuses another patient's service id as a partner id, on create, update and booking (they would share records)", async () => {
    const first = await createDr(t, client.token, { first_name: 'Firstone' });
    await drError('POST', '/dr/v1/patient', drBody({ partner_patient_id: first }), 400, 'INVALID_REQUEST', /partner_patient_id/);
    const second = await createDr(t, client.token, { first_name: 'Secondone' });
    await drError('PATCH', `/dr/v1/patient/${second}`, { partner_patient_id: first }, 400, 'INVALID_REQUEST', /partner_patient_id/);
    const practice = await createPractice(t, { client });
    const booked = await request(
      t,
      client.token,
      'POST',
      '/dr/v1/appointment',
      bookingBody(practice, { patient_details: { partner_patient_id: first } }),
    );
    assert.equal(booked.statusCode, 400, booked.body);
    assert.match(booked.json().error.message, /partner_patient_id/);
    // An id of that form naming no patient is the partner's own.
    assert.ok(await createDr(t, client.token, { partner_patient_id: 'pt_not_a_service_id' }));
  });

  it('404 for unknown patients in each family', async () => {
    await drError('GET', '/dr/v1/patient/pt_nobody', undefined, 404, 'PATIENTS_NOT_FOUND', /No patient/);
    await drError('PATCH', '/dr/v1/patient/pt_nobody', { first_name: 'X' }, 404, 'PATIENTS_NOT_FOUND', /No patient/);
    await drError('GET', '/dr/v1/appointment/patient/pt_nobody', undefined, 404, 'PATIENTS_NOT_FOUND', /No patient/);
    for (const [method, url] of [
      ['GET', '/profiles/v1/patient/pt_nobody'],
      ['PATCH', '/profiles/v1/patient/pt_nobody'],
      ['DELETE', '/profiles/v1/patient/pt_nobody'],
      ['GET', '/profiles/v1/patient/nobody/username/'],
    ] as const) {
      const response = await call(method, url, method === 'PATCH' ? { s: 'Mr.' } : undefined);
      assert.equal(response.statusCode, 404, `${method} ${url}`);
      assert.deepEqual(response.json().error.code, 'profile_not_found');
    }
  });

  it('refuses bad input to /profiles/v1/patient in its own body', async () => {
    const cases: Array<[string, string, unknown, RegExp]> = [
      ['POST', '/profiles/v1/patient/', { gen: 'M', dob: '1990-01-01' }, /fn/],
      ['POST', '/profiles/v1/patient/', { fn: 'A', dob: '1990-01-01' }, /gen/],
      ['POST', '/profiles/v1/patient/', { fn: 'A', gen: 'M' }, /dob/],
      ['POST', '/profiles/v1/patient/', { fn: 'A', gen: 'M', dob: '1990-01-01', bloodgroup: 'Z' }, /bloodgroup/],
      ['POST', '/profiles/v1/patient/', { fn: 'A', gen: 'M', dob: '1990-01-01', abha: 'nope' }, /abha/],
      ['GET', '/profiles/v1/patient/minified/?pageSize=5000', undefined, /pageSize/],
      ['GET', '/profiles/v1/patient/minified/?select=mobile,secret', undefined, /select/],
      ['GET', '/profiles/v1/patient/by-mobile/', undefined, /mob/],
      ['GET', '/profiles/v1/patient/by-mobile/?mob=abc', undefined, /mob/],
      ['GET', '/profiles/v1/patient/by-abha/', undefined, /abha/],
      ['GET', '/profiles/v1/patient/by-abha/?abha_number=1', undefined, /abha_number/],
    ];
    for (const [method, url, payload, field] of cases) {
      const response = await call(method, url, payload);
      assert.equal(response.statusCode, 400, `${method} ${url}: ${response.body}`);
      assert.equal(response.json().error.code, 'invalid_request');
      assert.match(response.json().error.message, field);
    }
    const oid = await createProfile(t, client.token);
    const partialName = await call('PATCH', `/profiles/v1/patient/${oid}`, { ln: 'Only' });
    assert.equal(partialName.statusCode, 400);
    assert.match(partialName.json().error.message, /fn/);
  });

  it('a name that is an Object.prototype member ("constructor") is a name like any other, stored and searched (not 500)', async () => {
    const id = await createDr(t, client.token, { first_name: 'Constructor', last_name: 'Valueof' });
    const oid = await createProfile(t, client.token, { fn: 'constructor' });
    for (const prefix of ['constructor', 'Constructor', 'constructor valueof', 'CONSTRUCTOR']) {
      const found = await call('GET', `/profiles/v1/patient/search?prefix=${encodeURIComponent(prefix)}`);
      assert.equal(found.statusCode, 200, `${prefix}: ${found.body}`);
    }
    const ids = (await call('GET', '/profiles/v1/patient/search?prefix=constructor')).json().map((p: { oid: string }) => p.oid);
    assert.ok(ids.includes(id) && ids.includes(oid), JSON.stringify(ids));
    const renamed = await call('PATCH', `/dr/v1/patient/${id}`, { first_name: 'constructor' });
    assert.equal(renamed.statusCode, 200, renamed.body);
  });

  it("ignores an address's unknown keys, however deep (a value nested 5,000 deep overflowed JSON.stringify: 500), on the patient and through a booking", async () => {
    const deep = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
    const body = (extra: string) => `{"first_name":"Ravi","gender":"M","dob":"1990-01-01","address":{"city":"Pune","extra":${extra}}}`;
    const send = (method: string, url: string, payload: string) =>
      t.app.inject({ method: method as 'POST', url, headers: { auth: client.token, 'content-type': 'application/json' }, payload });
    const created = await send('POST', '/dr/v1/patient', body(deep(5000)));
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json().patient_id;
    const changed = await send('PATCH', `/dr/v1/patient/${id}`, `{"address":{"state":"MH","other":${deep(5000)}}}`);
    assert.equal(changed.statusCode, 200, changed.body);
    const row = await t.ctx.storage.db.selectFrom('patients').select('address').where('id', '=', id).executeTakeFirstOrThrow();
    assert.deepEqual(JSON.parse(row.address!), { city: 'Pune', state: 'MH' });
    const practice = await createPractice(t, { client });
    const booking = JSON.stringify(bookingBody(practice)).replace(
      '"patient_details":{',
      `"patient_details":{"address":{"city":"Pune","a":${deep(5000)}},`,
    );
    const booked = await send('POST', '/dr/v1/appointment', booking);
    assert.equal(booked.statusCode, 201, booked.body);
    const appointment = booked.json().appointment_id;
    const patched = await send('PATCH', `/dr/v1/appointment/${appointment}`, `{"patient_details":{"address":{"city":"Goa","a":${deep(5000)}}}}`);
    assert.equal(patched.statusCode, 200, patched.body);
    assert.deepEqual(patched.json().patient_details.address, { city: 'Goa' });
  });

  it('refuses a bad page token of a patient appointments listing', async () => {
    const id = await createDr(t, client.token);
    await drError('GET', `/dr/v1/appointment/patient/${id}?offset=garbage`, undefined, 400, 'INVALID_REQUEST', /offset/);
  });

  it('a merged patient reads with a pointer to its survivor and refuses changes', async () => {
    const survivor = await createDr(t, client.token);
    const merged = await createDr(t, client.token, { partner_patient_id: partnerId() });
    await t.ctx.storage.db.updateTable('patients').set({ merged_into: survivor, archived_at: Date.now() }).where('id', '=', merged).execute();
    assert.equal((await call('GET', `/dr/v1/patient/${merged}`)).json().merged_into, survivor);
    assert.equal((await call('GET', `/profiles/v1/patient/${merged}`)).json().merged_into, survivor);
    await drError('PATCH', `/dr/v1/patient/${merged}`, { first_name: 'X' }, 409, 'PATIENT_MERGED', new RegExp(survivor));
  });
});
