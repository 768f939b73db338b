import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, DIALECT, type TestApp } from '../../support.ts';
import { book, bookingBody, createPractice, events, request, START, type Practice } from './support.ts';

describe(`appointments: errors (${DIALECT})`, () => {
  let t: TestApp;
  let p: Practice;
  before(async () => {
    t = await createTestApp();
    p = await createPractice(t);
  });
  after(async () => t.close());

  const call = (method: string, url: string, payload?: unknown) => request(t, p.client.token, method, url, payload);

  /** 400 INVALID_REQUEST whose message names `field`. */
  function assertInvalid(response: Awaited<ReturnType<typeof call>>, field: string): void {
    assert.equal(response.statusCode, 400, response.body);
    const body = response.json();
    assert.deepEqual(Object.keys(body), ['error']);
    assert.equal(body.error.code, 'INVALID_REQUEST');
    assert.ok(body.error.message.includes(field), `"${body.error.message}" names ${field}`);
  }

  describe('booking', () => {
    it('names an unknown clinic or doctor, and a doctor not assigned to the clinic', async () => {
      const other = await createPractice(t, { client: p.client });
      assertInvalid(await call('POST', '/dr/v1/appointment', bookingBody(p, { clinic_id: 'cli_nope' })), 'clinic_id');
      assertInvalid(
        await call('POST', '/dr/v1/appointment', bookingBody(p, { clinic_id: undefined, partner_clinic_id: 'nope' })),
        'partner_clinic_id',
      );
      assertInvalid(await call('POST', '/dr/v1/appointment', bookingBody(p, { doctor_id: 'doc_nope' })), 'doctor_id');
      assertInvalid(await call('POST', '/dr/v1/appointment', bookingBody(p, { doctor_id: other.doctorId })), 'doctor_id');
      assertInvalid(await call('POST', '/dr/v1/appointment', bookingBody(p, { clinic_id: undefined })), 'clinic_id');
      assertInvalid(await call('POST', '/dr/v1/appointment', bookingBody(p, { partner_clinic_id: other.partnerClinicId })), 'partner_clinic_id');
    });

    it('checks times, required parts and patient details', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ appointment_details: { start_time: START, end_time: START } }, 'end_time'],
        [{ appointment_details: { start_time: START } }, 'appointment_details.end_time'],
        [{ appointment_details: { start_time: String(START), end_time: START + 1 } }, 'appointment_details.start_time'],
        [{ appointment_details: { start_time: START, end_time: START + 1, mode: 'TELEPORT' } }, 'appointment_details.mode'],
        [{ patient_details: undefined }, 'patient_details'],
        [{ patient_details: { mobile: '9812345678' } }, 'patient_details.mobile'],
        [{ patient_details: { gender: 'X' } }, 'patient_details.gender'],
        [{ patient_details: { dob: '1990-02-30' } }, 'patient_details.dob'],
        [{ patient_details: { dob: '2999-01-01' } }, 'patient_details.dob'],
        [{ patient_details: { dob: '1990-01-01', age: 30 } }, 'patient_details'],
        [{ patient_details: { address: { pincode: '411001' } } }, 'patient_details.address.pincode'],
        [{ token: -1 }, 'token'],
        [{ display_meta: { x: { nested: true } } }, 'display_meta.x'],
      ];
      for (const [overrides, field] of cases) {
        assertInvalid(await call('POST', '/dr/v1/appointment', bookingBody(p, overrides)), field);
      }
    });

    it('a repeated partner_appointment_id is 409 APPOINTMENT_EXISTS', async () => {
      await book(t, p, { partner_appointment_id: 'pa-dup' });
      const response = await call('POST', '/dr/v1/appointment', bookingBody(p, { partner_appointment_id: 'pa-dup' }));
      assert.equal(response.statusCode, 409);
      assert.equal(response.json().error.code, 'APPOINTMENT_EXISTS');
    });
  });

  describe('update', () => {
    it('an empty update, or one with only unknown fields, is INVALID_REQUEST', async () => {
      const id = await book(t, p);
      for (const body of [{}, { unknown: 1 }, undefined]) {
        const response = await call('PATCH', `/dr/v1/appointment/${id}`, body);
        assert.equal(response.statusCode, 400, JSON.stringify(body));
        assert.equal(response.json().error.code, 'INVALID_REQUEST');
      }
      assertInvalid(await call('PATCH', `/dr/v1/appointment/${id}`, { patient_details: {} }), 'patient_details');
    });

    it('follows the display_meta rules of interface 2.8', async () => {
      const id = await book(t, p);
      const ok = await call('PATCH', `/dr/v1/appointment/${id}`, {
        display_meta: { ['k'.repeat(30)]: 'v'.repeat(50), int_value: 42, float_value: -1.25 },
      });
      assert.equal(ok.statusCode, 200, 'the limits themselves are allowed');
      // Characters, not UTF-16 units: 30 and 50 emoji (two units each) are within the limits, one more is not.
      const emoji = '\u{1F600}';
      const wide = await call('PATCH', `/dr/v1/appointment/${id}`, { display_meta: { [emoji.repeat(30)]: emoji.repeat(50) } });
      assert.equal(wide.statusCode, 200, wide.body);
      assert.deepEqual(wide.json().display_meta, { [emoji.repeat(30)]: emoji.repeat(50) });
      assertInvalid(await call('PATCH', `/dr/v1/appointment/${id}`, { display_meta: { [emoji.repeat(31)]: 'v' } }), 'display_meta');
      assertInvalid(await call('PATCH', `/dr/v1/appointment/${id}`, { display_meta: { wide: emoji.repeat(51) } }), 'display_meta.wide');
      assertInvalid(await call('PATCH', `/dr/v1/appointment/${id}`, { display_meta: { ['k'.repeat(31)]: 'v' } }), 'display_meta');
      assertInvalid(await call('PATCH', `/dr/v1/appointment/${id}`, { display_meta: { long: 'v'.repeat(51) } }), 'display_meta.long');
      for (const value of [true, null, ['a'], { a: 1 }]) {
        assertInvalid(await call('PATCH', `/dr/v1/appointment/${id}`, { display_meta: { bad: value } }), 'display_meta.bad');
      }
      assertInvalid(await call('PATCH', `/dr/v1/appointment/${id}`, { display_meta: ['x'] }), 'display_meta');
    });

    it('names the offending field of every wrong value', async () => {
      const id = await book(t, p);
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ token: '5' }, 'token'],
        [{ token: 1.5 }, 'token'],
        [{ partner_meta: 'x' }, 'partner_meta'],
        [{ custom_attributes: { label: 'x' } }, 'custom_attributes.label'],
        [{ video_connect: { url: 'ftp://x.example' } }, 'video_connect.url'],
        [{ video_connect: { pt_joined: 'soon' } }, 'video_connect.pt_joined'],
        [{ patient_details: { mobile: '+12' } }, 'patient_details.mobile'],
        [{ patient_details: { dob: '1990-01-01', age: 3 } }, 'patient_details'],
        [{ patient_details: { age: 200 } }, 'patient_details.age'],
        [{ start_time: START + 100, end_time: START + 100 }, 'end_time'],
        [{ start_time: START + 100000 }, 'end_time'],
        [{ end_time: START - 1 }, 'end_time'],
        [{ start_time: -5 }, 'start_time'],
      ];
      for (const [body, field] of cases) {
        assertInvalid(await call('PATCH', `/dr/v1/appointment/${id}`, body), field);
      }
      const record = (await call('GET', `/dr/v1/appointment/${id}`)).json();
      assert.equal(record.start_time, START, 'nothing changed');
    });

    it('cannot reschedule a completed, cancelled or no-show appointment, but can change other fields', async () => {
      for (const [method, path, body] of [
        ['POST', 'complete', undefined],
        ['PUT', 'cancel', undefined],
        ['POST', 'change-status', { status: 'NS' }],
      ] as const) {
        const id = await book(t, p);
        await call(method, `/dr/v1/appointment/${id}/${path}`, body);
        assertInvalid(await call('PATCH', `/dr/v1/appointment/${id}`, { start_time: START + 60 }), 'start_time');
        assertInvalid(await call('PATCH', `/dr/v1/appointment/${id}`, { end_time: START + 9000, token: 1 }), 'end_time');
        const other = await call('PATCH', `/dr/v1/appointment/${id}`, { token: 2 });
        assert.equal(other.statusCode, 200);
        assert.equal(other.json().token, 2);
      }
    });
  });

  describe('state changes', () => {
    it('change-status accepts only NS', async () => {
      const id = await book(t, p);
      for (const body of [{ status: 'CM' }, { status: 'ns' }, { status: 1 }, {}, undefined]) {
        assertInvalid(await call('POST', `/dr/v1/appointment/${id}/change-status`, body), body === undefined ? 'body' : 'status');
      }
      assert.equal((await call('GET', `/dr/v1/appointment/${id}`)).json().status, 'BK');
    });

    it('a review request for a cancelled appointment is INVALID_REQUEST and records nothing', async () => {
      const practice = await createPractice(t);
      const id = await book(t, practice);
      await request(t, practice.client.token, 'PUT', `/dr/v1/appointment/${id}/cancel`);
      const response = await request(t, practice.client.token, 'POST', `/dr/v1/appointment/${id}/review-request`);
      assert.equal(response.statusCode, 400);
      assert.equal(response.json().error.code, 'INVALID_REQUEST');
      assert.deepEqual(await events(t, practice.client.businessId), []);
    });

    it('answers APPOINTMENT_NOT_FOUND for unknown ids on every operation', async () => {
      const id = await book(t, p, { partner_appointment_id: 'pa-known' });
      const operations: Array<[string, string, unknown]> = [
        ['GET', '', undefined],
        ['PATCH', '', { token: 1 }],
        ['POST', '/change-status', { status: 'NS' }],
        ['POST', '/complete', undefined],
        ['PUT', '/cancel', undefined],
        ['POST', '/review-request', undefined],
      ];
      for (const [method, suffix, body] of operations) {
        for (const url of [
          `/dr/v1/appointment/apt_unknown${suffix}`,
          `/dr/v1/appointment/pa-known${suffix}`,
          `/dr/v1/appointment/${id}${suffix}?partner_id=1`,
        ]) {
          const response = await call(method, url, body);
          assert.equal(response.statusCode, 404, `${method} ${url}`);
          assert.deepEqual(response.json(), { error: { code: 'APPOINTMENT_NOT_FOUND', message: 'Appointment not found' } });
        }
      }
    });

    it('checks input before existence, and rejects malformed JSON and other content types', async () => {
      assertInvalid(await call('PATCH', '/dr/v1/appointment/apt_unknown', { token: 'x' }), 'token');
      const malformed = await t.app.inject({
        method: 'PATCH',
        url: '/dr/v1/appointment/apt_unknown',
        headers: { auth: p.client.token, 'content-type': 'application/json' },
        payload: '{"token":',
      });
      assert.equal(malformed.statusCode, 400);
      assert.equal(malformed.json().error.code, 'INVALID_REQUEST');
      const text = await t.app.inject({
        method: 'PATCH',
        url: '/dr/v1/appointment/apt_unknown',
        headers: { auth: p.client.token, 'content-type': 'application/xml' },
        payload: '<token>1</token>',
      });
      assert.equal(text.statusCode, 415);
      assert.equal(text.json().error.code, 'INVALID_REQUEST');
    });

    it('rejects bad list filters naming them', async () => {
      assertInvalid(await call('GET', '/dr/v1/appointment?start_date=2030-02-30'), 'start_date');
      assertInvalid(await call('GET', '/dr/v1/appointment?end_date=tomorrow'), 'end_date');
      assertInvalid(await call('GET', '/dr/v1/appointment?start_date=2030-03-02&end_date=2030-03-01'), 'end_date');
      assertInvalid(await call('GET', '/dr/v1/appointment?page_no=-1'), 'page_no');
      assertInvalid(await call('GET', '/dr/v1/appointment?page_no=x'), 'page_no');
    });
  });
});
