import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { findPatientByAnyId } from '../../../src/modules/patients/repo.ts';
import { detailsOf } from '../../../src/modules/patients/service.ts';
import { createTestApp, createTestClient, DIALECT, type TestApp } from '../../support.ts';
import { book, createPractice, events, request, START, type Practice } from './support.ts';

describe(`appointments: happy paths (${DIALECT})`, () => {
  let t: TestApp;
  let p: Practice;
  before(async () => {
    t = await createTestApp();
    p = await createPractice(t);
  });
  after(async () => t.close());

  const call = (method: string, url: string, payload?: unknown) => request(t, p.client.token, method, url, payload);
  const read = async (id: string) => (await call('GET', `/dr/v1/appointment/${id}`)).json();

  it('books (201, status BK) and reads the full record by either id', async () => {
    const response = await call('POST', '/dr/v1/appointment/', {
      partner_appointment_id: 'pa-happy-1',
      partner_clinic_id: p.partnerClinicId,
      partner_doctor_id: p.partnerDoctorId,
      appointment_details: {
        start_time: START,
        end_time: START + 600,
        mode: 'VIDEO',
        custom_attributes: { label: ['first visit'], tags: ['vip'] },
        video_connect: { vendor: 'meet', url: 'https://meet.example/abc' },
      },
      patient_details: {
        designation: 'Mr',
        first_name: 'Ravi',
        middle_name: '',
        last_name: 'Kumar',
        mobile: '+919812345678',
        gender: 'M',
        dob: '1990-04-01',
        address: { city: 'Pune', pincode: 411001 },
        partner_patient_id: 'pp-happy-1',
      },
      token: 7,
      partner_meta: { ehr: { visit: 'v-1' }, flags: [1, 2] },
      display_meta: { visit_type: 'Follow up', fee: 500, weight_kg: 71.5 },
      notes: 'Bring reports',
    });
    assert.equal(response.statusCode, 201, response.body);
    const id = response.json().appointment_id;
    assert.deepEqual(Object.keys(response.json()), ['appointment_id']);
    const record = await read(id);
    const patientId = record.patient_id;
    assert.match(patientId, /^pt_/);
    assert.ok(Number.isInteger(record.created_at) && record.created_at < 10_000_000_000, 'epoch seconds');
    assert.equal(record.updated_at, record.created_at);
    const { created_at: _c, updated_at: _u, ...rest } = record;
    assert.deepEqual(rest, {
      appointment_id: id,
      partner_appointment_id: 'pa-happy-1',
      clinic_id: p.clinicId,
      partner_clinic_id: p.partnerClinicId,
      doctor_id: p.doctorId,
      partner_doctor_id: p.partnerDoctorId,
      patient_id: patientId,
      partner_patient_id: 'pp-happy-1',
      status: 'BK',
      mode: 'tele',
      start_time: START,
      end_time: START + 600,
      token: 7,
      patient_details: {
        designation: 'Mr',
        first_name: 'Ravi',
        middle_name: '',
        last_name: 'Kumar',
        mobile: '+919812345678',
        gender: 'M',
        dob: '1990-04-01',
        address: { city: 'Pune', pincode: 411001 },
        partner_patient_id: 'pp-happy-1',
      },
      custom_attributes: { label: ['first visit'], tags: ['vip'] },
      video_connect: { vendor: 'meet', url: 'https://meet.example/abc' },
      display_meta: { visit_type: 'Follow up', fee: 500, weight_kg: 71.5 },
      partner_meta: { ehr: { visit: 'v-1' }, flags: [1, 2] },
      notes: 'Bring reports',
    });
    for (const url of [`/dr/v1/appointment/${id}/`, '/dr/v1/appointment/pa-happy-1?partner_id=1', '/dr/v1/appointment/pa-happy-1/?partner_id=1']) {
      const again = await call('GET', url);
      assert.equal(again.statusCode, 200, url);
      assert.deepEqual(again.json(), record);
    }
  });

  it('omits keys without a value and defaults the mode to in_clinic', async () => {
    const id = await book(t, p, { patient_details: { first_name: 'Anon' } });
    const record = await read(id);
    assert.equal(record.mode, 'in_clinic');
    assert.deepEqual(record.custom_attributes, {});
    assert.deepEqual(record.display_meta, {});
    assert.deepEqual(record.partner_meta, {});
    assert.deepEqual(record.patient_details, { first_name: 'Anon' });
    for (const key of ['partner_appointment_id', 'partner_patient_id', 'token', 'video_connect', 'notes']) {
      assert.ok(!(key in record), `${key} is omitted`);
    }
    assert.equal(record.partner_clinic_id, p.partnerClinicId);
    const phone = await read(await book(t, p, { appointment_details: { start_time: START, end_time: START + 60, mode: 'PHONE' } }));
    assert.equal(phone.mode, 'tele');
  });

  it('treats any other partner_id value as the service id', async () => {
    const id = await book(t, p, { partner_appointment_id: 'pa-happy-2' });
    assert.equal((await call('GET', `/dr/v1/appointment/${id}?partner_id=0`)).statusCode, 200);
    assert.equal((await call('GET', '/dr/v1/appointment/pa-happy-2?partner_id=true')).statusCode, 404);
  });

  it('keeps patients per business, matched by partner_patient_id', async () => {
    const first = await read(await book(t, p, { patient_details: { first_name: 'Sita', mobile: '+919800000002', partner_patient_id: 'pp-match' } }));
    const second = await read(await book(t, p, { patient_details: { last_name: 'Devi', partner_patient_id: 'pp-match' } }));
    assert.equal(second.patient_id, first.patient_id);
    assert.deepEqual(second.patient_details, { first_name: 'Sita', mobile: '+919800000002', partner_patient_id: 'pp-match', last_name: 'Devi' });
    const unmatched = await read(await book(t, p, { patient_details: { first_name: 'Sita' } }));
    assert.notEqual(unmatched.patient_id, first.patient_id, 'without a partner id every booking is a new patient');
    const byService = await findPatientByAnyId(t.ctx.storage.db, p.client.businessId, first.patient_id);
    const byPartner = await findPatientByAnyId(t.ctx.storage.db, p.client.businessId, 'pp-match');
    assert.equal(byService?.id, first.patient_id);
    assert.equal(byPartner?.id, first.patient_id);
    assert.equal(await findPatientByAnyId(t.ctx.storage.db, 'biz_other', 'pp-match'), undefined);
  });

  it('moves to another patient when a new partner_patient_id is sent, keeping the details it had', async () => {
    const id = await book(t, p, { patient_details: { first_name: 'Meera', last_name: 'Nair', partner_patient_id: 'pp-move-a' } });
    const before = await read(id);
    const response = await call('PATCH', `/dr/v1/appointment/${id}`, { patient_details: { partner_patient_id: 'pp-move-b', gender: 'F' } });
    assert.equal(response.statusCode, 200);
    const after = response.json();
    assert.notEqual(after.patient_id, before.patient_id);
    assert.equal(after.partner_patient_id, 'pp-move-b');
    assert.deepEqual(after.patient_details, { first_name: 'Meera', last_name: 'Nair', partner_patient_id: 'pp-move-b', gender: 'F' });
    const moved = await findPatientByAnyId(t.ctx.storage.db, p.client.businessId, 'pp-move-b');
    assert.deepEqual(detailsOf(moved!), after.patient_details);
  });

  it('updates partially: objects replaced, patient details field by field, reschedule', async () => {
    const id = await book(t, p, {
      partner_appointment_id: 'pa-upd',
      appointment_details: {
        start_time: START,
        end_time: START + 900,
        custom_attributes: { label: ['a'], tags: ['x'] },
        video_connect: { vendor: 'zoom' },
      },
      patient_details: {
        first_name: 'Ravi',
        last_name: 'Kumar',
        dob: '1990-04-01',
        address: { city: 'Pune', pincode: 411001 },
        partner_patient_id: 'pp-upd',
      },
      partner_meta: { a: 1, b: 2 },
      display_meta: { one: 'x', two: 2 },
      token: 3,
    });
    const response = await call('PATCH', `/dr/v1/appointment/${id}`, {
      partner_meta: { c: 3 },
      custom_attributes: { tags: ['y'] },
      display_meta: { three: 3.5 },
      video_connect: { url: 'http://video.example/room', pt_joined: START + 10 },
      patient_details: { last_name: 'Sharma', age: 35, address: { city: 'Mumbai' } },
      token: 0,
      start_time: START + 3600,
      end_time: START + 4500,
      notes: 'moved',
      unknown_field: 'ignored',
    });
    assert.equal(response.statusCode, 200, response.body);
    const record = response.json();
    assert.deepEqual(record.partner_meta, { c: 3 });
    assert.deepEqual(record.custom_attributes, { tags: ['y'] });
    assert.deepEqual(record.display_meta, { three: 3.5 });
    assert.deepEqual(record.video_connect, { url: 'http://video.example/room', pt_joined: START + 10 });
    assert.deepEqual(
      record.patient_details,
      {
        first_name: 'Ravi',
        last_name: 'Sharma',
        age: 35,
        address: { city: 'Mumbai', pincode: 411001 },
        partner_patient_id: 'pp-upd',
      },
      'age clears dob; other fields kept',
    );
    assert.equal(record.token, 0);
    assert.equal(record.start_time, START + 3600);
    assert.equal(record.end_time, START + 4500);
    assert.equal(record.notes, 'moved');
    assert.equal(record.status, 'BK');
    assert.deepEqual(await read(id), record, 'read answers what update answered');

    const patient = await findPatientByAnyId(t.ctx.storage.db, p.client.businessId, 'pp-upd');
    assert.deepEqual(patient!.last_name, 'Sharma', "the business's patient record changes too");

    const dobAgain = await call('PATCH', '/dr/v1/appointment/pa-upd?partner_id=1', { patient_details: { dob: '1989-12-31' } });
    assert.equal(dobAgain.statusCode, 200);
    assert.equal(dobAgain.json().patient_details.dob, '1989-12-31');
    assert.ok(!('age' in dobAgain.json().patient_details), 'dob clears age');
    const onlyEnd = await call('PATCH', `/dr/v1/appointment/${id}`, { end_time: START + 7200 });
    assert.equal(onlyEnd.json().start_time, START + 3600);
    assert.equal(onlyEnd.json().end_time, START + 7200);
  });

  it("leaves the patient's row as it is when the details sent are those it has, and changes it when one differs", async () => {
    const id = await book(t, p, { patient_details: { first_name: 'Kiran', last_name: 'Rao', dob: '1985-02-03', partner_patient_id: 'pp-same' } });
    const stored = async () => (await findPatientByAnyId(t.ctx.storage.db, p.client.businessId, 'pp-same'))!;
    const before = await stored();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const same = await call('PATCH', `/dr/v1/appointment/${id}`, { patient_details: { last_name: 'Rao', dob: '1985-02-03' }, notes: 'n' });
    assert.equal(same.statusCode, 200, same.body);
    assert.deepEqual(await stored(), before, 'the same details write nothing');
    const changed = await call('PATCH', `/dr/v1/appointment/${id}`, { patient_details: { last_name: 'Rao', first_name: 'Kiran K' } });
    assert.equal(changed.statusCode, 200, changed.body);
    const after = await stored();
    assert.equal(after.first_name, 'Kiran K');
    assert.ok(Number(after.updated_at) > Number(before.updated_at));
  });

  it('moves the appointment to the patient named by a new partner_patient_id', async () => {
    const other = await read(await book(t, p, { patient_details: { first_name: 'Other', partner_patient_id: 'pp-other' } }));
    const id = await book(t, p, { patient_details: { first_name: 'Nameless' } });
    const before = await read(id);
    const claimed = (await call('PATCH', `/dr/v1/appointment/${id}`, { patient_details: { partner_patient_id: 'pp-new' } })).json();
    assert.equal(claimed.patient_id, before.patient_id, 'a patient without a partner id takes the one sent');
    assert.equal(claimed.partner_patient_id, 'pp-new');
    const moved = (await call('PATCH', `/dr/v1/appointment/${id}`, { patient_details: { partner_patient_id: 'pp-other' } })).json();
    assert.equal(moved.patient_id, other.patient_id);
    assert.equal(moved.partner_patient_id, 'pp-other');
    // patient_details changes only the fields it names, on the appointment and on the patient record.
    assert.equal(moved.patient_details.first_name, 'Nameless');
    const otherPatient = await findPatientByAnyId(t.ctx.storage.db, p.client.businessId, 'pp-other');
    assert.equal(otherPatient!.first_name, 'Other');
  });

  it('marks no-show from any state, cancels, and completes from any state', async () => {
    const id = await book(t, p);
    const ns = await call('POST', `/dr/v1/appointment/${id}/change-status`, { status: 'NS' });
    assert.equal(ns.statusCode, 200);
    assert.equal(ns.json().status, 'NS');
    const completed = await call('POST', `/dr/v1/appointment/${id}/complete`);
    assert.equal(completed.statusCode, 200);
    assert.equal(completed.json().status, 'CM');
    const nsAgain = await call('POST', `/dr/v1/appointment/${id}/change-status/`, { status: 'NS' });
    assert.equal(nsAgain.json().status, 'NS');
    const cancelled = await call('PUT', `/dr/v1/appointment/${id}/cancel`);
    assert.equal(cancelled.statusCode, 200);
    assert.equal(cancelled.json().status, 'CN');
    assert.equal((await call('POST', `/dr/v1/appointment/${id}/complete`)).json().status, 'CM');
    assert.equal((await read(id)).status, 'CM');
  });

  it('the first completion records one external_review.request; later ones record nothing', async () => {
    const practice = await createPractice(t);
    const id = await book(t, practice);
    const before = Math.floor(Date.now() / 1000);
    const first = await request(t, practice.client.token, 'POST', `/dr/v1/appointment/${id}/complete`, '');
    assert.equal(first.statusCode, 200);
    const record = first.json();
    const second = await t.app.inject({
      method: 'POST',
      url: `/dr/v1/appointment/${id}/complete/`,
      headers: { auth: practice.client.token, 'content-type': 'application/json' },
      payload: '',
    });
    assert.equal(second.statusCode, 200);
    assert.deepEqual(second.json(), record, 'completing again changes nothing');
    await request(t, practice.client.token, 'POST', `/dr/v1/appointment/${id}/change-status`, { status: 'NS' });
    await request(t, practice.client.token, 'POST', `/dr/v1/appointment/${id}/complete`);
    const recorded = await events(t, practice.client.businessId);
    assert.equal(recorded.length, 1);
    const event = recorded[0]!;
    assert.equal(event.type, 'external_review.request');
    const row = await t.ctx.storage.db.selectFrom('appointments').select('review_token').where('id', '=', id).executeTakeFirstOrThrow();
    assert.ok(row.review_token.length >= 32, 'an unguessable review token');
    assert.equal((await t.app.inject({ method: 'GET', url: `/reviews/${row.review_token}` })).statusCode, 200, 'the token opens the review page');
    assert.equal((await t.app.inject({ method: 'GET', url: '/reviews/unknown-token' })).statusCode, 404);
    assert.ok(event.payload.event_time >= before && event.payload.event_time <= before + 5);
    assert.deepEqual(event.payload, {
      event: 'external_review.request',
      event_time: event.payload.event_time,
      timestamp: event.payload.event_time,
      client_id: practice.client.clientId,
      business_id: practice.client.businessId,
      data: {
        doctor_id: practice.doctorId,
        external_review_link: `http://cps.test/reviews/${row.review_token}`,
        patient_id: record.patient_id,
        appointment_id: id,
        clinic_id: practice.clinicId,
      },
    });
  });

  it('uses the doctor review link, else the clinic one; the caller is the client_id', async () => {
    const both = await createPractice(t, {
      clinic: { review_link: 'https://r.example/clinic' },
      doctor: { review_link: 'https://r.example/doctor' },
    });
    const clinicOnly = await createPractice(t, { clinic: { review_link: 'https://r.example/clinic' } });
    const completer = await createTestClient(t.ctx, { businessId: both.client.businessId, scopes: ['appointment:complete'] });
    await request(t, completer.token, 'POST', `/dr/v1/appointment/${await book(t, both)}/complete`);
    await request(t, clinicOnly.client.token, 'POST', `/dr/v1/appointment/${await book(t, clinicOnly)}/complete`);
    const [a] = await events(t, both.client.businessId);
    const [b] = await events(t, clinicOnly.client.businessId);
    assert.equal(a!.payload.data.external_review_link, 'https://r.example/doctor');
    assert.equal(a!.payload.client_id, completer.clientId);
    assert.equal(b!.payload.data.external_review_link, 'https://r.example/clinic');
  });

  it('a manual review request answers 202 with the id of the event it recorded, each time', async () => {
    const practice = await createPractice(t);
    const id = await book(t, practice, { partner_appointment_id: 'pa-review' });
    const first = await request(t, practice.client.token, 'POST', `/dr/v1/appointment/${id}/review-request`);
    assert.equal(first.statusCode, 202);
    const second = await request(t, practice.client.token, 'POST', '/dr/v1/appointment/pa-review/review-request?partner_id=1');
    assert.equal(second.statusCode, 202);
    const recorded = await events(t, practice.client.businessId);
    assert.deepEqual(recorded.map((e) => e.id).sort(), [first.json().event_id, second.json().event_id].sort());
    assert.equal(recorded[0]!.payload.data.appointment_id, id);
  });

  it('lists by start time, 50 a page, filtered by clinic, doctor, patient and dates in the configured zone', async () => {
    const practice = await createPractice(t);
    const second = await createPractice(t, { client: practice.client });
    // 2030-03-17 00:00 in Asia/Kolkata is 2030-03-16T18:30:00Z.
    const midnight = Date.UTC(2030, 2, 16, 18, 30) / 1000;
    const late = await book(t, practice, {
      appointment_details: { start_time: midnight - 60, end_time: midnight + 600 },
      patient_details: { first_name: 'A', partner_patient_id: 'pp-list' },
    });
    const early = await book(t, practice, { appointment_details: { start_time: midnight, end_time: midnight + 600 } });
    const other = await book(t, second, { appointment_details: { start_time: midnight + 3600, end_time: midnight + 4000 } });
    const list = async (query: string) => {
      const response = await request(t, practice.client.token, 'GET', `/dr/v1/appointment${query}`);
      assert.equal(response.statusCode, 200, response.body);
      return response.json().appointments.map((a: { appointment_id: string }) => a.appointment_id);
    };
    assert.deepEqual(await list(''), [late, early, other]);
    assert.deepEqual(await list(`?clinic_id=${second.clinicId}`), [other]);
    assert.deepEqual(await list(`?clinic_id=${second.partnerClinicId}`), [other]);
    assert.deepEqual(await list(`?doctor_id=${practice.doctorId}`), [late, early]);
    assert.deepEqual(await list('?patient_id=pp-list'), [late]);
    assert.deepEqual(await list('?start_date=2030-03-17'), [early, other]);
    assert.deepEqual(await list('?end_date=2030-03-16'), [late]);
    assert.deepEqual(await list('?start_date=2030-03-16&end_date=2030-03-16'), [late]);
    assert.deepEqual(await list(`?start_date=2030-03-17&end_date=2030-03-17&doctor_id=${second.doctorId}`), [other]);
    const full = (await request(t, practice.client.token, 'GET', '/dr/v1/appointment')).json().appointments[0];
    assert.deepEqual(full, await (await request(t, practice.client.token, 'GET', `/dr/v1/appointment/${late}`)).json());

    const paged = await createPractice(t);
    for (let i = 0; i < 51; i++)
      await book(t, paged, { appointment_details: { start_time: START + (51 - i) * 60, end_time: START + (51 - i) * 60 + 30 } });
    const page0 = (await request(t, paged.client.token, 'GET', '/dr/v1/appointment?page_no=0')).json().appointments;
    const page1 = (await request(t, paged.client.token, 'GET', '/dr/v1/appointment/?page_no=1')).json().appointments;
    assert.equal(page0.length, 50);
    assert.equal(page1.length, 1);
    assert.equal(page0[0].start_time, START + 60);
    assert.equal(page1[0].start_time, START + 51 * 60);
  });

  it('pages a filtered listing by start time then id, each filter by either id, other practices left out', async () => {
    const desk = await createPractice(t);
    const next = await createPractice(t, { client: desk.client });
    const ids: Array<{ id: string; start: number }> = [];
    // Two times shared by many: the page boundary falls among appointments of one start time.
    for (let i = 0; i < 52; i++) {
      const start = START + (i % 2) * 900;
      const patient = i < 2 ? { first_name: 'Mira', partner_patient_id: 'pp-pages' } : { first_name: `P${i}` };
      ids.push({ id: await book(t, desk, { appointment_details: { start_time: start, end_time: start + 900 }, patient_details: patient }), start });
      if (i < 3) await book(t, next, { appointment_details: { start_time: start, end_time: start + 900 } });
    }
    const expected = [...ids].sort((a, b) => a.start - b.start || (a.id < b.id ? -1 : 1)).map((a) => a.id);
    const list = async (query: string) => {
      const response = await request(t, desk.client.token, 'GET', `/dr/v1/appointment?${query}`);
      assert.equal(response.statusCode, 200, response.body);
      return response.json().appointments.map((a: { appointment_id: string }) => a.appointment_id);
    };
    for (const [clinic, doctor] of [
      [desk.clinicId, desk.doctorId],
      [desk.partnerClinicId, desk.partnerDoctorId],
    ]) {
      const filter = `clinic_id=${clinic}&doctor_id=${doctor}&start_date=2030-03-17&end_date=2030-03-18`;
      assert.deepEqual([...(await list(`${filter}&page_no=0`)), ...(await list(`${filter}&page_no=1`))], expected);
      assert.deepEqual(await list(`${filter}&page_no=2`), []);
    }
    const mira = expected.filter((id) => id === ids[0]!.id || id === ids[1]!.id);
    const patientId = (await (await request(t, desk.client.token, 'GET', `/dr/v1/appointment/${mira[0]}`)).json()).patient_id;
    assert.deepEqual(await list('patient_id=pp-pages'), mira);
    assert.deepEqual(await list(`patient_id=${patientId}&doctor_id=${desk.partnerDoctorId}`), mira);
    assert.deepEqual(await list(`patient_id=${patientId}&doctor_id=${next.doctorId}`), []);
  });
});
