import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';
import { book, bookingBody, createPractice, request, START, type Practice } from '../appointments/support.ts';
import { assertValid, ekaResponse, shapeOf } from './eka-schemas.ts';

/** An hour ago: an appointment over before the delete. */
const PAST = Math.floor(Date.now() / 1000) - 3600;

describe(`Eka's directory paths: reads and deletes (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(async () => t.close());

  const call = (token: string, method: string, url: string, payload?: unknown) => request(t, token, method, url, payload);

  /** A business with two clinics (one with every field) and two doctors, assigned. */
  async function directory(): Promise<{ client: TestClient; clinics: string[]; doctors: string[]; tag: string }> {
    const client = await createTestClient(t.ctx);
    const tag = client.businessId.slice(-6);
    const created = async (url: string, body: Record<string, unknown>) => {
      const response = await call(client.token, 'POST', url, body);
      assert.equal(response.statusCode, 201, response.body);
      return response.json().svcid as string;
    };
    const d1 = await created('/cdr/v1/doctor/', {
      firstname: 'Asha',
      lastname: 'Rao',
      gender: 'F',
      email: 'asha@clinic.example',
      specialisations: ['Cardiologist', 'General Physician'],
      partner_id: `pd1-${tag}`,
    });
    const d2 = await created('/cdr/v1/doctor/', { firstname: 'Vikram', lastname: 'Iyer' });
    const c1 = await created('/cdr/v1/clinic/', {
      name: 'Sunrise Clinic',
      address: '1 MG Road',
      partner_id: `pc1-${tag}`,
      pincode: '560001',
      contact: '08012345678',
      city: 'Bengaluru',
      state: 'Karnataka',
      doctor_ids: [d1, d2],
    });
    const c2 = await created('/cdr/v1/clinic/', { name: 'North Clinic', address: '2 Hill Street', doctor_ids: [d1] });
    return { client, clinics: [c1, c2], doctors: [d1, d2], tag };
  }

  describe('happy', () => {
    it("reads a clinic by service id and by partner id, in Eka's shape", async () => {
      const { client, clinics, tag } = await directory();
      const expected = {
        success: true,
        data: {
          clinic: {
            clinic_id: clinics[0],
            partner_id: `pc1-${tag}`,
            name: 'Sunrise Clinic',
            address: { line1: '1 MG Road', city: 'Bengaluru', state: 'Karnataka', pincode: '560001' },
          },
        },
      };
      const { schema } = ekaResponse('/dr/v1/business/clinic/{clinic_id}', 'get', '200');
      for (const url of [
        `/dr/v1/business/clinic/${clinics[0]}`,
        `/dr/v1/business/clinic/pc1-${tag}?partner_id=1`,
        `/dr/v1/business/clinic/${clinics[0]}/`,
      ]) {
        const response = await call(client.token, 'GET', url);
        assert.equal(response.statusCode, 200, url);
        assert.deepEqual(response.json(), expected);
        assertValid(schema, response.json(), url);
      }
      const bare = await call(client.token, 'GET', `/dr/v1/business/clinic/${clinics[1]}`);
      assert.deepEqual(bare.json().data.clinic, { clinic_id: clinics[1], name: 'North Clinic', address: { line1: '2 Hill Street' } });
      assertValid(schema, bare.json(), 'a clinic without optional fields');
    });

    it("reads a doctor's profile with its clinics, in Eka's shape", async () => {
      const { client, clinics, doctors, tag } = await directory();
      const { schema } = ekaResponse('/dr/v1/doctor/{doctor_id}', 'get', '200');
      const response = await call(client.token, 'GET', `/dr/v1/doctor/pd1-${tag}?partner_id=1`);
      assert.equal(response.statusCode, 200, response.body);
      assertValid(schema, response.json(), 'doctor');
      assert.deepEqual(response.json(), {
        id: doctors[0],
        partner_id: `pd1-${tag}`,
        profile: {
          personal: { salutation: 'Dr.', first_name: 'Asha', middle_name: '', last_name: 'Rao', dob: '', gender: 'F', email: 'asha@clinic.example' },
          professional: {
            active: true,
            about: '',
            language: [],
            degree: [],
            major_speciality: { name: 'Cardiologist', code: '' },
            speciality: [{ name: 'Cardiologist' }, { name: 'General Physician' }],
            clinics: [
              {
                id: clinics[0],
                partner_id: `pc1-${tag}`,
                name: 'Sunrise Clinic',
                contacts: [{ name: 'Phone', number: '08012345678' }],
                address: { line1: '1 MG Road', city: 'Bengaluru', country: '', state: 'Karnataka', pin: '560001' },
              },
              { id: clinics[1], name: 'North Clinic', contacts: [], address: { line1: '2 Hill Street', city: '', country: '', state: '', pin: '' } },
            ],
            default_clinic: clinics[0],
          },
        },
      });
      const plain = await call(client.token, 'GET', `/dr/v1/doctor/${doctors[1]}`);
      assert.equal(plain.statusCode, 200);
      assertValid(schema, plain.json(), 'a doctor without optional fields');
      assert.equal(plain.json().profile.professional.default_clinic, clinics[0]);
    });

    it("lists the business's clinics and doctors (entities), in the shape of Eka's example", async () => {
      const { client, clinics, doctors, tag } = await directory();
      const response = await call(client.token, 'GET', '/dr/v1/business/entities');
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(response.json(), {
        status_code: 200,
        success: true,
        data: {
          clinics: [
            { clinic_id: clinics[0], partner_id: `pc1-${tag}`, name: 'Sunrise Clinic', doctors: [doctors[0], doctors[1]] },
            { clinic_id: clinics[1], name: 'North Clinic', doctors: [doctors[0]] },
          ],
          // Each doctor's clinics too, as eka-mcp-sdk's doctor profile reads them (doctors[].clinics[].clinic_id).
          doctors: [
            {
              doctor_id: doctors[0],
              partner_id: `pd1-${tag}`,
              name: 'Dr. Asha Rao',
              clinics: [
                { clinic_id: clinics[0], name: 'Sunrise Clinic' },
                { clinic_id: clinics[1], name: 'North Clinic' },
              ],
            },
            { doctor_id: doctors[1], name: 'Dr. Vikram Iyer', clinics: [{ clinic_id: clinics[0], name: 'Sunrise Clinic' }] },
          ],
          business: { business_id: client.businessId, name: 'Test Business' },
        },
      });
      // Eka documents this response's schema as `type: string`; its example is the shape its clients read.
      // `pic` (a photo) is not kept by the service.
      const { schema, example } = ekaResponse('/dr/v1/business/entities', 'get', '200');
      assert.equal(schema.type, 'string');
      assertValid(shapeOf(example, new Set(['pic'])), response.json(), 'entities');
    });

    it('deletes a clinic: 404 to every read afterwards, gone from lists and entities, not bookable; past appointments stay readable', async () => {
      const p = await createPractice(t);
      const past = await book(t, p, { appointment_details: { start_time: PAST - 900, end_time: PAST } });
      const cancelledFuture = await book(t, p);
      assert.equal((await call(p.client.token, 'PUT', `/dr/v1/appointment/${cancelledFuture}/cancel`)).statusCode, 200);
      const response = await call(p.client.token, 'DELETE', `/cdr/v1/clinic/${p.clinicId}/`);
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(response.json(), { status: 'success', message: 'Clinic Deleted Successfully' });
      assertValid(ekaResponse('/cdr/v1/clinic/{clinic_id}/', 'delete', '200').schema, response.json(), 'delete');

      for (const url of [`/cdr/v1/clinic/${p.clinicId}`, `/cdr/v1/clinic/${p.partnerClinicId}?partner_id=1`]) {
        const read = await call(p.client.token, 'GET', url);
        assert.equal(read.statusCode, 404, url);
        assert.deepEqual(read.json(), { status: 'error', message: 'Clinic not found' });
      }
      for (const url of [`/dr/v1/business/clinic/${p.clinicId}`, `/dr/v1/business/clinic/${p.partnerClinicId}?partner_id=1`]) {
        const read = await call(p.client.token, 'GET', url);
        assert.equal(read.statusCode, 404, url);
        assert.deepEqual(read.json(), { error: { code: 'NOT_FOUND', message: 'Clinic not found' } });
      }
      const again = await call(p.client.token, 'DELETE', `/cdr/v1/clinic/${p.clinicId}/`);
      assert.equal(again.statusCode, 404);
      assertValid(ekaResponse('/cdr/v1/clinic/{clinic_id}/', 'delete', '404').schema, again.json(), 'delete 404');
      assert.equal((await call(p.client.token, 'PATCH', `/cdr/v1/clinic/${p.clinicId}`, { name: 'Back' })).statusCode, 404);
      assert.deepEqual((await call(p.client.token, 'GET', '/cdr/v1/clinic')).json().clinics, []);
      const entities = (await call(p.client.token, 'GET', '/dr/v1/business/entities')).json().data;
      assert.deepEqual(entities.clinics, []);
      assert.deepEqual(entities.doctors.find((d: { doctor_id: string }) => d.doctor_id === p.doctorId).clinics, []);
      const doctor = (await call(p.client.token, 'GET', `/cdr/v1/doctor/${p.doctorId}`)).json().doctor;
      assert.deepEqual(doctor.clinic_ids, [], 'the assignment went with the clinic');
      assert.equal((await call(p.client.token, 'GET', `/dr/v1/doctor/${p.doctorId}`)).json().profile.professional.default_clinic, '');

      for (const body of [bookingBody(p), bookingBody(p, { clinic_id: undefined, partner_clinic_id: p.partnerClinicId })]) {
        const booking = await call(p.client.token, 'POST', '/dr/v1/appointment', body);
        assert.equal(booking.statusCode, 400, booking.body);
        assert.match(booking.json().error.message, /clinic_id: unknown clinic/);
      }
      const assigning = await call(p.client.token, 'PATCH', `/cdr/v1/doctor/${p.doctorId}`, { clinic_ids: [p.clinicId] });
      assert.equal(assigning.statusCode, 400);
      assert.deepEqual(assigning.json(), { clinic_ids: [`Unknown clinic id: ${p.clinicId}`] });

      for (const id of [past, cancelledFuture]) {
        const read = await call(p.client.token, 'GET', `/dr/v1/appointment/${id}`);
        assert.equal(read.statusCode, 200);
        assert.equal(read.json().clinic_id, p.clinicId);
        assert.equal(read.json().partner_clinic_id, p.partnerClinicId);
      }
      const listed = await call(p.client.token, 'GET', `/dr/v1/appointment?clinic_id=${p.clinicId}`);
      assert.deepEqual(
        listed
          .json()
          .appointments.map((a: { appointment_id: string }) => a.appointment_id)
          .sort(),
        [past, cancelledFuture].sort(),
      );
      // It may move within the past, not into the future, where the deleted clinic would take it again.
      const future = await call(p.client.token, 'PATCH', `/dr/v1/appointment/${past}`, { start_time: PAST + 7200, end_time: PAST + 8100 });
      assert.equal(future.statusCode, 409, future.body);
      assert.match(future.json().error.message, /clinic was deleted/);
      const earlier = await call(p.client.token, 'PATCH', `/dr/v1/appointment/${past}`, { start_time: PAST - 1800, end_time: PAST - 900 });
      assert.equal(earlier.statusCode, 200, earlier.body);
      // The past appointment can still be completed (its review falls back to the hosted page).
      assert.equal((await call(p.client.token, 'POST', `/dr/v1/appointment/${past}/complete`)).json().status, 'CM');
    });

    it("a deleted clinic's partner id can be given to a new clinic; the old appointments keep theirs", async () => {
      const p = await createPractice(t);
      const past = await book(t, p, { appointment_details: { start_time: PAST - 900, end_time: PAST } });
      assert.equal((await call(p.client.token, 'DELETE', `/cdr/v1/clinic/${p.partnerClinicId}/?partner_id=1`)).statusCode, 200);
      const created = await call(p.client.token, 'POST', '/cdr/v1/clinic/', {
        name: 'Sunrise Reopened',
        address: '3 MG Road',
        partner_id: p.partnerClinicId,
        doctor_ids: [p.doctorId],
      });
      assert.equal(created.statusCode, 201, created.body);
      const newId = created.json().svcid;
      assert.notEqual(newId, p.clinicId);
      const read = await call(p.client.token, 'GET', `/dr/v1/business/clinic/${p.partnerClinicId}?partner_id=1`);
      assert.equal(read.json().data.clinic.clinic_id, newId);
      const bookedAgain = await book(t, p, { clinic_id: undefined, partner_clinic_id: p.partnerClinicId });
      assert.equal((await call(p.client.token, 'GET', `/dr/v1/appointment/${bookedAgain}`)).json().clinic_id, newId);
      const old = (await call(p.client.token, 'GET', `/dr/v1/appointment/${past}`)).json();
      assert.equal(old.clinic_id, p.clinicId);
      assert.equal(old.partner_clinic_id, p.partnerClinicId);
      // One partner id among the records not deleted.
      const duplicate = await call(p.client.token, 'POST', '/cdr/v1/clinic/', { name: 'Twin', address: '4 MG Road', partner_id: p.partnerClinicId });
      assert.equal(duplicate.statusCode, 400);
      assert.deepEqual(duplicate.json(), { partner_id: ['A clinic with this partner_id already exists.'] });
    });

    it('deletes a doctor: refused while a future appointment is booked, done once it is cancelled; gone from its clinics', async () => {
      const p = await createPractice(t);
      const future = await book(t, p);
      const refused = await call(p.client.token, 'DELETE', `/cdr/v1/doctor/${p.doctorId}/`);
      assert.equal(refused.statusCode, 409, refused.body);
      assert.deepEqual(refused.json(), { message: ['This doctor has upcoming appointments that are not cancelled: cancel them first.'] });
      assert.equal((await call(p.client.token, 'GET', `/dr/v1/doctor/${p.doctorId}`)).statusCode, 200, 'still there');
      assert.equal((await call(p.client.token, 'PUT', `/dr/v1/appointment/${future}/cancel`)).statusCode, 200);
      const deleted = await call(p.client.token, 'DELETE', `/cdr/v1/doctor/${p.partnerDoctorId}?partner_id=1`);
      assert.equal(deleted.statusCode, 200, deleted.body);
      assert.deepEqual(deleted.json(), { status: 'success', message: 'Doctor Deleted Successfully' });
      assertValid(ekaResponse('/cdr/v1/doctor/{doc_id}/', 'delete', '200').schema, deleted.json(), 'delete doctor');
      const read = await call(p.client.token, 'GET', `/dr/v1/doctor/${p.doctorId}`);
      assert.equal(read.statusCode, 404);
      assert.deepEqual(read.json(), { error: { code: 'NOT_FOUND', message: 'Doctor not found' } });
      assert.equal((await call(p.client.token, 'GET', `/cdr/v1/doctor/${p.doctorId}`)).statusCode, 404);
      assert.deepEqual((await call(p.client.token, 'GET', `/cdr/v1/clinic/${p.clinicId}`)).json().clinic.doctors, []);
      assert.deepEqual((await call(p.client.token, 'GET', '/dr/v1/business/entities')).json().data.clinics[0].doctors, []);
      const booking = await call(p.client.token, 'POST', '/dr/v1/appointment', bookingBody(p));
      assert.equal(booking.statusCode, 400);
      assert.match(booking.json().error.message, /doctor_id: unknown doctor/);
      assert.equal((await call(p.client.token, 'GET', `/dr/v1/appointment/${future}`)).json().doctor_id, p.doctorId);
    });
  });

  describe('errors', () => {
    it('a clinic with a future booked, no-show or completed appointment is not deleted (409); an appointment in progress counts', async () => {
      const p = await createPractice(t);
      const now = Math.floor(Date.now() / 1000);
      const inProgress = await book(t, p, { appointment_details: { start_time: now - 600, end_time: now + 600 } });
      const assertRefused = async () => {
        const response = await call(p.client.token, 'DELETE', `/cdr/v1/clinic/${p.clinicId}/`);
        assert.equal(response.statusCode, 409, response.body);
        assert.deepEqual(response.json(), { message: ['This clinic has upcoming appointments that are not cancelled: cancel them first.'] });
      };
      await assertRefused();
      assert.equal((await call(p.client.token, 'PUT', `/dr/v1/appointment/${inProgress}/cancel`)).statusCode, 200);
      const noShow = await book(t, p);
      assert.equal((await call(p.client.token, 'POST', `/dr/v1/appointment/${noShow}/change-status`, { status: 'NS' })).statusCode, 200);
      await assertRefused();
      assert.equal((await call(p.client.token, 'PUT', `/dr/v1/appointment/${noShow}/cancel`)).statusCode, 200);
      assert.equal((await call(p.client.token, 'DELETE', `/cdr/v1/clinic/${p.clinicId}/`)).statusCode, 200);
    });

    it('unknown ids: 404 in the family of each path', async () => {
      const client = await createTestClient(t.ctx);
      for (const [url, message] of [
        ['/dr/v1/business/clinic/cli_nope', 'Clinic not found'],
        ['/dr/v1/business/clinic/cli_nope?partner_id=1', 'Clinic not found'],
        ['/dr/v1/doctor/doc_nope', 'Doctor not found'],
      ] as const) {
        const response = await call(client.token, 'GET', url);
        assert.equal(response.statusCode, 404, url);
        assert.deepEqual(response.json(), { error: { code: 'NOT_FOUND', message } });
      }
      for (const [url, message] of [
        ['/cdr/v1/clinic/cli_nope/', 'Clinic not found'],
        ['/cdr/v1/doctor/doc_nope/?partner_id=1', 'Doctor not found'],
      ] as const) {
        const response = await call(client.token, 'DELETE', url);
        assert.equal(response.statusCode, 404, url);
        assert.deepEqual(response.json(), { status: 'error', message });
      }
      const long = await call(client.token, 'GET', `/dr/v1/doctor/${'x'.repeat(201)}`);
      assert.equal(long.statusCode, 400);
      assert.equal(long.json().error.code, 'INVALID_REQUEST');
    });

    it('an empty business has empty entities', async () => {
      const client = await createTestClient(t.ctx);
      const response = await call(client.token, 'GET', '/dr/v1/business/entities');
      assert.deepEqual(response.json().data, { clinics: [], doctors: [], business: { business_id: client.businessId, name: 'Test Business' } });
    });
  });

  describe('security', () => {
    it('no token: 401 in the family of each path; deletes need clinic:write (403); reads take any valid token', async () => {
      const { client, clinics, doctors } = await directory();
      const reads = [`/dr/v1/business/clinic/${clinics[0]}`, `/dr/v1/doctor/${doctors[0]}`, '/dr/v1/business/entities'];
      const deletes = [`/cdr/v1/clinic/${clinics[1]}/`, `/cdr/v1/doctor/${doctors[1]}/`];
      for (const url of reads) {
        const response = await t.app.inject({ method: 'GET', url });
        assert.equal(response.statusCode, 401, url);
        assert.equal(response.json().error.code, 'UNAUTHORIZED');
      }
      for (const url of deletes) {
        const response = await t.app.inject({ method: 'DELETE', url });
        assert.equal(response.statusCode, 401, url);
        assert.ok(Array.isArray(response.json().message), response.body);
      }
      const reader = await createTestClient(t.ctx, { businessId: client.businessId, scopes: ['search'] });
      for (const url of reads) assert.equal((await call(reader.token, 'GET', url)).statusCode, 200, url);
      for (const url of deletes) {
        const response = await call(reader.token, 'DELETE', url);
        assert.equal(response.statusCode, 403, url);
        assert.ok(Array.isArray(response.json().message), response.body);
      }
      const writer = await createTestClient(t.ctx, { businessId: client.businessId, scopes: ['clinic:write'] });
      for (const url of deletes) assert.equal((await call(writer.token, 'DELETE', url)).statusCode, 200, url);
    });

    it("another business's clinics and doctors answer as unknown ones, and its deletes touch nothing", async () => {
      const mine = await directory();
      const theirs = await directory();
      const cases: Array<[string, string, number]> = [
        ['GET', `/dr/v1/business/clinic/${theirs.clinics[0]}`, 404],
        ['GET', `/dr/v1/business/clinic/pc1-${theirs.tag}?partner_id=1`, 404],
        ['GET', `/dr/v1/doctor/${theirs.doctors[0]}`, 404],
        ['GET', `/dr/v1/doctor/pd1-${theirs.tag}?partner_id=1`, 404],
        ['DELETE', `/cdr/v1/clinic/${theirs.clinics[0]}/`, 404],
        ['DELETE', `/cdr/v1/clinic/pc1-${theirs.tag}/?partner_id=1`, 404],
        ['DELETE', `/cdr/v1/doctor/${theirs.doctors[0]}/`, 404],
      ];
      for (const [method, url, status] of cases) assert.equal((await call(mine.client.token, method, url)).statusCode, status, `${method} ${url}`);
      const entities = (await call(mine.client.token, 'GET', '/dr/v1/business/entities')).json().data;
      assert.deepEqual(
        entities.clinics.map((c: { clinic_id: string }) => c.clinic_id),
        mine.clinics,
      );
      assert.deepEqual(
        entities.doctors.map((d: { doctor_id: string }) => d.doctor_id),
        mine.doctors,
      );
      assert.equal((await call(theirs.client.token, 'GET', `/dr/v1/business/clinic/${theirs.clinics[0]}`)).statusCode, 200);
      assert.equal((await call(theirs.client.token, 'GET', `/dr/v1/doctor/${theirs.doctors[0]}`)).statusCode, 200);
      // Their appointments do not hold my delete back, nor mine theirs.
      const practice: Practice = {
        client: theirs.client,
        clinicId: theirs.clinics[0]!,
        doctorId: theirs.doctors[0]!,
        partnerClinicId: `pc1-${theirs.tag}`,
        partnerDoctorId: `pd1-${theirs.tag}`,
      };
      await book(t, practice);
      assert.equal((await call(mine.client.token, 'DELETE', `/cdr/v1/clinic/${mine.clinics[0]}/`)).statusCode, 200);
    });
  });

  describe('concurrency', () => {
    it('bookings racing a delete: the delete is refused, or no booked appointment is left on the deleted clinic or doctor', async () => {
      for (const kind of ['clinic', 'doctor'] as const) {
        for (let round = 0; round < 6; round++) {
          const p = await createPractice(t);
          const results = await Promise.all([
            ...Array.from({ length: 4 }, (_, i) =>
              call(
                p.client.token,
                'POST',
                '/dr/v1/appointment',
                bookingBody(p, { appointment_details: { start_time: START + i * 900, end_time: START + i * 900 + 900 } }),
              ),
            ),
            call(p.client.token, 'DELETE', `/cdr/v1/${kind}/${kind === 'clinic' ? p.clinicId : p.doctorId}/`),
          ]);
          const deletion = results.at(-1)!;
          const bookings = results.slice(0, -1);
          assert.ok([200, 409].includes(deletion.statusCode), deletion.body);
          for (const booking of bookings) assert.ok([201, 400].includes(booking.statusCode), booking.body);
          const booked = bookings.filter((b) => b.statusCode === 201).length;
          const listed = (await call(p.client.token, 'GET', `/dr/v1/appointment?${kind}_id=${kind === 'clinic' ? p.clinicId : p.doctorId}`)).json()
            .appointments as Array<{ status: string }>;
          assert.equal(listed.length, booked);
          if (deletion.statusCode === 200) assert.equal(booked, 0, `${kind} deleted with ${booked} booked appointments`);
          else assert.ok(booked > 0, 'refused only for an appointment');
        }
      }
    });
  });
});
