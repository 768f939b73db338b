/**
 * Booking into a schedule: the slots endpoint (validated against Eka's schema), SLOT_UNAVAILABLE,
 * places freed, OPD tokens, rescheduling with lineage, the listing's filters, isolation, and many
 * bookers racing for one slot.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestClient, DIALECT, type TestApp } from '../../support.ts';
import { assertValid, ekaResponse } from '../clinics/eka-schemas.ts';
import { bookAt, MONDAY, MONDAY_0900, schedulePath, setSchedule, slotPath, WEEKLY } from '../schedules/support.ts';
import { Value } from 'typebox/value';
import { Slots } from '../../../src/modules/appointments/routes.ts';
import { findView } from '../../../src/modules/appointments/repo.ts';
import { MAX_RESCHEDULES } from '../../../src/modules/appointments/service.ts';
import { Scheduling } from '../../../src/modules/appointments/scheduling.ts';
import { ScheduleService } from '../../../src/modules/schedules/service.ts';
import { runRetention } from '../../../src/modules/retention/index.ts';
import { createLogger } from '../../../src/logger.ts';
import { book, createPractice, events, request, START, type Practice } from './support.ts';

const SLOT = 15 * 60;

describe(`appointments: scheduling (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(async () => t.close());

  const call = (p: Practice, method: string, url: string, payload?: unknown, token = p.client.token) => request(t, token, method, url, payload);
  const scheduled = async () => {
    const p = await createPractice(t);
    await setSchedule(t, p);
    return p;
  };

  it("serves the slots in Eka's shape, with places left, by service and by partner ids", async () => {
    const p = await scheduled();
    assert.equal((await bookAt(t, p, MONDAY_0900)).statusCode, 201);
    const response = await call(p, 'GET', slotPath(p, MONDAY, '2030-01-08'));
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
    const body = response.json();
    assert.ok(Value.Check(Slots, body as unknown), 'the answer matches its documented schema (written without it)');
    // Eka's schema's shape under the doctor's id; its example's (what Eka's clients read) under the clinic's.
    const { [p.clinicId]: services, ...bySchema } = body.data.schedule;
    assertValid(
      ekaResponse('/dr/v1/doctor/{doctor_id}/clinic/{clinic_id}/appointment/slot', 'get', '200').schema,
      { ...body, data: { ...body.data, schedule: bySchema } },
      'slots',
    );
    const days = body.data.schedule[p.doctorId];
    assert.deepEqual(services, [
      {
        service_type: 'consultation',
        service_name: 'consultation',
        conf_id: Object.keys(body.data.services)[0],
        fee: null,
        slots: [...days[MONDAY], ...days['2030-01-08']],
      },
    ]);
    assert.deepEqual(Object.keys(days), [MONDAY, '2030-01-08']);
    assert.equal(days[MONDAY].length, 12, '09:00 to 12:00 in 15 minutes');
    assert.deepEqual(days[MONDAY][0], {
      available: true,
      conf_id: Object.keys(body.data.services)[0],
      s: '2030-01-07T09:00:00+05:30',
      e: '2030-01-07T09:15:00+05:30',
      slots_booked: 1,
      start_time: MONDAY_0900,
      end_time: MONDAY_0900 + SLOT,
      capacity: 3,
      places_left: 2,
    });
    const byPartner = await call(
      p,
      'GET',
      `/dr/v1/doctor/${p.partnerDoctorId}/clinic/${p.partnerClinicId}/appointment/slot?start_date=${MONDAY}&end_date=${MONDAY}&partner_id=1`,
    );
    assert.deepEqual(byPartner.json().data.schedule[p.doctorId][MONDAY], days[MONDAY]);
    assert.deepEqual(byPartner.json().data.schedule[p.partnerClinicId][0].slots, days[MONDAY]);
    // A pair without a schedule offers no slots (it books at any time).
    const free = await createPractice(t);
    assert.deepEqual((await call(free, 'GET', slotPath(free))).json(), { success: 'true', status_code: 200, data: { schedule: {}, services: {} } });
  });

  it('writes a service name in any script as UTF-8 in the slots answer', async () => {
    const p = await createPractice(t);
    await setSchedule(t, p, { ...WEEKLY, service_name: 'परामर्श · Zoë ☕' });
    const response = await call(p, 'GET', slotPath(p));
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.json().data.schedule[p.clinicId][0].service_name, 'परामर्श · Zoë ☕');
    assert.equal(Buffer.byteLength(response.body), response.rawPayload.length, 'the bytes are the text in UTF-8');
  });

  it('refuses a time outside the schedule and a full slot with 409 SLOT_UNAVAILABLE; cancelling frees a place', async () => {
    const p = await scheduled();
    for (const [start, minutes] of [
      [MONDAY_0900 + 300, 15],
      [MONDAY_0900, 30],
      [MONDAY_0900 - 3600, 15],
      [MONDAY_0900 + 86_400 * 6, 15],
    ] as const) {
      const refused = await bookAt(t, p, start, {}, minutes);
      assert.equal(refused.statusCode, 409, refused.body);
      assert.equal(refused.json().error.code, 'SLOT_UNAVAILABLE');
    }
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const booked = await bookAt(t, p, MONDAY_0900);
      assert.equal(booked.statusCode, 201, booked.body);
      ids.push(booked.json().appointment_id);
    }
    const full = await bookAt(t, p, MONDAY_0900);
    assert.deepEqual([full.statusCode, full.json().error.code], [409, 'SLOT_UNAVAILABLE']);
    assert.match(full.json().error.message, /full/);
    assert.equal((await call(p, 'PUT', `/dr/v1/appointment/${ids[1]}/cancel`)).statusCode, 200);
    const again = await bookAt(t, p, MONDAY_0900);
    assert.equal(again.statusCode, 201, 'the cancelled one freed its place');
    const record = (await call(p, 'GET', `/dr/v1/appointment/${again.json().appointment_id}`)).json();
    assert.equal(record.token, 4, 'tokens are never given twice, even after a cancellation');
    // The same pair books at any time again once its schedule is deleted.
    assert.equal((await call(p, 'DELETE', `/cdr/v1/doctor/${p.doctorId}/clinic/${p.clinicId}/schedule`)).statusCode, 200);
    assert.equal((await bookAt(t, p, MONDAY_0900 + 300)).statusCode, 201);
  });

  it('gives OPD tokens in booking order within a session, and refuses a token sent for a scheduled pair', async () => {
    const p = await scheduled();
    const tokens: number[] = [];
    for (const offset of [2 * SLOT, 0, SLOT, 0]) {
      const booked = await bookAt(t, p, MONDAY_0900 + offset);
      tokens.push((await call(p, 'GET', `/dr/v1/appointment/${booked.json().appointment_id}`)).json().token);
    }
    assert.deepEqual(tokens, [1, 2, 3, 4]);
    const tuesday = await bookAt(t, p, MONDAY_0900 + 86_400);
    assert.equal((await call(p, 'GET', `/dr/v1/appointment/${tuesday.json().appointment_id}`)).json().token, 1, 'a new session counts from 1');
    const sent = await bookAt(t, p, MONDAY_0900, { token: 7 });
    assert.equal(sent.statusCode, 400);
    assert.match(sent.json().error.message, /^token: /);
    // Nor may a change overwrite the token the schedule gave.
    const changed = await call(p, 'PATCH', `/dr/v1/appointment/${tuesday.json().appointment_id}`, { token: 2 });
    assert.equal(changed.statusCode, 400);
    assert.match(changed.json().error.message, /^token: /);
    assert.equal((await call(p, 'GET', `/dr/v1/appointment/${tuesday.json().appointment_id}`)).json().token, 1);
  });

  it('moves an appointment by PATCH start_time under the same rules', async () => {
    const p = await scheduled();
    const id = (await bookAt(t, p, MONDAY_0900)).json().appointment_id;
    for (let i = 0; i < 3; i++) await bookAt(t, p, MONDAY_0900 + SLOT);
    const full = await call(p, 'PATCH', `/dr/v1/appointment/${id}`, { start_time: MONDAY_0900 + SLOT, end_time: MONDAY_0900 + 2 * SLOT });
    assert.deepEqual([full.statusCode, full.json().error.code], [409, 'SLOT_UNAVAILABLE']);
    const moved = await call(p, 'PATCH', `/dr/v1/appointment/${id}`, { start_time: MONDAY_0900 + 2 * SLOT, end_time: MONDAY_0900 + 3 * SLOT });
    assert.equal(moved.statusCode, 200, moved.body);
    assert.equal(moved.json().token, 5);
  });

  it('reschedules with lineage: a new appointment, the old one RES; both Eka operations', async () => {
    const p = await scheduled();
    const first = await book(t, p, {
      partner_appointment_id: 'pa-1',
      appointment_details: { start_time: MONDAY_0900, end_time: MONDAY_0900 + SLOT },
      partner_meta: { visit: 7 },
      display_meta: { fee: 500 },
      notes: 'fasting',
    });
    const second = await call(p, 'PUT', `/dr/v1/appointment/pa-1/reschedule?partner_id=1`, {
      start_time: MONDAY_0900 + SLOT,
      end_time: MONDAY_0900 + 2 * SLOT,
      partner_clinic_id: p.partnerClinicId,
      partner_doctor_id: p.partnerDoctorId,
    });
    assert.equal(second.statusCode, 200, second.body);
    const next = second.json();
    assert.notEqual(next.appointment_id, first);
    assert.deepEqual(next.prev_aids, [first]);
    assert.equal(next.status, 'BK');
    assert.equal(next.partner_appointment_id, 'pa-1', 'the partner id follows the appointment');
    assert.deepEqual([next.partner_meta, next.display_meta, next.notes], [{ visit: 7 }, { fee: 500 }, 'fasting']);
    assert.equal(next.start_time, MONDAY_0900 + SLOT);
    const old = (await call(p, 'GET', `/dr/v1/appointment/${first}`)).json();
    assert.deepEqual([old.status, old.next_aid, old.partner_appointment_id], ['RES', next.appointment_id, undefined]);
    assert.equal(old.patient_id, next.patient_id);

    const third = await call(p, 'PATCH', `/appointments/v1/pa-1/reschedule`, {
      start_time: MONDAY_0900 + 2 * SLOT,
      end_time: MONDAY_0900 + 3 * SLOT,
      partner_appointment_id: 'pa-2',
    });
    assert.equal(third.statusCode, 200, third.body);
    assertValid(ekaResponse('/appointments/v1/{appointment_id}/reschedule', 'patch', '200').schema, third.json(), 'reschedule');
    assert.deepEqual(third.json().prev_aids, [first, next.appointment_id]);
    assert.equal(third.json().partner_appointment_id, 'pa-2');
    assert.equal((await call(p, 'GET', `/dr/v1/appointment/pa-1?partner_id=1`)).json().next_aid, third.json().appointment_id);

    // A rescheduled appointment is history: no completion, reschedule, cancel or no-show (409).
    for (const [method, url, body] of [
      ['POST', `/dr/v1/appointment/${first}/complete`, undefined],
      ['PUT', `/dr/v1/appointment/${first}/reschedule`, { start_time: MONDAY_0900, end_time: MONDAY_0900 + SLOT }],
      ['PATCH', `/appointments/v1/${first}/reschedule`, { start_time: MONDAY_0900, end_time: MONDAY_0900 + SLOT }],
      ['PATCH', `/dr/v1/appointment/${first}`, { start_time: MONDAY_0900, end_time: MONDAY_0900 + SLOT }],
      ['PUT', `/dr/v1/appointment/${first}/cancel`, undefined],
      ['POST', `/dr/v1/appointment/${first}/change-status`, { status: 'NS' }],
    ] as const) {
      const response = await call(p, method, url, body);
      assert.deepEqual([response.statusCode, response.json().error.code], [409, 'APPOINTMENT_RESCHEDULED'], `${method} ${url}`);
    }
    // The old places are free again: slots 09:00 and 09:15 each hold nothing now.
    const slots = (await call(p, 'GET', slotPath(p))).json().data.schedule[p.doctorId][MONDAY];
    assert.deepEqual(
      slots.slice(0, 3).map((s: { slots_booked: number }) => s.slots_booked),
      [0, 0, 1],
    );
    // Into a full slot, a taken partner id, a completed appointment: refused, and nothing changes.
    for (let i = 0; i < 3; i++) await bookAt(t, p, MONDAY_0900 + 5 * SLOT);
    const current = third.json().appointment_id;
    const full = await call(p, 'PUT', `/dr/v1/appointment/${current}/reschedule`, {
      start_time: MONDAY_0900 + 5 * SLOT,
      end_time: MONDAY_0900 + 6 * SLOT,
    });
    assert.deepEqual([full.statusCode, full.json().error.code], [409, 'SLOT_UNAVAILABLE']);
    await book(t, p, {
      partner_appointment_id: 'pa-taken',
      appointment_details: { start_time: MONDAY_0900 + 7 * SLOT, end_time: MONDAY_0900 + 8 * SLOT },
    });
    const taken = await call(p, 'PATCH', `/appointments/v1/pa-2/reschedule`, {
      start_time: MONDAY_0900,
      end_time: MONDAY_0900 + SLOT,
      partner_appointment_id: 'pa-taken',
    });
    assert.deepEqual([taken.statusCode, taken.json().error.code], [409, 'APPOINTMENT_EXISTS']);
    assert.equal((await call(p, 'GET', `/dr/v1/appointment/${current}`)).json().status, 'BK', 'rolled back');
    await call(p, 'POST', `/dr/v1/appointment/${current}/complete`);
    const completed = await call(p, 'PUT', `/dr/v1/appointment/${current}/reschedule`, { start_time: MONDAY_0900, end_time: MONDAY_0900 + SLOT });
    assert.equal(completed.statusCode, 400);
    assert.match(completed.json().error.message, /completed appointment cannot be rescheduled/);
  });

  it('the created events of a booking and of a reschedule say what the stored records say (built without reading them back)', async () => {
    const p = await scheduled();
    const first = await book(t, p, {
      clinic_id: undefined,
      doctor_id: undefined,
      partner_clinic_id: p.partnerClinicId,
      partner_doctor_id: p.partnerDoctorId,
      partner_appointment_id: 'pa-ev',
      appointment_details: { start_time: MONDAY_0900, end_time: MONDAY_0900 + SLOT, custom_attributes: { room: '4' } },
      patient_details: { first_name: 'Ravi', mobile: '+919812345678', partner_patient_id: 'pp-ev' },
      partner_meta: { visit: 3 },
    });
    // Each record as its creating request left it: the reschedule then changes the first (status RES, updated_at).
    const viewOf = async (id: string) => (await findView(t.ctx.storage.db, DIALECT, p.client.businessId, id, false))!;
    const views = new Map([[first, await viewOf(first)]]);
    const moved = await call(p, 'PUT', `/dr/v1/appointment/${first}/reschedule`, {
      start_time: MONDAY_0900 + SLOT,
      end_time: MONDAY_0900 + 2 * SLOT,
    });
    assert.equal(moved.statusCode, 200, moved.body);
    views.set(moved.json().appointment_id, await viewOf(moved.json().appointment_id));
    const created = await events(t, p.client.businessId, 'appointment.created');
    assert.deepEqual(
      created.map((event) => event.payload.data.appointment_id),
      [first, moved.json().appointment_id],
    );
    for (const event of created) {
      const data = event.payload.data;
      const view = views.get(data.appointment_id)!;
      assert.equal(event.payload.sequence, 1);
      assert.deepEqual(
        [data.partner_clinic_id, data.partner_doctor_id, data.partner_patient_id, data.partner_appointment_id],
        [view.partner_clinic_id, view.partner_doctor_id, view.partner_patient_id, 'pa-ev'],
      );
      assert.deepEqual([data.partner_clinic_id, data.partner_doctor_id, data.partner_patient_id], [p.partnerClinicId, p.partnerDoctorId, 'pp-ev']);
      assert.deepEqual(
        [data.clinic_id, data.doctor_id, data.patient_id, data.status, data.start_time, data.end_time, data.created_at, data.modified_at],
        [
          view.clinic_id,
          view.doctor_id,
          view.patient_id,
          'BK',
          view.start_time / 1000,
          view.end_time / 1000,
          Math.floor(view.created_at / 1000),
          Math.floor(view.updated_at / 1000),
        ],
      );
      assert.deepEqual([data.custom_attributes, data.partner_meta], [JSON.parse(view.custom_attributes), JSON.parse(view.partner_meta)]);
    }
    const tokens = await Promise.all(
      created.map(async (event) => (await call(p, 'GET', `/dr/v1/appointment/${event.payload.data.appointment_id}`)).json().token),
    );
    assert.deepEqual(tokens, [1, 2], 'each holds the OPD token it was given');
  });

  it('refuses a reschedule past MAX_RESCHEDULES: each record carries its whole lineage', async () => {
    const p = await createPractice(t);
    let current = (await bookAt(t, p, MONDAY_0900, patient())).json().appointment_id as string;
    for (let i = 1; i <= MAX_RESCHEDULES; i++) {
      const moved = await call(p, 'PUT', `/dr/v1/appointment/${current}/reschedule`, {
        start_time: MONDAY_0900 + i * SLOT,
        end_time: MONDAY_0900 + (i + 1) * SLOT,
      });
      assert.equal(moved.statusCode, 200, moved.body);
      current = moved.json().appointment_id;
    }
    assert.equal((await call(p, 'GET', `/dr/v1/appointment/${current}`)).json().prev_aids.length, MAX_RESCHEDULES);
    const refused = await call(p, 'PUT', `/dr/v1/appointment/${current}/reschedule`, { start_time: MONDAY_0900, end_time: MONDAY_0900 + SLOT });
    assert.deepEqual(
      [refused.statusCode, refused.json().error],
      [
        400,
        {
          code: 'INVALID_REQUEST',
          message: 'appointment_id: was rescheduled 100 times, as often as one appointment may be: cancel it and book anew',
        },
      ],
    );
    assert.equal((await call(p, 'GET', `/dr/v1/appointment/${current}`)).json().status, 'BK', 'untouched');
  });

  it('reschedules a pair without a schedule to any time, and to another doctor of the clinic', async () => {
    const p = await createPractice(t);
    const id = await book(t, p, { token: 9 });
    const other = await createPractice(t, { client: p.client });
    const unassigned = await call(p, 'PUT', `/dr/v1/appointment/${id}/reschedule`, {
      start_time: START + 60,
      end_time: START + 960,
      doc_id: other.doctorId,
    });
    assert.equal(unassigned.statusCode, 400);
    assert.match(unassigned.json().error.message, /^doctor_id: /);
    await call(p, 'PATCH', `/cdr/v1/clinic/${p.clinicId}/`, { doctor_ids: [other.doctorId] });
    const moved = await call(p, 'PUT', `/dr/v1/appointment/${id}/reschedule`, {
      start_time: START + 60,
      end_time: START + 960,
      doc_id: other.doctorId,
    });
    assert.equal(moved.statusCode, 200, moved.body);
    assert.deepEqual([moved.json().doctor_id, moved.json().clinic_id, moved.json().token], [other.doctorId, p.clinicId, 9]);
  });

  it('answers 400 naming the field for bad slot queries and reschedule bodies, 404 for unknown ids', async () => {
    const p = await scheduled();
    const id = await book(t, p, { appointment_details: { start_time: MONDAY_0900, end_time: MONDAY_0900 + SLOT } });
    const base = `/dr/v1/doctor/${p.doctorId}/clinic/${p.clinicId}/appointment/slot`;
    for (const [query, field] of [
      ['', 'start_date'],
      [`?start_date=${MONDAY}`, 'end_date'],
      ['?start_date=2030-02-30&end_date=2030-03-01', 'start_date'],
      ['?start_date=2030-01-07&end_date=2030-01-06', 'end_date'],
      ['?start_date=2030-01-01&end_date=2030-02-01', 'end_date'],
    ]) {
      const response = await call(p, 'GET', `${base}${query}`);
      assert.equal(response.statusCode, 400, query);
      assert.match(response.json().error.message, new RegExp(`^${field}: `), `${query}: ${response.body}`);
    }
    for (const [body, field] of [
      [{ end_time: MONDAY_0900 }, 'start_time'],
      [{ start_time: MONDAY_0900 }, 'end_time'],
      [{ start_time: MONDAY_0900, end_time: MONDAY_0900 }, 'end_time'],
      [{ start_time: '1', end_time: MONDAY_0900 }, 'start_time'],
      [{ start_time: MONDAY_0900, end_time: MONDAY_0900 + SLOT, clinic_id: 'nope' }, 'clinic_id'],
    ] as const) {
      for (const [method, url] of [
        ['PUT', `/dr/v1/appointment/${id}/reschedule`],
        ['PATCH', `/appointments/v1/${id}/reschedule`],
      ] as const) {
        if (method === 'PATCH' && 'clinic_id' in body) continue;
        const response = await call(p, method, url, body);
        assert.equal(response.statusCode, 400, `${method} ${JSON.stringify(body)}`);
        assert.match(response.json().error.message, new RegExp(`^${field}: `), response.body);
      }
    }
    const listing = await call(p, 'GET', '/dr/v1/appointment?status=XX');
    assert.match(listing.json().error.message, /^status: /);
    assert.match((await call(p, 'GET', `/dr/v1/appointment?date=${MONDAY}&start_date=${MONDAY}`)).json().error.message, /^date: /);
    assert.equal(
      (await call(p, 'GET', `/dr/v1/doctor/nope/clinic/${p.clinicId}/appointment/slot?start_date=${MONDAY}&end_date=${MONDAY}`)).statusCode,
      404,
    );
    const unknown = await call(p, 'PUT', '/dr/v1/appointment/nope/reschedule', { start_time: MONDAY_0900, end_time: MONDAY_0900 + SLOT });
    assert.deepEqual([unknown.statusCode, unknown.json().error.code], [404, 'APPOINTMENT_NOT_FOUND']);
  });

  it("filters the listing by status and by a doctor's day", async () => {
    const p = await scheduled();
    const a = (await bookAt(t, p, MONDAY_0900)).json().appointment_id;
    const b = (await bookAt(t, p, MONDAY_0900 + SLOT)).json().appointment_id;
    const c = (await bookAt(t, p, MONDAY_0900 + 86_400)).json().appointment_id;
    await call(p, 'PUT', `/dr/v1/appointment/${b}/cancel`);
    const other = await createPractice(t, { client: p.client });
    await book(t, other, { appointment_details: { start_time: MONDAY_0900, end_time: MONDAY_0900 + SLOT } });
    const ids = async (query: string) =>
      ((await call(p, 'GET', `/dr/v1/appointment?${query}`)).json().appointments as Array<{ appointment_id: string }>).map((x) => x.appointment_id);
    assert.deepEqual(await ids(`doctor_id=${p.doctorId}&date=${MONDAY}`), [a, b]);
    assert.deepEqual(await ids(`doctor_id=${p.partnerDoctorId}&date=${MONDAY}&status=BK`), [a]);
    assert.deepEqual(await ids(`doctor_id=${p.doctorId}&status=cn,BK`), [a, b, c]);
    assert.deepEqual(await ids(`doctor_id=${p.doctorId}&status=CN`), [b]);
  });

  it('the last dates: a range at the end of year 9998 is served, a year past it is refused (no endless day walk)', async () => {
    const p = await scheduled();
    const last = await call(p, 'GET', slotPath(p, '9998-12-30', '9998-12-31'));
    assert.equal(last.statusCode, 200, last.body);
    assert.deepEqual(Object.keys(last.json().data.schedule[p.doctorId]), ['9998-12-30', '9998-12-31']);
    for (const [from, to] of [
      ['9999-12-31', '9999-12-31'],
      ['9998-12-31', '9999-01-01'],
    ]) {
      const refused = await call(p, 'GET', slotPath(p, from, to));
      assert.equal(refused.statusCode, 400, `${from}..${to}: ${refused.body}`);
    }
    const listed = await call(p, 'GET', '/dr/v1/appointment?date=9999-12-31');
    assert.equal(listed.statusCode, 400);
  });

  it('keeps businesses apart and checks scopes on every new endpoint', async () => {
    const p = await scheduled();
    const id = await book(t, p, { partner_appointment_id: 'iso-1', appointment_details: { start_time: MONDAY_0900, end_time: MONDAY_0900 + SLOT } });
    const stranger = await createTestClient(t.ctx);
    const move = { start_time: MONDAY_0900 + SLOT, end_time: MONDAY_0900 + 2 * SLOT };
    const attempts = [
      ['GET', slotPath(p), undefined],
      [
        'GET',
        `/dr/v1/doctor/${p.partnerDoctorId}/clinic/${p.partnerClinicId}/appointment/slot?start_date=${MONDAY}&end_date=${MONDAY}&partner_id=1`,
        undefined,
      ],
      ['PUT', `/dr/v1/appointment/${id}/reschedule`, move],
      ['PUT', `/dr/v1/appointment/iso-1/reschedule?partner_id=1`, move],
      ['PATCH', `/appointments/v1/${id}/reschedule`, move],
      ['PATCH', `/appointments/v1/iso-1/reschedule?partner_id=1`, move],
    ] as const;
    for (const [method, url, body] of attempts) {
      const response = await call(p, method, url, body, stranger.token);
      assert.equal(response.statusCode, 404, `${method} ${url}: ${response.body}`);
      assert.equal(typeof response.json().error.code, 'string');
      const none = await t.app.inject({ method, url, ...(body ? { payload: body } : {}) });
      assert.deepEqual([none.statusCode, none.json().error.code], [401, 'UNAUTHORIZED'], url);
    }
    // Scheduling's answers of the stranger's own (empty) business show nothing of this one.
    assert.equal((await call(p, 'GET', `/dr/v1/appointment?doctor_id=${p.doctorId}`, undefined, stranger.token)).json().appointments.length, 0);
    const completer = await createTestClient(t.ctx, { businessId: p.client.businessId, scopes: ['appointment:complete'] });
    assert.equal((await call(p, 'GET', slotPath(p), undefined, completer.token)).statusCode, 200, 'a reader may see slots');
    for (const [method, url, body] of attempts.slice(2)) {
      const response = await call(p, method, url, body, completer.token);
      assert.deepEqual([response.statusCode, response.json().error.code], [403, 'ACCESS_DENIED'], url);
    }
    const clinicsOnly = await createTestClient(t.ctx, { businessId: p.client.businessId, scopes: ['clinic:write'] });
    assert.equal((await call(p, 'GET', slotPath(p), undefined, clinicsOnly.token)).statusCode, 403);
    assert.equal((await call(p, 'GET', `/dr/v1/appointment/${id}`)).json().status, 'BK', 'untouched');
  });

  it('200 bookers racing for the last places of one slot: exactly its places succeed, tokens never twice', async () => {
    const p = await createPractice(t);
    await setSchedule(t, p, { timezone: 'Asia/Kolkata', slot_minutes: 15, capacity: 5, sessions: [{ days: ['MON'], start: '09:00', end: '10:00' }] });
    await bookAt(t, p, MONDAY_0900, { patient_details: { first_name: 'Early', mobile: '+919800000999' } });
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        bookAt(t, p, MONDAY_0900, {
          patient_details: { first_name: `P${i}`, mobile: `+9198${String(i).padStart(8, '0')}`, partner_patient_id: `race-${i}` },
        }),
      ),
    );
    const won = results.filter((r) => r.statusCode === 201);
    const lost = results.filter((r) => r.statusCode === 409);
    assert.equal(won.length, 4, 'the four places left');
    assert.equal(lost.length, 196);
    for (const response of lost) assert.equal(response.json().error.code, 'SLOT_UNAVAILABLE');
    const held = await t.ctx.storage.db.selectFrom('appointments').select('token').where('doctor_id', '=', p.doctorId).execute();
    assert.deepEqual(
      held.map((row) => Number(row.token)).sort((a, b) => a - b),
      [1, 2, 3, 4, 5],
    );
    // Bookers and cancellers at once: the places never exceed the capacity.
    const ids = won.map((r) => r.json().appointment_id as string);
    const mixed = await Promise.all([
      ...ids.slice(0, 2).map((id) => call(p, 'PUT', `/dr/v1/appointment/${id}/cancel`)),
      ...Array.from({ length: 50 }, (_, i) =>
        bookAt(t, p, MONDAY_0900, {
          patient_details: { first_name: `Q${i}`, mobile: `+9197${String(i).padStart(8, '0')}`, partner_patient_id: `race2-${i}` },
        }),
      ),
    ]);
    const rebooked = mixed.slice(2).filter((r) => r.statusCode === 201).length;
    assert.ok(rebooked <= 2);
    const slot = (await call(p, 'GET', slotPath(p))).json().data.schedule[p.doctorId][MONDAY][0];
    assert.equal(slot.slots_booked, 3 + rebooked);
    assert.ok(slot.slots_booked <= 5);
  });
  let patients = 0;
  /** A new patient for each booking (its own partner id: no patient row is shared, so none is locked). */
  const patient = () => {
    patients++;
    return {
      patient_details: { first_name: `N${patients}`, mobile: `+9196${String(patients).padStart(8, '0')}`, partner_patient_id: `new-${patients}` },
    };
  };
  const tokenOf = async (p: Practice, id: string) => (await call(p, 'GET', `/dr/v1/appointment/${id}`)).json().token as number;
  const slotOf = async (p: Practice, start: number) =>
    (await call(p, 'GET', slotPath(p))).json().data.schedule[p.doctorId][MONDAY].find((slot: { start_time: number }) => slot.start_time === start);

  /**
   * Holds every booking after it took its place (before its COMMIT) until `parties` have, or `ms` passed,
   * so that racing bookings take their places together whenever the database lets them.
   */
  function holdAfterTake(parties: number, ms: number): () => void {
    const take = Scheduling.prototype.take;
    let arrived = 0;
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    const timer = setTimeout(open, ms);
    Scheduling.prototype.take = async function (this: Scheduling, ...args: Parameters<typeof take>) {
      const token = await take.apply(this, args);
      if (++arrived >= parties) open();
      await opened;
      return token;
    } as typeof take;
    return () => {
      clearTimeout(timer);
      Scheduling.prototype.take = take;
    };
  }

  it('overlapping sessions: two bookings of overlapping slots racing for one place, one succeeds', async () => {
    const p = await createPractice(t);
    // An extra session off the weekly grid: its 09:15 slot overlaps the weekly 09:00 and 09:30 ones.
    await setSchedule(t, p, {
      timezone: 'Asia/Kolkata',
      slot_minutes: 30,
      capacity: 1,
      sessions: [{ days: ['MON'], start: '09:00', end: '12:00' }],
      exceptions: [{ type: 'extra', start_date: MONDAY, end_date: MONDAY, start_time: '09:15', end_time: '10:15' }],
    });
    const release = holdAfterTake(2, 500);
    let codes: number[];
    try {
      const racing = await Promise.all([bookAt(t, p, MONDAY_0900, patient(), 30), bookAt(t, p, MONDAY_0900 + 15 * 60, patient(), 30)]);
      codes = racing.map((response) => response.statusCode).sort();
    } finally {
      release();
    }
    assert.deepEqual(codes, [201, 409], 'the second waited for the first and found the place taken');
    const overlapping = await slotOf(p, MONDAY_0900 + 15 * 60);
    assert.equal(overlapping.slots_booked, 1);
  });

  it('a booking racing an edit of the schedule: the edit waits for it, and the slot keeps its places', async () => {
    const p = await createPractice(t);
    const weekly = { timezone: 'Asia/Kolkata', slot_minutes: 15, capacity: 1, sessions: [{ days: ['MON'], start: '09:00', end: '12:00' }] };
    await setSchedule(t, p, weekly);
    const TEN = MONDAY_0900 + 3600;
    const release = holdAfterTake(2, 500);
    let codes: number[];
    try {
      // The first booking reads the schedule as it is and takes its place; the session then moves to 08:30.
      const first = bookAt(t, p, TEN, patient());
      await new Promise((resolve) => setTimeout(resolve, 100));
      await setSchedule(t, p, { ...weekly, sessions: [{ days: ['MON'], start: '08:30', end: '12:00' }] });
      // A booking that read the edited schedule (another session's start) for the same 10:00 slot.
      const second = bookAt(t, p, TEN, patient());
      codes = [(await first).statusCode, (await second).statusCode];
    } finally {
      release();
    }
    assert.deepEqual(codes, [201, 409]);
    assert.equal((await slotOf(p, TEN)).slots_booked, 1);
  });

  it('a booking that read a schedule since deleted and created again waits for the bookings of the new one', async () => {
    const p = await createPractice(t);
    const weekly = { timezone: 'Asia/Kolkata', slot_minutes: 15, capacity: 1, sessions: [{ days: ['MON'], start: '09:00', end: '12:00' }] };
    await setSchedule(t, p, weekly);
    const TEN = MONDAY_0900 + 3600;
    // The window widened: the first booking stops after reading the schedule, before its lock, until the
    // second (which read the new version) has taken its place; the second then waits for the first to
    // take its place too, or 500 ms (the first waiting for the second's lock, as it must).
    const lock = ScheduleService.prototype.lockForBooking;
    const take = Scheduling.prototype.take;
    const signal = () => {
      let fire!: () => void;
      const fired = new Promise<void>((resolve) => (fire = resolve));
      return { fire, fired };
    };
    const [firstPaused, firstResumed, firstTook, secondTook] = [signal(), signal(), signal(), signal()];
    const timer = setTimeout(firstResumed.fire, 2000);
    let locks = 0;
    let takes = 0;
    ScheduleService.prototype.lockForBooking = async function (this: ScheduleService, ...args: Parameters<typeof lock>) {
      if (++locks === 1) {
        firstPaused.fire();
        await firstResumed.fired;
      }
      return lock.apply(this, args);
    } as typeof lock;
    Scheduling.prototype.take = async function (this: Scheduling, ...args: Parameters<typeof take>) {
      const mine = ++takes;
      const token = await take.apply(this, args);
      if (mine === 1) firstTook.fire();
      else {
        secondTook.fire();
        await Promise.race([firstTook.fired, new Promise((resolve) => setTimeout(resolve, 500))]);
      }
      return token;
    } as typeof take;
    let codes: number[];
    try {
      const first = bookAt(t, p, TEN, patient());
      await firstPaused.fired;
      // On SQLite the delete waits for the first booking's transaction: one writer at a time.
      assert.equal((await call(p, 'DELETE', schedulePath(p))).statusCode, 200);
      // The new version starts the morning at 08:30: the 10:00 slot is in another session (its own token counter).
      await setSchedule(t, p, { ...weekly, sessions: [{ days: ['MON'], start: '08:30', end: '12:00' }] });
      const second = bookAt(t, p, TEN, patient());
      await Promise.race([secondTook.fired, second]);
      firstResumed.fire();
      codes = [(await first).statusCode, (await second).statusCode].sort();
    } finally {
      clearTimeout(timer);
      ScheduleService.prototype.lockForBooking = lock;
      Scheduling.prototype.take = take;
    }
    assert.deepEqual(codes, [201, 409], 'one place: one booking');
    assert.equal((await slotOf(p, TEN)).slots_booked, 1);
    const tokens = await t.ctx.storage.db.selectFrom('appointments').select('token').where('doctor_id', '=', p.doctorId).execute();
    assert.deepEqual(
      tokens.map((row) => Number(row.token)),
      [1],
    );
  });

  it('an appointment longer than a day, booked before the schedule, holds its place in every slot it overlaps', async () => {
    const p = await createPractice(t);
    // No schedule yet: the pair books at any time, for as long as asked (Saturday 09:00 to Tuesday 09:00).
    const long = await bookAt(t, p, MONDAY_0900 - 2 * 86_400, patient(), 3 * 24 * 60);
    assert.equal(long.statusCode, 201, long.body);
    await setSchedule(t, p, {
      timezone: 'Asia/Kolkata',
      slot_minutes: 15,
      capacity: 1,
      sessions: [{ days: ['MON', 'TUE'], start: '09:00', end: '12:00' }],
    });
    const days = (await call(p, 'GET', slotPath(p, MONDAY, '2030-01-08'))).json().data.schedule[p.doctorId];
    for (const slot of days[MONDAY]) assert.deepEqual([slot.slots_booked, slot.places_left, slot.available], [1, 0, false], slot.s);
    for (const slot of days['2030-01-08']) assert.equal(slot.slots_booked, 0, `${slot.s}: the long one ended at 09:00`);
    const refused = await bookAt(t, p, MONDAY_0900 + 3600, patient());
    assert.deepEqual([refused.statusCode, refused.json().error.code], [409, 'SLOT_UNAVAILABLE']);
    assert.equal((await bookAt(t, p, MONDAY_0900 + 86_400, patient())).statusCode, 201, 'Tuesday 09:00');
    // Cancelled, it frees Monday.
    assert.equal((await call(p, 'PUT', `/dr/v1/appointment/${long.json().appointment_id}/cancel`)).statusCode, 200);
    assert.equal((await bookAt(t, p, MONDAY_0900 + 3600, patient())).statusCode, 201);
  });

  it('OPD tokens go on where they were when an edit moves the session, and when retention pruned the counter', async () => {
    const p = await createPractice(t);
    const weekly = { timezone: 'Asia/Kolkata', slot_minutes: 15, capacity: 3, sessions: [{ days: ['MON'], start: '09:00', end: '12:00' }] };
    await setSchedule(t, p, weekly);
    const first = (await bookAt(t, p, MONDAY_0900 + 3600, patient())).json().appointment_id;
    const second = (await bookAt(t, p, MONDAY_0900 + 4500, patient())).json().appointment_id;
    // The clinic opens half an hour earlier from now on: the same morning's session, starting elsewhere.
    await setSchedule(t, p, { ...weekly, sessions: [{ days: ['MON'], start: '08:30', end: '12:00' }] });
    const third = (await bookAt(t, p, MONDAY_0900 + 5400, patient())).json().appointment_id;
    assert.deepEqual([await tokenOf(p, first), await tokenOf(p, second), await tokenOf(p, third)], [1, 2, 3]);

    // A late entry into a session past the counters' retention (90 days).
    const old = await createPractice(t);
    const everyDay = ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'];
    await setSchedule(t, old, { ...weekly, capacity: 5, sessions: [{ days: everyDay, start: '09:00', end: '12:00' }] });
    const day = new Date(Date.now() - 120 * 86_400_000).toISOString().slice(0, 10);
    const start = Date.parse(`${day}T03:30:00Z`) / 1000;
    const early = (await bookAt(t, old, start, patient())).json().appointment_id;
    const report = await runRetention(t.ctx.storage.db, t.ctx.keys.masterKey, t.ctx.config.retention, createLogger('silent'));
    assert.ok((report.pruned.schedule_tokens ?? 0) >= 1, 'the counter was pruned');
    const late = (await bookAt(t, old, start, patient())).json().appointment_id;
    assert.deepEqual([await tokenOf(old, early), await tokenOf(old, late)], [1, 2]);
  });

  it('a slot offered after midnight at a spring-forward change can be booked', async () => {
    const p = await createPractice(t);
    // Nuuk moves from 23:00 to 00:00 on the night of 2030-03-30: a session ending at 23:30 runs on to 00:30.
    await setSchedule(t, p, { timezone: 'America/Nuuk', slot_minutes: 30, capacity: 1, sessions: [{ days: ['SAT'], start: '22:00', end: '23:30' }] });
    const day = '2030-03-30';
    const offered = (await call(p, 'GET', slotPath(p, day, day))).json().data.schedule[p.doctorId][day];
    const last = offered.at(-1);
    assert.equal(last.s, '2030-03-31T00:00:00-01:00', 'the last slot starts after midnight');
    assert.equal(last.available, true);
    const booked = await bookAt(t, p, last.start_time, patient(), 30);
    assert.equal(booked.statusCode, 201, booked.body);
    assert.equal(booked.json().token ?? (await tokenOf(p, booked.json().appointment_id)), 1);
  });
});
