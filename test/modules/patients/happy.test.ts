/** Patients as a resource: both families over one record, look-ups, archive, appointments of a patient. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { bearer, createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';
import { book, createPractice, START, type Practice } from '../appointments/support.ts';
import { createDr, createProfile, partnerId, request } from './support.ts';

describe(`patients: happy paths (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  const call = (method: string, url: string, payload?: unknown) => request(t, client.token, method, url, payload);
  before(async () => {
    t = await createTestApp();
    client = await createTestClient(t.ctx);
  });
  after(async () => t.close());

  it('creates, reads and changes a patient in the doctor-tool family, by service id and by partner id', async () => {
    const partner = partnerId();
    const id = await createDr(t, client.token, {
      partner_patient_id: partner,
      designation: 'Mr.',
      mobile: '98123 45678',
      email: 'Ravi.Kumar@Example.com',
      address: { line1: '1 MG Road', city: 'Pune', pincode: 411001 },
      abha_number: '12-3456-7890-1234',
      abha_address: 'Ravi.Kumar1@abdm',
      blood_group: 'B+',
      partner_meta: { ward: 7 },
    });
    const read = await call('GET', `/dr/v1/patient/${id}`);
    assert.equal(read.statusCode, 200, read.body);
    assert.deepEqual(read.json(), {
      patient_id: id,
      partner_patient_id: partner,
      designation: 'Mr.',
      first_name: 'Ravi',
      last_name: 'Kumar',
      gender: 'M',
      dob: '1990-04-01',
      email: 'ravi.kumar@example.com',
      mobile: '+919812345678',
      blood_group: 'B+',
      address: { line1: '1 MG Road', city: 'Pune', pincode: '411001' },
      abha_number: '12345678901234',
      abha_address: 'ravi.kumar1@abdm',
      partner_meta: { ward: 7 },
      archived: false,
      created_at: read.json().created_at,
      updated_at: read.json().updated_at,
    });
    assert.deepEqual((await call('GET', `/dr/v1/patient/${partner}`)).json(), read.json(), 'the partner id reads the same patient');
    assert.deepEqual((await call('GET', `/dr/v1/patient/${partner}?partner_id=1`)).json(), read.json());
    assert.equal((await call('GET', `/dr/v1/patient/${id}?partner_id=1`)).statusCode, 404, 'partner_id=1 reads the path as a partner id');

    const patched = await call('PATCH', `/dr/v1/patient/${partner}?partner_id=1`, { age: 40, address: { state: 'MH' }, last_name: 'Sharma' });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.deepEqual(patched.json(), { patient_id: id });
    const now = (await call('GET', `/dr/v1/patient/${id}`)).json();
    assert.equal(now.age, 40);
    assert.ok(!('dob' in now), 'age clears dob');
    assert.equal(now.last_name, 'Sharma');
    assert.deepEqual(now.address, { line1: '1 MG Road', city: 'Pune', pincode: '411001', state: 'MH' }, 'the address changes key by key');
  });

  it('serves the same record in the profiles family: create, read, change, archive', async () => {
    const username = partnerId('UH');
    const oid = await createProfile(t, client.token, {
      fln: 'Sai Venkata Krishna',
      fn: undefined,
      ln: undefined,
      username,
      mobile: '+919900011122',
      abha: 'sai_krishna@abdm',
      bloodgroup: 'O+',
      s: 'Mr',
      gen: 'M',
      extras: { city: 'Hyderabad', _hidden: 1 },
    });
    const read = (await call('GET', `/profiles/v1/patient/${oid}`)).json();
    assert.equal(read.oid, oid);
    assert.equal(read.wid, client.businessId);
    assert.equal(read.fn, 'Sai');
    assert.equal(read.mn, 'Venkata');
    assert.equal(read.ln, 'Krishna');
    assert.equal(read.fln, 'Sai Venkata Krishna');
    assert.equal(read.mobile, '9900011122');
    assert.equal(read.ccd, '+91');
    assert.equal(read.username, username);
    assert.equal(read.abha, 'sai_krishna@abdm');
    assert.equal(read.bg, 'O+');
    assert.equal(read.is_age, false);
    assert.deepEqual(read.extras, { city: 'Hyderabad' }, 'keys starting with _ are ignored');
    const dr = (await call('GET', `/dr/v1/patient/${oid}`)).json();
    assert.equal(dr.first_name, 'Sai');
    assert.equal(dr.mobile, '+919900011122');

    const renamed = await call('PATCH', `/profiles/v1/patient/${oid}`, { fn: 'Sai', ln: 'K' });
    assert.equal(renamed.statusCode, 200, renamed.body);
    assert.deepEqual(renamed.json(), { message: 'Profile updated successfully' });
    const afterRename = (await call('GET', `/profiles/v1/patient/${username}`)).json();
    assert.equal(afterRename.fln, 'Sai K', 'a name sent replaces the whole name');
    assert.ok(!('mn' in afterRename));

    const byUsername = await call('GET', `/profiles/v1/patient/${username}/username/?flatten=true`);
    assert.equal(byUsername.statusCode, 200);
    assert.deepEqual(
      byUsername.json().map((p: { oid: string }) => p.oid),
      [oid],
    );

    const archived = await call('DELETE', `/profiles/v1/patient/${oid}`);
    assert.equal(archived.statusCode, 200);
    assert.deepEqual(archived.json(), { message: 'Profile archived successfully' });
    assert.equal((await call('GET', `/profiles/v1/patient/${oid}`)).statusCode, 404, 'archived patients are hidden');
    assert.equal((await call('GET', `/dr/v1/patient/${oid}`)).statusCode, 404);
    assert.equal((await call('GET', `/profiles/v1/patient/${username}/username/`)).statusCode, 404);
    const withArc = await call('GET', `/profiles/v1/patient/${oid}?arc=true`);
    assert.equal(withArc.statusCode, 200);
    assert.equal(withArc.json().arc, true);
    assert.equal((await call('GET', `/dr/v1/patient/${oid}?arc=true`)).json().archived, true);
  });

  it('keeps an age and ages it; is_age marks a dob derived from an age', async () => {
    const oid = await createProfile(t, client.token, { dob: undefined, age: 30 });
    const read = (await call('GET', `/profiles/v1/patient/${oid}`)).json();
    assert.equal(read.is_age, true);
    assert.equal(Number(new Date().toISOString().slice(0, 4)) - Number(read.dob.slice(0, 4)), 30);
    // Given three years ago, the age is three years more now.
    await t.ctx.storage.db
      .updateTable('patients')
      .set({ age_recorded_at: Date.now() - 3 * 366 * 86_400_000 })
      .where('id', '=', oid)
      .execute();
    assert.equal((await call('GET', `/dr/v1/patient/${oid}`)).json().age, 33);
  });

  it('looks patients up by mobile (a family shares one), by ABHA number and by ABHA address', async () => {
    const mob = `+9198${String(Date.now()).slice(-8)}`;
    const mother = await createProfile(t, client.token, { fn: 'Lakshmi', mobile: mob, abha: 'lakshmi.r@abdm' });
    const son = await createDr(t, client.token, { first_name: 'Arjun', mobile: mob.slice(3), abha_number: '91-1234-5678-9012' });
    const other = await createTestClient(t.ctx);
    await createDr(t, other.token, { first_name: 'Stranger', mobile: mob });

    const byMobile = await call('GET', `/profiles/v1/patient/by-mobile/?mob=${encodeURIComponent(mob)}`);
    assert.equal(byMobile.statusCode, 200, byMobile.body);
    assert.deepEqual(
      byMobile.json().map((p: { oid: string }) => p.oid),
      [mother, son],
      'both, oldest first, and none of another business',
    );
    assert.deepEqual(Object.keys(byMobile.json()[0]).sort(), ['abha', 'ccd', 'dob', 'fln', 'gen', 'mobile', 'oid', 'ps']);
    const full = await call('GET', `/profiles/v1/patient/by-mobile/?mob=${mob.slice(3)}&full_profile=true`);
    assert.equal(full.json()[1].fn, 'Arjun', '10 digits read as an Indian number; full_profile gives whole profiles');

    const byNumber = await call('GET', '/profiles/v1/patient/by-abha/?abha_number=91123456789012');
    assert.deepEqual(
      byNumber.json().map((p: { oid: string }) => p.oid),
      [son],
    );
    const byAddress = await call('GET', '/profiles/v1/patient/by-abha/?abha=Lakshmi.R@abdm');
    assert.deepEqual(
      byAddress.json().map((p: { oid: string }) => p.oid),
      [mother],
    );
    assert.deepEqual((await call('GET', '/profiles/v1/patient/by-mobile/?mob=%2B15550000000')).json(), []);
  });

  it('lists profiles by creation in pages, with select, from and arc', async () => {
    const business = await createTestClient(t.ctx);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await createProfile(t, business.token, { fn: `P${i}`, username: partnerId() }));
    await request(t, business.token, 'DELETE', `/profiles/v1/patient/${ids[1]}`);
    const first = (await request(t, business.token, 'GET', '/profiles/v1/patient/minified/?pageNo=1&pageSize=2')).json();
    assert.deepEqual(
      first.profiles.map((p: { oid: string }) => p.oid),
      [ids[0], ids[2]],
      'archived profiles are left out',
    );
    assert.deepEqual(first.currPageMeta, { currPageNo: 1, pageSize: 2, nextPage: 2 });
    assert.deepEqual(Object.keys(first.profiles[0]).sort(), ['fln', 'oid', 'username', 'wid']);
    const second = (await request(t, business.token, 'GET', '/profiles/v1/patient/minified/?pageNo=2&pageSize=2&select=dob,gen,c_ate')).json();
    assert.deepEqual(
      second.profiles.map((p: { oid: string }) => p.oid),
      [ids[3], ids[4]],
    );
    assert.equal(second.currPageMeta.nextPage, -1);
    assert.equal(second.profiles[0].dob, '1985-02-03');
    assert.equal(second.profiles[0].gen, 'F');
    assert.equal(typeof second.profiles[0].c_ate, 'number');
    const all = (await request(t, business.token, 'GET', '/profiles/v1/patient/minified/?arc=true')).json();
    assert.equal(all.profiles.length, 5);
    assert.equal(all.profiles[1].arc, true);
    const from = (await request(t, business.token, 'GET', `/profiles/v1/patient/minified/?from=${Math.floor(Date.now() / 1000) + 10}`)).json();
    assert.deepEqual(from.profiles, []);
  });

  it("lists a patient's appointments newest first, paged by next_token", async () => {
    const practice: Practice = await createPractice(t, { client });
    const partner = partnerId();
    const ids: string[] = [];
    for (let i = 0; i < 53; i++) {
      ids.push(
        await book(t, practice, {
          appointment_details: { start_time: START + i * 600, end_time: START + i * 600 + 300 },
          patient_details: { first_name: 'Many', partner_patient_id: partner },
        }),
      );
    }
    await book(t, practice, { patient_details: { first_name: 'Someone', partner_patient_id: partnerId() } });
    const first = await call('GET', `/dr/v1/appointment/patient/${partner}`);
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.json().success, true);
    assert.equal(first.json().data.length, 50);
    assert.equal(first.json().data[0].appointment_id, ids[52]);
    assert.equal(first.json().data[0].patient_details.first_name, 'Many');
    assert.equal(typeof first.json().next_token, 'string');
    const second = await call('GET', `/dr/v1/appointment/patient/${partner}?partner_id=1&offset=${first.json().next_token}`);
    assert.deepEqual(
      second.json().data.map((a: { appointment_id: string }) => a.appointment_id),
      [ids[2], ids[1], ids[0]],
    );
    assert.equal(second.json().next_token, null);
    // The appointments' reader reads them too (appointment scopes).
    const reader = await createTestClient(t.ctx, { businessId: client.businessId, scopes: ['appointment:complete'] });
    assert.equal((await request(t, reader.token, 'GET', `/dr/v1/appointment/patient/${partner}`)).statusCode, 200);
  });

  it('a booking creates or updates the same record the directory serves', async () => {
    const practice = await createPractice(t, { client });
    const partner = partnerId();
    const id = await createDr(t, client.token, { partner_patient_id: partner, first_name: 'Kiran' });
    const appointment = await book(t, practice, { patient_details: { partner_patient_id: partner, mobile: '+919000000001' } });
    const record = (await call('GET', `/dr/v1/appointment/${appointment}`)).json();
    assert.equal(record.patient_id, id);
    assert.equal(record.patient_details.first_name, 'Kiran');
    assert.equal((await call('GET', `/dr/v1/patient/${id}`)).json().mobile, '+919000000001');
  });

  it('a case stored before its patient existed is found by both ids afterwards', async () => {
    const partner = partnerId();
    const caseHeaders = (pt: string) => ({ ...bearer(client.token), 'x-pt-id': pt });
    const stored = await t.app.inject({
      method: 'POST',
      url: '/mr/api/v1/cases',
      headers: caseHeaders(partner),
      payload: { id: 'early-case', display_name: 'Before registration', occurred_at: 1_700_000_000 },
    });
    assert.equal(stored.statusCode, 201);
    const id = await createDr(t, client.token, { partner_patient_id: partner });
    for (const pt of [partner, id]) {
      const read = await t.app.inject({ method: 'GET', url: '/mr/api/v1/cases/early-case', headers: caseHeaders(pt) });
      assert.equal(read.statusCode, 200, `found by ${pt === id ? 'the service id' : 'the partner id'}`);
    }

    // A patient without a partner id keeps its cases when it is given one.
    const bare = await createDr(t, client.token);
    await t.app.inject({
      method: 'POST',
      url: '/mr/api/v1/cases',
      headers: caseHeaders(bare),
      payload: { id: 'bare-case', display_name: 'Walk-in', occurred_at: 1_700_000_000 },
    });
    const named = partnerId();
    assert.equal((await call('PATCH', `/profiles/v1/patient/${bare}`, { username: named })).statusCode, 200);
    for (const pt of [named, bare]) {
      const read = await t.app.inject({ method: 'GET', url: '/mr/api/v1/cases/bare-case', headers: caseHeaders(pt) });
      assert.equal(read.statusCode, 200);
    }
    // The moved case takes the current second, listed once that second is over (contract 6).
    await sleep(1050 - (Date.now() % 1000));
    const listed = await t.app.inject({ method: 'GET', url: '/mr/api/v1/cases', headers: caseHeaders(named) });
    assert.deepEqual(
      listed.json().cases.map((c: { id: string }) => c.id),
      ['bare-case'],
    );
  });
});
