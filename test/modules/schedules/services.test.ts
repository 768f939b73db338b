/**
 * A doctor's services `GET /dr/v1/doctor/service/{doctor_id}` (Eka's `GetDoctorServices`, which Eka's MCP
 * SDK calls): one per schedule of the doctor across the business's clinics, its name, price and currency
 * set on the schedule; the slots answer carries the same name and fee.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestClient, DIALECT, type TestApp } from '../../support.ts';
import { createPractice, request, type Practice } from '../appointments/support.ts';
import { assertValid, ekaResponse } from '../clinics/eka-schemas.ts';
import { MONDAY, schedulePath, setSchedule, slotPath, WEEKLY } from './support.ts';

const servicesPath = (doctorId: string, partner = false) => `/dr/v1/doctor/service/${doctorId}${partner ? '?partner_id=1' : ''}`;

describe(`schedules: a doctor's services (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(async () => t.close());

  /** A doctor at two clinics of one business. */
  async function twoClinics(): Promise<[Practice, Practice]> {
    const first = await createPractice(t);
    const clinic = await request(t, first.client.token, 'POST', '/cdr/v1/clinic/', {
      name: 'Lakeside Clinic',
      address: '2 Lake Road',
      partner_id: `pc-lake-${first.doctorId}`,
      doctor_ids: [first.doctorId],
    });
    assert.equal(clinic.statusCode, 201, clinic.body);
    return [first, { ...first, clinicId: clinic.json().svcid, partnerClinicId: `pc-lake-${first.doctorId}` }];
  }

  describe('happy', () => {
    it("lists one service per schedule, in Eka's shape, with the name, price and currency set on each", async () => {
      const [sunrise, lakeside] = await twoClinics();
      assert.deepEqual((await request(t, sunrise.client.token, 'GET', servicesPath(sunrise.doctorId))).json(), { data: { services: [] } });
      const priced = await setSchedule(t, sunrise, { ...WEEKLY, service_name: 'Tele Consultation', price: 459.5, currency: 'INR' });
      assert.deepEqual([priced.service_name, priced.price, priced.currency], ['Tele Consultation', 459.5, 'INR']);
      const plain = await setSchedule(t, lakeside, { ...WEEKLY, slot_minutes: 20 });
      assert.deepEqual([plain.service_name, plain.price, plain.currency], [null, null, null]);

      const response = await request(t, sunrise.client.token, 'GET', servicesPath(sunrise.doctorId));
      assert.equal(response.statusCode, 200, response.body);
      const body = response.json();
      assertValid(ekaResponse('/dr/v1/doctor/service/{doctor_id}', 'get', '200').schema, body, 'services');
      assert.deepEqual(body.data.services, [
        {
          conf_id: priced.schedule_id,
          clinic_id: sunrise.clinicId,
          service_name: 'Tele Consultation',
          appointment_type: 'REGULAR',
          archive: false,
          created_at: priced.created_at,
          currency: 'INR',
          duration: 15,
          mode: ['in-clinic'],
          pre_pay: false,
          price: 459.5,
        },
        {
          conf_id: plain.schedule_id,
          clinic_id: lakeside.clinicId,
          service_name: 'consultation',
          appointment_type: 'REGULAR',
          archive: false,
          created_at: plain.created_at,
          duration: 20,
          mode: ['in-clinic'],
          pre_pay: false,
        },
      ]);
      // By the doctor's partner id, the same list.
      assert.deepEqual((await request(t, sunrise.client.token, 'GET', servicesPath(sunrise.partnerDoctorId, true))).json(), body);
    });

    it("fills the slots' service name and fee from the schedule, and a replaced schedule's new values", async () => {
      const p = await createPractice(t);
      await setSchedule(t, p, { ...WEEKLY, service_name: 'First visit', price: 500, currency: 'INR' });
      const read = async () => {
        const response = await request(t, p.client.token, 'GET', slotPath(p, MONDAY));
        assert.equal(response.statusCode, 200, response.body);
        const body = response.json();
        const [service] = body.data.schedule[p.clinicId];
        const described = body.data.services[service.conf_id];
        return [service.service_name, service.fee, described.service_name, described.price];
      };
      assert.deepEqual(await read(), ['First visit', 500, 'First visit', 500]);
      await setSchedule(t, p, WEEKLY);
      assert.deepEqual(await read(), ['consultation', null, 'consultation', null]);
    });
  });

  describe('errors', () => {
    it('refuses a bad service name, price or currency, every problem at once, and stores nothing', async () => {
      const p = await createPractice(t);
      const response = await request(t, p.client.token, 'PUT', schedulePath(p), {
        ...WEEKLY,
        service_name: 'x'.repeat(101),
        price: -1,
        currency: 'rupees',
      });
      assert.equal(response.statusCode, 400, response.body);
      const body = response.json();
      for (const field of ['service_name', 'price', 'currency']) assert.ok(Array.isArray(body[field]), `${field}: ${response.body}`);
      for (const bad of [{ service_name: '   ' }, { service_name: '' }, { price: 10_000_001 }, { price: '500' }, { currency: 'inr' }]) {
        const refused = await request(t, p.client.token, 'PUT', schedulePath(p), { ...WEEKLY, ...bad });
        assert.equal(refused.statusCode, 400, JSON.stringify(bad));
      }
      assert.equal((await request(t, p.client.token, 'GET', schedulePath(p))).statusCode, 404);
      assert.deepEqual((await request(t, p.client.token, 'GET', servicesPath(p.doctorId))).json(), { data: { services: [] } });
    });

    it("an unknown doctor, or a clinic's id in its place: 404; an over-long id: 400; in Eka's error body", async () => {
      const p = await createPractice(t);
      for (const url of [servicesPath('doc-unknown'), servicesPath(p.clinicId), servicesPath(p.doctorId, true)]) {
        const response = await request(t, p.client.token, 'GET', url);
        assert.equal(response.statusCode, 404, url);
        assert.deepEqual(response.json(), { error: { code: 'NOT_FOUND', message: 'Doctor not found' } });
      }
      const tooLong = await request(t, p.client.token, 'GET', servicesPath('x'.repeat(300)));
      assert.equal(tooLong.statusCode, 400, tooLong.body);
      assert.equal(typeof tooLong.json().error.message, 'string');
    });
  });

  describe('security', () => {
    it("another business's doctor answers as an unknown one, by service and partner id", async () => {
      const mine = await createPractice(t);
      const theirs = await createPractice(t);
      await setSchedule(t, theirs, { ...WEEKLY, service_name: 'Private', price: 900, currency: 'INR' });
      for (const url of [servicesPath(theirs.doctorId), servicesPath(theirs.partnerDoctorId, true)]) {
        const response = await request(t, mine.client.token, 'GET', url);
        assert.equal(response.statusCode, 404, url);
        assert.equal(response.json().error.code, 'NOT_FOUND');
        assert.doesNotMatch(response.body, /Private|900/);
      }
    });

    it('no token: 401; any valid token reads, as the other doctor reads; setting a price needs clinic:write (403)', async () => {
      const p = await createPractice(t);
      await setSchedule(t, p, { ...WEEKLY, price: 300, currency: 'INR' });
      const anonymous = await t.app.inject({ method: 'GET', url: servicesPath(p.doctorId) });
      assert.equal(anonymous.statusCode, 401);
      assert.equal(anonymous.json().error.code, 'UNAUTHORIZED');
      const reader = await createTestClient(t.ctx, { businessId: p.client.businessId, scopes: ['search'] });
      const read = await request(t, reader.token, 'GET', servicesPath(p.doctorId));
      assert.equal(read.statusCode, 200, read.body);
      assert.equal(read.json().data.services[0].price, 300);
      const refused = await request(t, reader.token, 'PUT', schedulePath(p), { ...WEEKLY, price: 1 });
      assert.equal(refused.statusCode, 403, refused.body);
      assert.equal((await request(t, p.client.token, 'GET', schedulePath(p))).json().schedule.price, 300);
    });
  });
});
