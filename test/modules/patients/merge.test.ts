/** Merging a duplicate patient: every linked record moves, the duplicate points at the survivor, and the event says so. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bearer, createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';
import { book, createPractice, events, START, type Practice } from '../appointments/support.ts';
import { createDr, partnerId, request } from './support.ts';

describe(`patients: merge (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  let practice: Practice;
  const call = (method: string, url: string, payload?: unknown) => request(t, client.token, method, url, payload);
  const storeCase = (patient: string, id: string) =>
    t.app.inject({
      method: 'POST',
      url: '/mr/api/v1/cases',
      headers: { ...bearer(client.token), 'x-pt-id': patient },
      payload: { id, display_name: `Case ${id}`, occurred_at: 1_700_000_000 },
    });
  const readCase = (patient: string, id: string) =>
    t.app.inject({ method: 'GET', url: `/mr/api/v1/cases/${id}`, headers: { ...bearer(client.token), 'x-pt-id': patient } });

  before(async () => {
    t = await createTestApp();
    client = await createTestClient(t.ctx);
    practice = await createPractice(t, { client });
  });
  after(async () => t.close());

  it('a create answers the probable duplicates: same mobile, similar name, compatible birth; not the rest of the family', async () => {
    const mobile = '+919700011122';
    const first = await createDr(t, client.token, { first_name: 'Lakshmi', last_name: 'Narayanan', dob: '1980-03-04', mobile });
    await createDr(t, client.token, { first_name: 'Rohan', last_name: 'Narayanan', dob: '2008-01-01', mobile });
    await createDr(t, client.token, { first_name: 'Lakshmi', last_name: 'Narayanan', dob: '1980-03-04', mobile: '+919700099999' });
    const variant = await call('POST', '/dr/v1/patient', { first_name: 'Laxmi', last_name: 'Narayan', gender: 'F', dob: '1980-03-04', mobile });
    assert.equal(variant.statusCode, 201, variant.body);
    assert.deepEqual(
      variant.json().duplicates.map((p: { patient_id: string }) => p.patient_id),
      [first],
    );
    const byAge = await call('POST', '/profiles/v1/patient/', { fln: 'Lakshmi N', gen: 'F', age: 46, mobile: '9700011122' });
    assert.equal(byAge.statusCode, 201, byAge.body);
    assert.deepEqual(
      byAge
        .json()
        .duplicates.map((p: { oid: string }) => p.oid)
        .sort(),
      [first, variant.json().patient_id].sort(),
    );
    const otherBirth = await call('POST', '/dr/v1/patient', {
      first_name: 'Lakshmi',
      last_name: 'Narayanan',
      gender: 'F',
      dob: '1991-07-08',
      mobile,
    });
    assert.deepEqual(otherBirth.json().duplicates, []);
    const noMobile = await call('POST', '/dr/v1/patient', { first_name: 'Lakshmi', last_name: 'Narayanan', gender: 'F', dob: '1980-03-04' });
    assert.deepEqual(noMobile.json().duplicates, []);
  });

  it('moves appointments, reviews, cases and devices to the survivor and archives the duplicate with a pointer', async () => {
    const [keep, drop] = [partnerId('keep'), partnerId('drop')];
    const survivor = await createDr(t, client.token, { partner_patient_id: keep, first_name: 'Lakshmi', mobile: '+919811111111' });
    const duplicate = await createDr(t, client.token, { partner_patient_id: drop, first_name: 'Laxmi', mobile: '+919811111111' });
    const kept = await book(t, practice, { patient_details: { partner_patient_id: keep } });
    const moved = await book(t, practice, {
      appointment_details: { start_time: START + 3600, end_time: START + 4500 },
      patient_details: { partner_patient_id: drop, first_name: 'Laxmi' },
    });
    assert.equal((await storeCase(drop, 'dup-case')).statusCode, 201);
    assert.equal((await storeCase(keep, 'own-case')).statusCode, 201);
    const db = t.ctx.storage.db;
    const now = Date.now();
    await db
      .insertInto('push_devices')
      .values({
        id: 'dev_merge',
        business_id: client.businessId,
        did: 'device-merge',
        fcm_token: 'token',
        app_version: '1.0',
        app_id: null,
        app_platform: null,
        lang: null,
        os_version: null,
        user_hash: null,
        patient_ref: drop,
        created_at: now,
        updated_at: now,
      })
      .execute();
    await db
      .insertInto('reviews')
      .values({
        id: 'rev_merge',
        business_id: client.businessId,
        appointment_id: moved,
        doctor_id: practice.doctorId,
        clinic_id: practice.clinicId,
        patient_id: duplicate,
        rating: 5,
        comment: null,
        created_at: now,
      })
      .execute();

    const merged = await call('POST', `/dr/v1/patient/${survivor}/merge`, { duplicate_patient_id: drop });
    assert.equal(merged.statusCode, 200, merged.body);
    assert.deepEqual(merged.json(), {
      patient_id: survivor,
      merged_patient_id: duplicate,
      moved: { appointments: 1, reviews: 1, cases: 1, devices: 1, documents: 0 },
    });

    // Appointments: both are the survivor's now, each keeping the details it was booked with.
    const listed = await call('GET', `/dr/v1/appointment/patient/${survivor}`);
    assert.deepEqual(
      listed.json().data.map((a: { appointment_id: string }) => a.appointment_id),
      [moved, kept],
    );
    const movedRecord = (await call('GET', `/dr/v1/appointment/${moved}`)).json();
    assert.equal(movedRecord.patient_id, survivor);
    assert.equal(movedRecord.patient_details.first_name, 'Laxmi');
    // The duplicate: archived, pointing at the survivor; its ids name the survivor's records.
    const read = await call('GET', `/dr/v1/patient/${duplicate}`);
    assert.equal(read.statusCode, 200);
    assert.equal(read.json().merged_into, survivor);
    assert.equal((await call('PATCH', `/dr/v1/patient/${duplicate}`, { first_name: 'X' })).json().error.code, 'PATIENT_MERGED');
    for (const pt of [drop, duplicate, keep, survivor]) {
      assert.equal((await readCase(pt, 'dup-case')).statusCode, 200, `the duplicate's case by ${pt}`);
      assert.equal((await readCase(pt, 'own-case')).statusCode, 200, `the survivor's case by ${pt}`);
    }
    const device = await db.selectFrom('push_devices').select('patient_ref').where('id', '=', 'dev_merge').executeTakeFirstOrThrow();
    assert.equal(device.patient_ref, keep);
    const review = await db.selectFrom('reviews').select('patient_id').where('id', '=', 'rev_merge').executeTakeFirstOrThrow();
    assert.equal(review.patient_id, survivor);
    // A booking under the duplicate's partner id goes to the survivor.
    const later = await book(t, practice, {
      appointment_details: { start_time: START + 7200, end_time: START + 8100 },
      patient_details: { partner_patient_id: drop },
    });
    assert.equal((await call('GET', `/dr/v1/appointment/${later}`)).json().patient_id, survivor);
    // The by-mobile look-up shows the survivor only.
    const family = await call('GET', '/profiles/v1/patient/by-mobile/?mob=%2B919811111111');
    assert.deepEqual(
      family.json().map((p: { oid: string }) => p.oid),
      [survivor],
    );

    const recorded = await events(t, client.businessId, 'patient.merged');
    assert.equal(recorded.length, 1);
    assert.deepEqual(recorded[0]!.payload.data, {
      patient_id: survivor,
      partner_patient_id: keep,
      merged_patient_id: duplicate,
      merged_partner_patient_id: drop,
      moved: { appointments: 1, reviews: 1, cases: 1, devices: 1, documents: 0 },
    });
    assert.equal(recorded[0]!.payload.client_id, client.clientId);

    // Again: nothing more moves, no second event.
    const again = await call('POST', `/profiles/v1/patient/${keep}/merge?partner_id=1`, { duplicate_oid: drop });
    assert.equal(again.statusCode, 200, again.body);
    assert.deepEqual(again.json().moved, { appointments: 0, reviews: 0, cases: 0, devices: 0, documents: 0 });
    assert.equal((await events(t, client.businessId, 'patient.merged')).length, 1);
  });

  it('refuses what would lose or tangle records: shared case ids, a merged survivor, the same patient', async () => {
    const a = await createDr(t, client.token, { partner_patient_id: partnerId() });
    const b = await createDr(t, client.token, { partner_patient_id: partnerId() });
    assert.equal((await storeCase(a, 'same-id')).statusCode, 201);
    assert.equal((await storeCase(b, 'same-id')).statusCode, 201);
    const clash = await call('POST', `/dr/v1/patient/${a}/merge`, { duplicate_patient_id: b });
    assert.equal(clash.statusCode, 409);
    assert.equal(clash.json().error.code, 'CASES_CONFLICT');
    assert.match(clash.json().error.message, /same-id/);
    assert.equal((await call('GET', `/dr/v1/patient/${b}`)).json().merged_into, undefined, 'nothing changed');

    const self = await call('POST', `/profiles/v1/patient/${a}/merge`, { duplicate_oid: a });
    assert.equal(self.statusCode, 400);
    assert.equal(self.json().error.code, 'invalid_request');

    const c = await createDr(t, client.token);
    const d = await createDr(t, client.token);
    assert.equal((await call('POST', `/dr/v1/patient/${c}/merge`, { duplicate_patient_id: d })).statusCode, 200);
    const intoMerged = await call('POST', `/dr/v1/patient/${d}/merge`, { duplicate_patient_id: a });
    assert.equal(intoMerged.statusCode, 409, 'd was merged away');
    assert.equal(intoMerged.json().error.code, 'PATIENT_MERGED');
    const mergedElsewhere = await call('POST', `/dr/v1/patient/${a}/merge`, { duplicate_patient_id: d });
    assert.equal(mergedElsewhere.statusCode, 409, 'd belongs to c now');
    assert.equal(mergedElsewhere.json().error.code, 'PATIENT_MERGED');
    assert.equal((await call('POST', `/dr/v1/patient/pt_unknown/merge`, { duplicate_patient_id: a })).statusCode, 404);
  });

  it('two opposite merges at once: one wins, the other is refused, no record is lost', async () => {
    for (let round = 0; round < 5; round++) {
      const a = await createDr(t, client.token, { partner_patient_id: partnerId('a') });
      const b = await createDr(t, client.token, { partner_patient_id: partnerId('b') });
      await book(t, practice, { patient_details: { partner_patient_id: (await call('GET', `/dr/v1/patient/${a}`)).json().partner_patient_id } });
      await book(t, practice, { patient_details: { partner_patient_id: (await call('GET', `/dr/v1/patient/${b}`)).json().partner_patient_id } });
      const [ab, ba] = await Promise.all([
        call('POST', `/dr/v1/patient/${a}/merge`, { duplicate_patient_id: b }),
        call('POST', `/dr/v1/patient/${b}/merge`, { duplicate_patient_id: a }),
      ]);
      assert.deepEqual([ab.statusCode, ba.statusCode].sort(), [200, 409], `${ab.body} ${ba.body}`);
      const winner = ab.statusCode === 200 ? a : b;
      const listed = await call('GET', `/dr/v1/appointment/patient/${winner}`);
      assert.equal(listed.json().data.length, 2);
    }
  });

  it('an appointment change racing a merge of its patient: both apply, none fails', async () => {
    const drop = partnerId('race');
    const survivor = await createDr(t, client.token);
    await createDr(t, client.token, { partner_patient_id: drop });
    const appointments = await Promise.all(
      [0, 1, 2, 3].map((i) =>
        book(t, practice, {
          appointment_details: { start_time: START + 90_000 + i * 1000, end_time: START + 90_500 + i * 1000 },
          patient_details: { partner_patient_id: drop },
        }),
      ),
    );
    const changes = appointments.map((id) =>
      call('PATCH', `/dr/v1/appointment/${id}`, { patient_details: { first_name: 'Changed' }, partner_meta: { n: id } }),
    );
    const [merge, ...patched] = await Promise.all([call('POST', `/dr/v1/patient/${survivor}/merge`, { duplicate_patient_id: drop }), ...changes]);
    assert.equal(merge.statusCode, 200, merge.body);
    for (const response of patched) assert.equal(response.statusCode, 200, response.body);
    for (const id of appointments) assert.equal((await call('GET', `/dr/v1/appointment/${id}`)).json().patient_id, survivor);
  });
});
