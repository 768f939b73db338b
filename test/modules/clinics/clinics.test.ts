import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';

describe(`clinics and doctors (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  before(async () => {
    t = await createTestApp();
    client = await createTestClient(t.ctx);
  });
  after(async () => t.close());

  const call = (method: string, url: string, payload?: unknown, token = client.token) =>
    t.app.inject({ method: method as 'GET', url, headers: { auth: token }, ...(payload === undefined ? {} : { payload: payload as object }) });
  const createDoctor = async (body: Record<string, unknown>, token = client.token) => {
    const response = await call('POST', '/cdr/v1/doctor/', { firstname: 'Asha', lastname: 'Rao', ...body }, token);
    assert.equal(response.statusCode, 201, response.body);
    return response.json().svcid as string;
  };
  const createClinic = async (body: Record<string, unknown>, token = client.token) => {
    const response = await call('POST', '/cdr/v1/clinic/', { name: 'Sunrise', address: '1 MG Road', ...body }, token);
    assert.equal(response.statusCode, 201, response.body);
    return response.json().svcid as string;
  };

  describe('happy', () => {
    it('creates a clinic with doctors and reads it by service id and by partner id, with and without the slash', async () => {
      const doctorId = await createDoctor({ partner_id: 'doc-happy-1' });
      const response = await call('POST', '/cdr/v1/clinic/', {
        name: 'Sunrise Clinic',
        address: '1 MG Road',
        partner_id: 'cl-happy-1',
        pincode: '560001',
        contact: '08012345678',
        doctor_ids: [doctorId],
        city: 'Bengaluru',
        state: 'KA',
        review_link: 'https://reviews.example/sunrise',
      });
      assert.equal(response.statusCode, 201);
      const { status, svcid } = response.json();
      assert.equal(status, 'success');
      assert.match(svcid, /^cli_/);
      const expected = {
        id: svcid,
        name: 'Sunrise Clinic',
        address: '1 MG Road',
        pincode: '560001',
        contact: '08012345678',
        city: 'Bengaluru',
        state: 'KA',
        partner_id: 'cl-happy-1',
        review_link: 'https://reviews.example/sunrise',
        doctors: [{ id: doctorId, firstname: 'Asha', lastname: 'Rao', partner_id: 'doc-happy-1' }],
      };
      for (const url of [
        `/cdr/v1/clinic/${svcid}/`,
        `/cdr/v1/clinic/${svcid}`,
        '/cdr/v1/clinic/cl-happy-1/?partner_id=1',
        '/cdr/v1/clinic/cl-happy-1?partner_id=1',
      ]) {
        const read = await call('GET', url);
        assert.equal(read.statusCode, 200, url);
        assert.deepEqual(read.json(), { status: 'success', clinic: expected });
      }
      const list = await call('GET', '/cdr/v1/clinic');
      assert.equal(list.json().status, 'success');
      assert.deepEqual(
        list.json().clinics.find((c: { id: string }) => c.id === svcid),
        expected,
      );
    });

    it('also takes the path without the trailing slash and assigns doctors by partner id', async () => {
      await createDoctor({ partner_id: 'doc-happy-2' });
      const response = await call('POST', '/cdr/v1/clinic', { name: 'North', address: '2 Hill St', partner_doctor_ids: ['doc-happy-2'] });
      assert.equal(response.statusCode, 201);
      const clinic = (await call('GET', `/cdr/v1/clinic/${response.json().svcid}`)).json().clinic;
      assert.deepEqual(
        clinic.doctors.map((d: { partner_id: string }) => d.partner_id),
        ['doc-happy-2'],
      );
      assert.equal(clinic.pincode, null);
      assert.equal(clinic.review_link, null);
    });

    it('updates the fields sent and adds the doctor ids sent', async () => {
      const first = await createDoctor({});
      const second = await createDoctor({ partner_id: 'doc-happy-3' });
      const clinicId = await createClinic({ partner_id: 'cl-happy-3', doctor_ids: [first], city: 'Pune' });
      const response = await call('PATCH', `/cdr/v1/clinic/${clinicId}/`, { name: 'Renamed', partner_doctor_ids: ['doc-happy-3'] });
      assert.equal(response.statusCode, 200, response.body);
      const clinic = response.json().clinic;
      assert.equal(clinic.name, 'Renamed');
      assert.equal(clinic.city, 'Pune', 'fields not sent are kept');
      assert.deepEqual(clinic.doctors.map((d: { id: string }) => d.id).sort(), [first, second].sort());
      const byPartner = await call('PATCH', '/cdr/v1/clinic/cl-happy-3?partner_id=1', { doctor_ids: [first], review_link: 'https://r.example/x' });
      assert.equal(byPartner.statusCode, 200);
      assert.equal(byPartner.json().clinic.doctors.length, 2, 'an assigned doctor sent again is not duplicated');
      assert.equal(byPartner.json().clinic.review_link, 'https://r.example/x');
    });

    it('creates, reads, lists and updates doctors, with clinics by either id', async () => {
      const clinicA = await createClinic({ partner_id: 'cl-happy-4' });
      const clinicB = await createClinic({});
      const response = await call('POST', '/cdr/v1/doctor', {
        firstname: 'Meera',
        lastname: 'Iyer',
        gender: 'F',
        mobile: '+919800000001',
        email: 'meera@example.com',
        specialisations: ['Dermatology'],
        partner_id: 'doc-happy-4',
        review_link: 'https://r.example/meera',
        partner_clinic_ids: ['cl-happy-4'],
      });
      assert.equal(response.statusCode, 201);
      const id = response.json().svcid;
      const expected = {
        id,
        firstname: 'Meera',
        lastname: 'Iyer',
        gender: 'F',
        mobile: '+919800000001',
        email: 'meera@example.com',
        specialisations: ['Dermatology'],
        partner_id: 'doc-happy-4',
        review_link: 'https://r.example/meera',
        clinic_ids: [clinicA],
      };
      assert.deepEqual((await call('GET', `/cdr/v1/doctor/${id}/`)).json(), { status: 'success', doctor: expected });
      assert.deepEqual((await call('GET', '/cdr/v1/doctor/doc-happy-4?partner_id=1')).json().doctor, expected);
      assert.deepEqual(
        (await call('GET', '/cdr/v1/doctor/')).json().doctors.find((d: { id: string }) => d.id === id),
        expected,
      );
      const updated = await call('PATCH', `/cdr/v1/doctor/${id}`, { lastname: 'Iyer-Shah', clinic_ids: [clinicB] });
      assert.equal(updated.statusCode, 200);
      assert.equal(updated.json().doctor.lastname, 'Iyer-Shah');
      assert.equal(updated.json().doctor.firstname, 'Meera');
      assert.deepEqual(updated.json().doctor.clinic_ids.sort(), [clinicA, clinicB].sort());
      const clinic = (await call('GET', `/cdr/v1/clinic/${clinicB}`)).json().clinic;
      assert.deepEqual(
        clinic.doctors.map((d: { id: string }) => d.id),
        [id],
      );
    });

    it('lists 50 a page with page_no from 0', async () => {
      const other = await createTestClient(t.ctx);
      for (let i = 0; i < 51; i++) await createClinic({ name: `Clinic ${i}` }, other.token);
      const first = (await call('GET', '/cdr/v1/clinic/', undefined, other.token)).json().clinics;
      const second = (await call('GET', '/cdr/v1/clinic/?page_no=1', undefined, other.token)).json().clinics;
      assert.equal(first.length, 50);
      assert.equal(second.length, 1);
      assert.equal(second[0].name, 'Clinic 50');
    });
  });

  describe('errors', () => {
    it('refuses an id list longer than 500 without looking the ids up (SQLite allows 32,766 parameters)', async () => {
      const ids = Array.from({ length: 32_767 }, (_, i) => `d${i}`);
      for (const [url, body] of [
        ['/cdr/v1/clinic/', { name: 'Big', address: '1 MG Road', partner_doctor_ids: ids }],
        ['/cdr/v1/doctor/', { firstname: 'Asha', lastname: 'Rao', clinic_ids: ids }],
      ] as const) {
        const response = await call('POST', url, body);
        assert.equal(response.statusCode, 400, url);
        assert.deepEqual(Object.values(response.json()), [['must NOT have more than 500 items']], url);
      }
    });

    it('refuses an id list with a NUL or an unpaired surrogate in an item without looking the ids up (PostgreSQL refuses NUL: 500)', async () => {
      const clinic = await createClinic({});
      const doctor = await createDoctor({});
      for (const bad of ['\u0000', 'd\u0000x', '\ud800']) {
        for (const [method, url, body, field] of [
          ['POST', '/cdr/v1/clinic/', { name: 'Nul', address: '1 MG Road', partner_doctor_ids: [bad] }, 'partner_doctor_ids'],
          ['POST', '/cdr/v1/clinic/', { name: 'Nul', address: '1 MG Road', doctor_ids: ['doc_x', bad] }, 'doctor_ids'],
          ['POST', '/cdr/v1/doctor/', { firstname: 'Asha', lastname: 'Rao', clinic_ids: [bad] }, 'clinic_ids'],
          ['PATCH', `/cdr/v1/clinic/${clinic}`, { partner_doctor_ids: [bad] }, 'partner_doctor_ids'],
          ['PATCH', `/cdr/v1/doctor/${doctor}`, { partner_clinic_ids: [bad] }, 'partner_clinic_ids'],
        ] as const) {
          const response = await call(method, url, body);
          assert.equal(response.statusCode, 400, `${method} ${url} ${JSON.stringify(body)}: ${response.body}`);
          const problems = response.json();
          assert.ok(
            Object.keys(problems).some((key) => key.startsWith(`${field}.`)),
            response.body,
          );
          assert.equal(problems[field], undefined, `no lookup of the refused list: ${response.body}`);
        }
      }
    });

    it('reports required fields and the contact rule together, DRF style', async () => {
      const response = await call('POST', '/cdr/v1/clinic/', { contact: '12345' });
      assert.equal(response.statusCode, 400);
      assert.deepEqual(response.json(), {
        name: ['This field is required.'],
        address: ['This field is required.'],
        contact: ['Ensure this value has 10 or 11 digits.'],
      });
    });

    it('reports schema problems and cross-field rules at once', async () => {
      const doctorId = await createDoctor({});
      await createClinic({ partner_id: 'cl-dup' });
      const response = await call('POST', '/cdr/v1/clinic/', {
        address: 'x',
        contact: '0801234567890',
        partner_id: 'cl-dup',
        doctor_ids: [doctorId, 'doc_missing'],
      });
      assert.equal(response.statusCode, 400);
      assert.deepEqual(response.json(), {
        name: ['This field is required.'],
        contact: ['Ensure this value has 10 or 11 digits.'],
        doctor_ids: ['Unknown doctor id: doc_missing'],
        partner_id: ['A clinic with this partner_id already exists.'],
      });
    });

    it('refuses doctor_ids together with partner_doctor_ids', async () => {
      const response = await call('POST', '/cdr/v1/clinic/', { name: 'A', address: 'B', doctor_ids: [], partner_doctor_ids: ['x'] });
      assert.equal(response.statusCode, 400);
      assert.deepEqual(response.json(), { message: ['Only one of doctor_ids or partner_doctor_ids should be provided, not both.'] });
    });

    it('names unknown partner doctor ids, blank names, a non-https review link and wrong types', async () => {
      const response = await call('POST', '/cdr/v1/clinic', {
        name: '  ',
        address: 'B',
        partner_doctor_ids: ['nobody'],
        review_link: 'http://insecure.example',
        city: 5,
      });
      assert.equal(response.statusCode, 400);
      assert.deepEqual(response.json(), {
        review_link: ['Enter a valid https URL.'],
        city: ['must be a string'],
        name: ['This field may not be blank.'],
        partner_doctor_ids: ['Unknown partner doctor id: nobody'],
      });
    });

    it('validates clinic updates the same way, before existence', async () => {
      const clinicId = await createClinic({ partner_id: 'cl-upd-1' });
      await createClinic({ partner_id: 'cl-upd-2' });
      const duplicate = await call('PATCH', `/cdr/v1/clinic/${clinicId}`, { partner_id: 'cl-upd-2', contact: 'abc' });
      assert.equal(duplicate.statusCode, 400);
      assert.deepEqual(duplicate.json(), {
        contact: ['Ensure this value has 10 or 11 digits.'],
        partner_id: ['A clinic with this partner_id already exists.'],
      });
      const same = await call('PATCH', `/cdr/v1/clinic/${clinicId}`, { partner_id: 'cl-upd-1' });
      assert.equal(same.statusCode, 200, 'a clinic keeps its own partner_id');
      const invalidUnknown = await call('PATCH', '/cdr/v1/clinic/cli_nope', { contact: 'abc' });
      assert.equal(invalidUnknown.statusCode, 400, 'input is checked before existence');
    });

    it('validates doctors: required names, clinic ids xor, unknown clinics, duplicate partner_id', async () => {
      await createDoctor({ partner_id: 'doc-dup' });
      const response = await call('POST', '/cdr/v1/doctor/', {
        lastname: 'X',
        partner_id: 'doc-dup',
        clinic_ids: ['cli_nope'],
        email: 'not-an-email',
      });
      assert.equal(response.statusCode, 400);
      assert.deepEqual(response.json(), {
        firstname: ['This field is required.'],
        email: ['Enter a valid email address.'],
        clinic_ids: ['Unknown clinic id: cli_nope'],
        partner_id: ['A doctor with this partner_id already exists.'],
      });
      const both = await call('POST', '/cdr/v1/doctor/', { firstname: 'A', lastname: 'B', clinic_ids: [], partner_clinic_ids: [] });
      assert.deepEqual(both.json(), { message: ['Only one of clinic_ids or partner_clinic_ids should be provided, not both.'] });
    });

    it('answers unknown clinics and doctors with the not-found body', async () => {
      const clinicId = await createClinic({});
      const doctorId = await createDoctor({});
      for (const [url, message] of [
        ['/cdr/v1/clinic/cli_unknown/', 'Clinic not found'],
        [`/cdr/v1/clinic/${clinicId}?partner_id=1`, 'Clinic not found'],
        ['/cdr/v1/doctor/doc_unknown', 'Doctor not found'],
        [`/cdr/v1/doctor/${doctorId}/?partner_id=1`, 'Doctor not found'],
      ] as const) {
        const response = await call('GET', url);
        assert.equal(response.statusCode, 404, url);
        assert.deepEqual(response.json(), { status: 'error', message });
      }
      assert.deepEqual((await call('PATCH', '/cdr/v1/clinic/cli_unknown', { city: 'X' })).json(), { status: 'error', message: 'Clinic not found' });
      assert.deepEqual((await call('PATCH', '/cdr/v1/doctor/doc_unknown', { lastname: 'X' })).json(), {
        status: 'error',
        message: 'Doctor not found',
      });
    });

    it('answers malformed JSON with 400 in the clinics body', async () => {
      const response = await t.app.inject({
        method: 'POST',
        url: '/cdr/v1/clinic/',
        headers: { auth: client.token, 'content-type': 'application/json' },
        payload: '{"name": ',
      });
      assert.equal(response.statusCode, 400);
      assert.ok(Array.isArray(response.json().message));
    });
  });

  describe('security', () => {
    it('needs a token (401) and clinic:write for writes (403); reads take any valid token', async () => {
      const reader = await createTestClient(t.ctx, { businessId: client.businessId, scopes: ['search'] });
      const clinicId = await createClinic({});
      const doctorId = await createDoctor({});
      for (const [method, url] of [
        ['POST', '/cdr/v1/clinic/'],
        ['PATCH', `/cdr/v1/clinic/${clinicId}`],
        ['POST', '/cdr/v1/doctor/'],
        ['PATCH', `/cdr/v1/doctor/${doctorId}`],
      ]) {
        const anonymous = await t.app.inject({ method: method as 'POST', url, payload: { name: 'x' } });
        assert.equal(anonymous.statusCode, 401, `${method} ${url}`);
        assert.ok(Array.isArray(anonymous.json().message));
        const forbidden = await call(method!, url!, { name: 'x' }, reader.token);
        assert.equal(forbidden.statusCode, 403, `${method} ${url}`);
        assert.ok(Array.isArray(forbidden.json().message));
      }
      for (const url of ['/cdr/v1/clinic/', `/cdr/v1/clinic/${clinicId}`, '/cdr/v1/doctor/', `/cdr/v1/doctor/${doctorId}`]) {
        assert.equal((await t.app.inject({ method: 'GET', url })).statusCode, 401, url);
        assert.equal((await t.app.inject({ method: 'GET', url, headers: { auth: 'not-a-token' } })).statusCode, 401, url);
        assert.equal((await call('GET', url, undefined, reader.token)).statusCode, 200, url);
      }
    });

    it("never shows or touches another business's clinics and doctors", async () => {
      const other = await createTestClient(t.ctx);
      const doctorId = await createDoctor({ partner_id: 'iso-doc' });
      const clinicId = await createClinic({ partner_id: 'iso-clinic', doctor_ids: [doctorId] });
      const reads: Array<[string, string, string]> = [
        [`/cdr/v1/clinic/${clinicId}`, '/cdr/v1/clinic/cli_unknown', 'Clinic not found'],
        ['/cdr/v1/clinic/iso-clinic?partner_id=1', '/cdr/v1/clinic/unknown?partner_id=1', 'Clinic not found'],
        [`/cdr/v1/doctor/${doctorId}`, '/cdr/v1/doctor/doc_unknown', 'Doctor not found'],
        ['/cdr/v1/doctor/iso-doc?partner_id=1', '/cdr/v1/doctor/unknown?partner_id=1', 'Doctor not found'],
      ];
      for (const [theirs, unknown, message] of reads) {
        for (const method of ['GET', 'PATCH']) {
          const body = method === 'PATCH' ? { city: 'Hijacked', lastname: 'Hijacked' } : undefined;
          const a = await call(method, theirs, body, other.token);
          const b = await call(method, unknown, body, other.token);
          assert.equal(a.statusCode, 404, `${method} ${theirs}`);
          assert.deepEqual(a.json(), b.json());
          assert.deepEqual(a.json(), { status: 'error', message });
        }
      }
      assert.deepEqual((await call('GET', '/cdr/v1/clinic/', undefined, other.token)).json().clinics, []);
      assert.deepEqual((await call('GET', '/cdr/v1/doctor/', undefined, other.token)).json().doctors, []);
      const borrowing = await call('POST', '/cdr/v1/clinic/', { name: 'X', address: 'Y', doctor_ids: [doctorId] }, other.token);
      assert.deepEqual(borrowing.json(), { doctor_ids: [`Unknown doctor id: ${doctorId}`] });
      const borrowingByPartner = await call(
        'POST',
        '/cdr/v1/doctor/',
        { firstname: 'X', lastname: 'Y', partner_clinic_ids: ['iso-clinic'] },
        other.token,
      );
      assert.deepEqual(borrowingByPartner.json(), { partner_clinic_ids: ['Unknown partner clinic id: iso-clinic'] });
      const samePartnerId = await call('POST', '/cdr/v1/clinic/', { name: 'X', address: 'Y', partner_id: 'iso-clinic' }, other.token);
      assert.equal(samePartnerId.statusCode, 201, 'partner ids are unique per business only');
      const mine = (await call('GET', `/cdr/v1/clinic/${clinicId}`)).json().clinic;
      assert.equal(mine.city, null, 'the other business changed nothing');
    });
  });
});
