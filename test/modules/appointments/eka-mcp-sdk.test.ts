/**
 * The appointment calls of Eka's MCP SDK (github.com/eka-care/eka-mcp-sdk, `clients/eka_emr_client.py`),
 * sent as it sends them, with what it reads of each answer:
 * - slots: `start_date=YYYY-MM-DDT00:00:00.000Z&end_date=YYYY-MM-DDT23:59:59.000Z` (httpx encodes the
 *   colons), read as `data.schedule[clinic_id]`, a list of services with `fee` and `slots: [{s, e,
 *   available}]` (`utils/eka_response_parsers.py`, `utils/book_appointment_utils.py`); Eka's schema's
 *   readers still find `data.schedule[doctor_id][date]`;
 * - booking an existing patient by top-level `patient_id` (or `partner_patient_id`), mode `in_clinic`,
 *   without `patient_details`;
 * - the update `PATCH /dr/v2/appointment/{id}` (204).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestClient, DIALECT, type TestApp } from '../../support.ts';
import { assertValid, ekaResponse } from '../clinics/eka-schemas.ts';
import { MONDAY, MONDAY_0900, setSchedule } from '../schedules/support.ts';
import { book, createPractice, request, START, type Practice } from './support.ts';

const SLOT = 15 * 60;

/** The query string httpx builds from `params={"start_date": ..., "end_date": ...}`. */
const sdkSlotQuery = (day: string, last = day) =>
  new URLSearchParams({ start_date: `${day}T00:00:00.000Z`, end_date: `${last}T23:59:59.000Z` }).toString();

/** HH:MM of a slot's `s`, as `extract_time_24h` reads it (the part before `+`, parsed without a zone). */
const clock = (iso: string) => /^\d{4}-\d{2}-\d{2}T(\d{2}:\d{2}):\d{2}$/.exec(iso.split('+')[0]!)![1]!;

/** What `parse_slots_to_common_format` and `parse_available_dates` make of an answer. */
function sdkReading(answer: { data?: { schedule?: Record<string, unknown> } }, clinicId: string) {
  const services = (answer.data?.schedule?.[clinicId] ?? []) as Array<{
    service_name?: string;
    fee?: number;
    slots?: Array<Record<string, unknown>>;
  }>;
  const allSlots = new Set<string>();
  const dates = new Set<string>();
  let fee: number | undefined;
  for (const service of services) {
    if (fee === undefined && service.fee) fee = service.fee;
    for (const slot of service.slots ?? []) {
      if (!slot.available) continue;
      allSlots.add(clock(slot.s as string));
      dates.add((slot.s as string).split('T')[0]!);
    }
  }
  return { services: services.length, allSlots: [...allSlots].sort(), dates: [...dates].sort(), fee };
}

describe(`Eka's MCP SDK: appointments (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(async () => t.close());

  const call = (p: Practice, method: string, url: string, payload?: unknown, token = p.client.token) => request(t, token, method, url, payload);
  const slotUrl = (p: Practice, query: string) => `/dr/v1/doctor/${p.doctorId}/clinic/${p.clinicId}/appointment/slot?${query}`;
  const createPatient = async (p: Practice, body: Record<string, unknown> = {}) => {
    const created = await call(p, 'POST', '/dr/v1/patient', { first_name: 'Meera', last_name: 'Iyer', gender: 'F', dob: '1988-02-03', ...body });
    assert.equal(created.statusCode, 201, created.body);
    return created.json().patient_id as string;
  };
  /** The body `book_appointment_with_validation` sends for an existing patient. */
  const sdkBooking = (p: Practice, patient: Record<string, string>, start = START, extra: Record<string, unknown> = {}) => ({
    clinic_id: p.clinicId,
    doctor_id: p.doctorId,
    created_by_patient: true,
    appointment_details: { start_time: start, end_time: start + SLOT, mode: 'in_clinic', reason: 'fever' },
    partner_meta: { conversation_id: null, source: 'EkaAgents' },
    ...patient,
    ...extra,
  });

  describe('happy', () => {
    it('slots: accepts dates with a time part and answers a body both Eka’s clients and its schema read', async () => {
      const p = await createPractice(t);
      await setSchedule(t, p);
      const booked = await call(p, 'POST', '/dr/v1/appointment', sdkBooking(p, { patient_id: await createPatient(p) }, MONDAY_0900));
      assert.equal(booked.statusCode, 201, booked.body);

      const response = await call(p, 'GET', slotUrl(p, sdkSlotQuery(MONDAY)));
      assert.equal(response.statusCode, 200, response.body);
      const body = response.json();
      // The SDK's reader: every slot of the day, 09:00 to 11:45, the booked one still has places.
      const read = sdkReading(body, p.clinicId);
      assert.equal(read.services, 1);
      assert.equal(read.allSlots.length, 12);
      assert.deepEqual([read.allSlots[0], read.allSlots.at(-1)], ['09:00', '11:45']);
      assert.deepEqual(read.dates, [MONDAY]);
      const [service] = body.data.schedule[p.clinicId];
      assert.equal(service.service_name, 'consultation');
      assert.equal(service.conf_id, Object.keys(body.data.services)[0]);
      assert.deepEqual(service.slots[0], body.data.schedule[p.doctorId][MONDAY][0]);
      assert.equal(service.slots[0].slots_booked, 1);
      // The schema's reader: doctor id -> date -> slots, valid against Eka's schema.
      const { [p.clinicId]: _clinic, ...bySchema } = body.data.schedule;
      assertValid(
        ekaResponse('/dr/v1/doctor/{doctor_id}/clinic/{clinic_id}/appointment/slot', 'get', '200').schema,
        { ...body, data: { ...body.data, schedule: bySchema } },
        'slots',
      );
      assert.deepEqual(Object.keys(bySchema), [p.doctorId]);

      // A range, as `_fetch_doctor_availability` asks: the dates with a free slot.
      const week = await call(p, 'GET', slotUrl(p, sdkSlotQuery(MONDAY, '2030-01-13')));
      assert.equal(week.statusCode, 200, week.body);
      assert.deepEqual(sdkReading(week.json(), p.clinicId).dates, [
        '2030-01-07',
        '2030-01-08',
        '2030-01-09',
        '2030-01-10',
        '2030-01-11',
        '2030-01-12',
      ]);
      // Offsets and plain dates too; the date as written is the day.
      for (const query of [`start_date=${MONDAY}T09:30:00%2B05:30&end_date=${MONDAY}`, `start_date=${MONDAY}&end_date=${MONDAY}T10:00`]) {
        const answer = await call(p, 'GET', slotUrl(p, query));
        assert.equal(answer.statusCode, 200, answer.body);
        assert.deepEqual(Object.keys(answer.json().data.schedule[p.doctorId]), [MONDAY]);
      }
    });

    it('books an existing patient by top-level patient_id or partner_patient_id, without patient_details', async () => {
      const p = await createPractice(t);
      const patientId = await createPatient(p, { partner_patient_id: 'crm-77', mobile: '+919800000077' });
      const booked = await call(p, 'POST', '/dr/v1/appointment', sdkBooking(p, { patient_id: patientId }));
      assert.equal(booked.statusCode, 201, booked.body);
      const record = (await call(p, 'GET', `/dr/v1/appointment/${booked.json().appointment_id}`)).json();
      assert.equal(record.patient_id, patientId);
      assert.equal(record.partner_patient_id, 'crm-77');
      assert.equal(record.mode, 'in_clinic');
      assert.deepEqual(record.partner_meta, { conversation_id: null, source: 'EkaAgents' });
      assert.equal(record.patient_details.first_name, 'Meera');
      assert.equal(record.patient_details.mobile, '+919800000077');

      const byPartner = await call(p, 'POST', '/dr/v1/appointment', sdkBooking(p, { partner_patient_id: 'crm-77' }, START + 3600));
      assert.equal(byPartner.statusCode, 201, byPartner.body);
      assert.equal((await call(p, 'GET', `/dr/v1/appointment/${byPartner.json().appointment_id}`)).json().patient_id, patientId);

      // patient_details sent beside the id change that patient, as the SDK sends a name it was told.
      const named = await call(
        p,
        'POST',
        '/dr/v1/appointment',
        sdkBooking(p, { patient_id: patientId }, START + 7200, {
          patient_details: { first_name: 'Meera', last_name: 'Iyengar', middle_name: '', gender: 'F' },
        }),
      );
      assert.equal(named.statusCode, 201, named.body);
      const patient = (await call(p, 'GET', `/dr/v1/patient/${patientId}`)).json();
      assert.equal(patient.last_name, 'Iyengar');
      assert.equal(patient.dob, '1988-02-03');
      const stored = await t.ctx.storage.db.selectFrom('patients').select('id').where('business_id', '=', p.client.businessId).execute();
      assert.equal(stored.length, 1, 'no new patient');
      // A merged patient's bookings go to its survivor.
      const duplicate = await createPatient(p, { first_name: 'Mira' });
      const merged = await call(p, 'POST', `/dr/v1/patient/${patientId}/merge`, { duplicate_patient_id: duplicate });
      assert.equal(merged.statusCode, 200, merged.body);
      const toSurvivor = await call(p, 'POST', '/dr/v1/appointment', sdkBooking(p, { patient_id: duplicate }, START + 10_800));
      assert.equal(toSurvivor.statusCode, 201, toSurvivor.body);
      assert.equal((await call(p, 'GET', `/dr/v1/appointment/${toSurvivor.json().appointment_id}`)).json().patient_id, patientId);
    });

    it('PATCH /dr/v2/appointment/{id}: Eka’s v2 body, 204, by service or partner id', async () => {
      const p = await createPractice(t);
      const patientId = await createPatient(p);
      const id = await book(t, p, { partner_appointment_id: 'v2-1', patient_details: undefined, patient_id: patientId });
      const updated = await call(p, 'PATCH', `/dr/v2/appointment/${id}`, {
        clinic_id: p.clinicId,
        doctor_id: p.doctorId,
        patient_id: patientId,
        token: 7,
        appointment_details: {
          start_time: START + 1800,
          end_time: START + 2700,
          mode: 'VIDEO',
          custom_attributes: { tags: ['vip'] },
          video_connect: { vendor: 'other', url: 'https://meet.example.org/x' },
        },
        partner_meta: { key1: 'value1' },
        display_meta: { vendor_patient_id: 'P41' },
        patient_details: { address: { city: 'Pune', pincode: 411001 } },
      });
      assert.equal(updated.statusCode, 204, updated.body);
      assert.equal(updated.body, '');
      const record = (await call(p, 'GET', `/dr/v1/appointment/${id}`)).json();
      assert.deepEqual(
        {
          start: record.start_time,
          end: record.end_time,
          mode: record.mode,
          token: record.token,
          custom: record.custom_attributes,
          video: record.video_connect,
          partner: record.partner_meta,
          display: record.display_meta,
          city: record.patient_details.address,
        },
        {
          start: START + 1800,
          end: START + 2700,
          mode: 'tele',
          token: 7,
          custom: { tags: ['vip'] },
          video: { vendor: 'other', url: 'https://meet.example.org/x' },
          partner: { key1: 'value1' },
          display: { vendor_patient_id: 'P41' },
          city: { city: 'Pune', pincode: 411001 },
        },
      );
      const byPartner = await call(p, 'PATCH', '/dr/v2/appointment/v2-1?partner_id=1', {
        partner_clinic_id: p.partnerClinicId,
        partner_doctor_id: p.partnerDoctorId,
        appointment_details: { mode: 'INCLINIC' },
      });
      assert.equal(byPartner.statusCode, 204, byPartner.body);
      assert.equal((await call(p, 'GET', `/dr/v1/appointment/${id}`)).json().mode, 'in_clinic');
    });
    it('parks (204, status PA, a statuschange event), sets custom attributes (204, merged), reads by the business path', async () => {
      const p = await createPractice(t);
      const id = await book(t, p, {
        partner_appointment_id: 'pk-1',
        appointment_details: { start_time: START, end_time: START + SLOT, custom_attributes: { tags: ['new'] } },
      });
      const parked = await call(p, 'POST', `/dr/v1/appointment/${id}/parked`, {});
      assert.equal(parked.statusCode, 204, parked.body);
      assert.equal(parked.body, '');
      assert.equal((await call(p, 'POST', '/dr/v1/appointment/pk-1/parked?partner_id=1')).statusCode, 204, 'parking a parked one changes nothing');
      const read = await call(p, 'GET', `/dr/v1/business/appointments/${id}`);
      assert.equal(read.statusCode, 200, read.body);
      assert.equal(read.json().status, 'PA');
      assert.deepEqual(read.json(), (await call(p, 'GET', `/dr/v1/appointment/${id}`)).json());
      assert.equal((await call(p, 'GET', '/dr/v1/business/appointments/pk-1?partner_id=1')).json().appointment_id, id);
      const listed = await call(p, 'GET', '/dr/v1/appointment?status=PA');
      assert.deepEqual(
        listed.json().appointments.map((a: { appointment_id: string }) => a.appointment_id),
        [id],
      );

      const set = await call(p, 'PATCH', `/dr/v1/appointment/${id}/custom_attribute`, { payment_status: ['paid'], label: ['gold'] });
      assert.equal(set.statusCode, 204, set.body);
      assert.deepEqual((await call(p, 'GET', `/dr/v1/appointment/${id}`)).json().custom_attributes, {
        tags: ['new'],
        payment_status: ['paid'],
        label: ['gold'],
      });
      const removed = await call(p, 'PATCH', `/dr/v1/appointment/pk-1/custom_attribute?partner_id=1`, { payment_status: null, visit: 'first' });
      assert.equal(removed.statusCode, 204, removed.body);
      assert.deepEqual((await call(p, 'GET', `/dr/v1/appointment/${id}`)).json().custom_attributes, {
        tags: ['new'],
        label: ['gold'],
        visit: 'first',
      });

      const changes = await t.ctx.storage.db
        .selectFrom('events')
        .select(['type', 'payload'])
        .where('business_id', '=', p.client.businessId)
        .where('type', 'in', ['appointment.statuschange', 'appointment.updated'])
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      assert.deepEqual(
        changes.map((row) => {
          const data = JSON.parse(row.payload).data;
          return [row.type, data.transition ?? data.changed.join(), data.status];
        }),
        [
          ['appointment.statuschange', 'parked', 'PA'],
          ['appointment.updated', 'custom_attributes', 'PA'],
          ['appointment.updated', 'custom_attributes', 'PA'],
        ],
      );
      // A parked appointment completes as any other.
      assert.equal((await call(p, 'POST', `/dr/v1/appointment/${id}/complete`)).json().status, 'CM');
    });
  });

  describe('errors', () => {
    it('parking a completed, cancelled or no-show appointment is 400, a rescheduled one 409; bad custom attributes name the field', async () => {
      const p = await createPractice(t);
      for (const [operation, method] of [
        ['complete', 'POST'],
        ['cancel', 'PUT'],
      ] as const) {
        const id = await book(t, p, {
          appointment_details: {
            start_time: START + 60 * (operation === 'cancel' ? 2 : 1) * SLOT,
            end_time: START + 60 * (operation === 'cancel' ? 2 : 1) * SLOT + SLOT,
          },
        });
        assert.equal((await call(p, method, `/dr/v1/appointment/${id}/${operation}`)).statusCode, 200);
        const refused = await call(p, 'POST', `/dr/v1/appointment/${id}/parked`);
        assert.equal(refused.statusCode, 400, refused.body);
        assert.equal(refused.json().error.code, 'INVALID_REQUEST');
      }
      const moved = await book(t, p);
      assert.equal(
        (await call(p, 'PUT', `/dr/v1/appointment/${moved}/reschedule`, { start_time: START + 7200, end_time: START + 8100 })).statusCode,
        200,
      );
      assert.equal((await call(p, 'POST', `/dr/v1/appointment/${moved}/parked`)).statusCode, 409);
      const id = await book(t, p, { appointment_details: { start_time: START + 9000, end_time: START + 9900 } });
      for (const [body, field] of [
        [{}, 'custom_attributes'],
        [{ tags: 'vip' }, 'tags'],
        [{ payment_status: 5 }, 'payment_status'],
        [{ ['x'.repeat(51)]: ['a'] }, 'custom_attributes'],
        [Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])), 'more than 50'],
      ] as const) {
        const response = await call(p, 'PATCH', `/dr/v1/appointment/${id}/custom_attribute`, body);
        assert.equal(response.statusCode, 400, `${JSON.stringify(body).slice(0, 80)}: ${response.body}`);
        assert.match(response.json().error.message, new RegExp(field));
      }
      for (const [method, url] of [
        ['GET', '/dr/v1/business/appointments/apt_unknown'],
        ['POST', '/dr/v1/appointment/apt_unknown/parked'],
        ['PATCH', '/dr/v1/appointment/apt_unknown/custom_attribute'],
      ] as const) {
        const response = await call(p, method, url, method === 'PATCH' ? { a: 'b' } : undefined);
        assert.equal(response.statusCode, 404, url);
        assert.equal(response.json().error.code, 'APPOINTMENT_NOT_FOUND');
      }
    });

    it('slots: a malformed or unreal date names its parameter', async () => {
      const p = await createPractice(t);
      await setSchedule(t, p);
      for (const [query, field] of [
        ['start_date=2030-01-07T25&end_date=2030-01-07', 'start_date'],
        ['start_date=2030-01-07&end_date=tomorrow', 'end_date'],
        ['start_date=2030-02-30T00:00:00.000Z&end_date=2030-03-01', 'start_date'],
        ['start_date=2030-01-08T00:00:00.000Z&end_date=2030-01-07T23:59:59.000Z', 'end_date'],
        [`start_date=2030-01-07T00:00:00.000Z&end_date=2030-03-01T00:00:00.000Z`, 'end_date'],
      ] as const) {
        const response = await call(p, 'GET', slotUrl(p, query));
        assert.equal(response.statusCode, 400, `${query}: ${response.body}`);
        assert.equal(response.json().error.code, 'INVALID_REQUEST');
        assert.match(response.json().error.message, new RegExp(field), query);
      }
    });

    it('booking: no patient, an unknown or archived one, both ids, or details naming another patient', async () => {
      const p = await createPractice(t);
      const patientId = await createPatient(p, { partner_patient_id: 'crm-1' });
      const archived = await createPatient(p, { first_name: 'Gone', partner_patient_id: 'crm-2' });
      assert.equal((await call(p, 'DELETE', `/profiles/v1/patient/${archived}`)).statusCode, 200);
      for (const [patient, field] of [
        [{}, 'patient_details'],
        [{ patient_id: 'pt_unknown' }, 'patient_id'],
        [{ partner_patient_id: 'crm-unknown' }, 'partner_patient_id'],
        [{ patient_id: archived }, 'patient_id'],
        [{ patient_id: patientId, partner_patient_id: 'crm-1' }, 'partner_patient_id'],
        [{ patient_id: patientId, patient_details: { partner_patient_id: 'crm-2' } }, 'patient_details.partner_patient_id'],
        [{ patient_id: '' }, 'patient_id'],
      ] as const) {
        const response = await call(p, 'POST', '/dr/v1/appointment', sdkBooking(p, {}, START, patient));
        assert.equal(response.statusCode, 400, `${JSON.stringify(patient)}: ${response.body}`);
        assert.equal(response.json().error.code, 'INVALID_REQUEST');
        assert.match(response.json().error.message, new RegExp(field.replace('.', '\\.')));
      }
      const mode = await call(
        p,
        'POST',
        '/dr/v1/appointment',
        sdkBooking(p, { patient_id: patientId }, START, { appointment_details: { start_time: START, end_time: START + 60, mode: 'walk_in' } }),
      );
      assert.equal(mode.statusCode, 400);
      assert.match(mode.json().error.message, /mode/);
      const count = await t.ctx.storage.db.selectFrom('appointments').select('id').where('business_id', '=', p.client.businessId).execute();
      assert.equal(count.length, 0);
    });

    it('v2 update: ids not the appointment’s, an empty update, an unknown appointment', async () => {
      const p = await createPractice(t);
      const other = await createPractice(t, { client: p.client });
      const id = await book(t, p);
      for (const [body, field] of [
        [{ clinic_id: other.clinicId, token: 1 }, 'clinic_id'],
        [{ partner_doctor_id: other.partnerDoctorId, token: 1 }, 'partner_doctor_id'],
        [{ patient_id: 'pt_other', token: 1 }, 'patient_id'],
        [{ clinic_id: p.clinicId }, 'empty'],
        [{ appointment_details: { start_time: START + 900, end_time: START } }, 'end_time'],
        [{ appointment_details: { mode: 'walk_in' } }, 'mode'],
      ] as const) {
        const response = await call(p, 'PATCH', `/dr/v2/appointment/${id}`, body);
        assert.equal(response.statusCode, 400, `${JSON.stringify(body)}: ${response.body}`);
        assert.equal(response.json().error.code, 'INVALID_REQUEST');
        assert.match(response.json().error.message, new RegExp(field));
      }
      const unknown = await call(p, 'PATCH', '/dr/v2/appointment/apt_unknown', { token: 1 });
      assert.equal(unknown.statusCode, 404);
      assert.equal(unknown.json().error.code, 'APPOINTMENT_NOT_FOUND');
      assert.equal((await call(p, 'GET', `/dr/v1/appointment/${id}`)).json().token, undefined, 'nothing changed');
    });
  });

  describe('security', () => {
    it('another business’s patient books as an unknown one; its appointment updates as an unknown one', async () => {
      const mine = await createPractice(t);
      const theirs = await createPractice(t);
      const theirPatient = await createPatient(theirs, { partner_patient_id: 'shared-crm' });
      for (const patient of [{ patient_id: theirPatient }, { partner_patient_id: 'shared-crm' }] as Array<Record<string, string>>) {
        const response = await call(mine, 'POST', '/dr/v1/appointment', sdkBooking(mine, patient));
        assert.equal(response.statusCode, 400, response.body);
        assert.match(response.json().error.message, /unknown patient/);
      }
      const theirAppointment = await book(t, theirs);
      const foreign = await call(mine, 'PATCH', `/dr/v2/appointment/${theirAppointment}`, { token: 3 });
      assert.equal(foreign.statusCode, 404);
      assert.equal(foreign.json().error.code, 'APPOINTMENT_NOT_FOUND');
      // Their slots answer as an unknown doctor would.
      await setSchedule(t, theirs);
      const slots = await call(mine, 'GET', slotUrl(theirs, sdkSlotQuery(MONDAY)));
      assert.equal(slots.statusCode, 404);
    });

    it("another business's appointment: read, park and custom attributes answer as an unknown one; scopes", async () => {
      const mine = await createPractice(t);
      const theirs = await createPractice(t);
      const theirAppointment = await book(t, theirs);
      for (const [method, url] of [
        ['GET', `/dr/v1/business/appointments/${theirAppointment}`],
        ['POST', `/dr/v1/appointment/${theirAppointment}/parked`],
        ['PATCH', `/dr/v1/appointment/${theirAppointment}/custom_attribute`],
      ] as const) {
        const response = await call(mine, method, url, method === 'PATCH' ? { a: 'b' } : undefined);
        assert.equal(response.statusCode, 404, url);
        assert.equal(response.json().error.code, 'APPOINTMENT_NOT_FOUND');
      }
      const record = (await call(theirs, 'GET', `/dr/v1/appointment/${theirAppointment}`)).json();
      assert.equal(record.status, 'BK');
      assert.deepEqual(record.custom_attributes, {});
      const completer = await createTestClient(t.ctx, { businessId: theirs.client.businessId, scopes: ['appointment:complete'] });
      assert.equal((await call(theirs, 'GET', `/dr/v1/business/appointments/${theirAppointment}`, undefined, completer.token)).statusCode, 200);
      for (const [method, url] of [
        ['POST', `/dr/v1/appointment/${theirAppointment}/parked`],
        ['PATCH', `/dr/v1/appointment/${theirAppointment}/custom_attribute`],
      ] as const) {
        const refused = await call(theirs, method, url, method === 'PATCH' ? { a: 'b' } : undefined, completer.token);
        assert.equal(refused.statusCode, 403, url);
        const anonymous = await t.app.inject({ method, url, ...(method === 'PATCH' && { payload: { a: 'b' } }) });
        assert.equal(anonymous.statusCode, 401, url);
      }
      assert.equal((await t.app.inject({ method: 'GET', url: `/dr/v1/business/appointments/${theirAppointment}` })).statusCode, 401);
    });

    it('v2 update: no token 401, a token without appointment:write 403', async () => {
      const p = await createPractice(t);
      const id = await book(t, p);
      const anonymous = await t.app.inject({ method: 'PATCH', url: `/dr/v2/appointment/${id}`, payload: { token: 1 } });
      assert.equal(anonymous.statusCode, 401);
      assert.equal(anonymous.json().error.code, 'UNAUTHORIZED');
      const completer = await createTestClient(t.ctx, { businessId: p.client.businessId, scopes: ['appointment:complete'] });
      const refused = await call(p, 'PATCH', `/dr/v2/appointment/${id}`, { token: 1 }, completer.token);
      assert.equal(refused.statusCode, 403);
      assert.equal(refused.json().error.code, 'ACCESS_DENIED');
    });
  });

  describe('concurrency', () => {
    it('custom attributes set at once by many requests: every key lands, one event each', async () => {
      const p = await createPractice(t);
      const id = await book(t, p);
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) => call(p, 'PATCH', `/dr/v1/appointment/${id}/custom_attribute`, { [`k${i}`]: [`v${i}`] })),
      );
      for (const answer of answers) assert.equal(answer.statusCode, 204, answer.body);
      const attributes = (await call(p, 'GET', `/dr/v1/appointment/${id}`)).json().custom_attributes;
      assert.deepEqual(Object.keys(attributes).sort(), Array.from({ length: 10 }, (_, i) => `k${i}`).sort());
      const updated = await t.ctx.storage.db
        .selectFrom('events')
        .select('sequence')
        .where('business_id', '=', p.client.businessId)
        .where('type', '=', 'appointment.updated')
        .execute();
      assert.equal(updated.length, 10);
    });

    it('bookings of one patient by id racing with a change of that patient all land, on one patient', async () => {
      const p = await createPractice(t);
      const patientId = await createPatient(p);
      const answers = await Promise.all([
        ...Array.from({ length: 6 }, (_, i) =>
          call(
            p,
            'POST',
            '/dr/v1/appointment',
            sdkBooking(p, { patient_id: patientId }, START + i * 3600, { patient_details: { last_name: `L${i}` } }),
          ),
        ),
        call(p, 'PATCH', `/dr/v1/patient/${patientId}`, { first_name: 'Meenakshi' }),
      ]);
      for (const answer of answers) assert.ok([200, 201].includes(answer.statusCode), answer.body);
      const rows = await t.ctx.storage.db.selectFrom('appointments').select('patient_id').where('business_id', '=', p.client.businessId).execute();
      assert.deepEqual(new Set(rows.map((row) => row.patient_id)), new Set([patientId]));
      assert.equal(rows.length, 6);
      const patient = (await call(p, 'GET', `/dr/v1/patient/${patientId}`)).json();
      assert.equal(patient.first_name, 'Meenakshi');
      assert.match(patient.last_name, /^L\d$/);
    });
  });
});
