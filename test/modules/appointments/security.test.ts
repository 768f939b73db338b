import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../../src/logger.ts';
import { createTestApp, createTestClient, DIALECT, type TestApp } from '../../support.ts';
import { book, bookingBody, createPractice, events, request, type Practice } from './support.ts';

describe(`appointments: security (${DIALECT})`, () => {
  let t: TestApp;
  let p: Practice;
  let id: string;
  before(async () => {
    t = await createTestApp();
    p = await createPractice(t);
    id = await book(t, p, { partner_appointment_id: 'pa-sec' });
  });
  after(async () => t.close());

  const routes = (appointmentId: string): Array<[string, string, unknown]> => [
    ['POST', '/dr/v1/appointment', {}],
    ['GET', '/dr/v1/appointment', undefined],
    ['GET', `/dr/v1/appointment/${appointmentId}`, undefined],
    ['PATCH', `/dr/v1/appointment/${appointmentId}`, { token: 1 }],
    ['POST', `/dr/v1/appointment/${appointmentId}/change-status`, { status: 'NS' }],
    ['POST', `/dr/v1/appointment/${appointmentId}/complete`, undefined],
    ['PUT', `/dr/v1/appointment/${appointmentId}/cancel`, undefined],
    ['POST', `/dr/v1/appointment/${appointmentId}/review-request`, undefined],
  ];

  it('answers 401 UNAUTHORIZED without a valid token, before validation', async () => {
    for (const [method, url, body] of routes(id)) {
      for (const headers of [{}, { auth: 'garbage' }, { authorization: 'Bearer garbage' }]) {
        const response = await t.app.inject({ method: method as 'GET', url, headers, ...(body === undefined ? {} : { payload: body as object }) });
        assert.equal(response.statusCode, 401, `${method} ${url}`);
        assert.equal(response.json().error.code, 'UNAUTHORIZED');
      }
    }
  });

  it('needs appointment:write to write, appointment:complete to complete, either to read', async () => {
    const completer = await createTestClient(t.ctx, { businessId: p.client.businessId, scopes: ['appointment:complete'] });
    const writer = await createTestClient(t.ctx, { businessId: p.client.businessId, scopes: ['appointment:write'] });
    const searcher = await createTestClient(t.ctx, { businessId: p.client.businessId, scopes: ['search', 'clinic:write'] });
    const target = await book(t, p);
    for (const [method, url, body] of routes(target)) {
      const isRead = method === 'GET';
      const isComplete = url.endsWith('/complete');
      const asSearcher = await request(t, searcher.token, method, url, body);
      assert.equal(asSearcher.statusCode, 403, `${method} ${url}`);
      assert.equal(asSearcher.json().error.code, isComplete ? 'COMPLETE_NOT_ALLOWED' : 'ACCESS_DENIED');
      if (isComplete) {
        const asWriter = await request(t, writer.token, method, url, body);
        assert.equal(asWriter.statusCode, 403);
        assert.deepEqual(Object.keys(asWriter.json().error).sort(), ['code', 'message']);
        assert.equal(asWriter.json().error.code, 'COMPLETE_NOT_ALLOWED');
        assert.equal((await request(t, completer.token, method, url, body)).statusCode, 200);
      } else if (isRead) {
        assert.equal((await request(t, completer.token, method, url, body)).statusCode, 200, `${method} ${url}`);
        assert.equal((await request(t, writer.token, method, url, body)).statusCode, 200, `${method} ${url}`);
      } else {
        const asCompleter = await request(t, completer.token, method, url, body);
        assert.equal(asCompleter.statusCode, 403, `${method} ${url}`);
        assert.equal(asCompleter.json().error.code, 'ACCESS_DENIED');
      }
    }
    const forbiddenInvalid = await request(t, searcher.token, 'PATCH', `/dr/v1/appointment/${target}`, { token: 'x' });
    assert.equal(forbiddenInvalid.statusCode, 403, 'scope is checked before input');
  });

  it("answers another business's appointment exactly as an unknown one, everywhere", async () => {
    const stranger = await createPractice(t);
    const operations: Array<[string, string, unknown]> = [
      ['GET', '', undefined],
      ['PATCH', '', { token: 1 }],
      ['POST', '/change-status', { status: 'NS' }],
      ['POST', '/complete', undefined],
      ['PUT', '/cancel', undefined],
      ['POST', '/review-request', undefined],
    ];
    for (const [method, suffix, body] of operations) {
      for (const [theirs, unknown] of [
        [`${id}${suffix}`, `apt_unknown${suffix}`],
        [`pa-sec${suffix}?partner_id=1`, `pa-unknown${suffix}?partner_id=1`],
      ]) {
        const a = await request(t, stranger.client.token, method, `/dr/v1/appointment/${theirs}`, body);
        const b = await request(t, stranger.client.token, method, `/dr/v1/appointment/${unknown}`, body);
        assert.equal(a.statusCode, 404, `${method} ${theirs}`);
        assert.deepEqual(a.json(), b.json(), `${method} ${theirs}`);
        assert.equal(a.json().error.code, 'APPOINTMENT_NOT_FOUND');
      }
    }
    assert.deepEqual((await request(t, stranger.client.token, 'GET', '/dr/v1/appointment')).json(), { appointments: [] });
    assert.deepEqual((await request(t, stranger.client.token, 'GET', `/dr/v1/appointment?clinic_id=${p.clinicId}`)).json(), { appointments: [] });
    const record = (await request(t, p.client.token, 'GET', `/dr/v1/appointment/${id}`)).json();
    assert.equal(record.status, 'BK', 'the stranger changed nothing');
    assert.ok(!('token' in record));
    assert.deepEqual(await events(t, stranger.client.businessId), []);
    assert.ok((await events(t, p.client.businessId)).every((e) => e.payload.data.appointment_id !== id));
  });

  it("cannot book with another business's clinic or doctor; partner ids are per business", async () => {
    const stranger = await createPractice(t);
    const withTheirClinic = await request(t, stranger.client.token, 'POST', '/dr/v1/appointment', bookingBody(stranger, { clinic_id: p.clinicId }));
    assert.equal(withTheirClinic.statusCode, 400);
    assert.match(withTheirClinic.json().error.message, /clinic_id/);
    const withTheirDoctor = await request(
      t,
      stranger.client.token,
      'POST',
      '/dr/v1/appointment',
      bookingBody(stranger, { doctor_id: undefined, partner_doctor_id: p.partnerDoctorId }),
    );
    assert.equal(withTheirDoctor.statusCode, 400);
    assert.match(withTheirDoctor.json().error.message, /partner_doctor_id/);
    const samePartnerId = await request(
      t,
      stranger.client.token,
      'POST',
      '/dr/v1/appointment',
      bookingBody(stranger, {
        partner_appointment_id: 'pa-sec',
        patient_details: { first_name: 'X', partner_patient_id: 'pp-shared' },
      }),
    );
    assert.equal(samePartnerId.statusCode, 201);
    const mine = await book(t, p, { patient_details: { first_name: 'Y', partner_patient_id: 'pp-shared' } });
    const theirs = (await request(t, stranger.client.token, 'GET', `/dr/v1/appointment/${samePartnerId.json().appointment_id}`)).json();
    const ours = (await request(t, p.client.token, 'GET', `/dr/v1/appointment/${mine}`)).json();
    assert.notEqual(theirs.patient_id, ours.patient_id, 'patients are kept per business');
    assert.equal(ours.patient_details.first_name, 'Y');
  });

  it('never logs tokens or patient mobile numbers', async () => {
    // An app of its own whose logger records everything down to trace level.
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const logged = await createTestApp({ env: { LOG_LEVEL: 'trace' }, logger: createLogger('trace', sink) });
    try {
      const practice = await createPractice(logged);
      const mobile = '+917700112233';
      const target = await book(logged, practice, { patient_details: { first_name: 'Log', mobile } });
      await request(logged, practice.client.token, 'PATCH', `/dr/v1/appointment/${target}`, { patient_details: { mobile: '+917700112244' } });
      await request(logged, practice.client.token, 'PATCH', `/dr/v1/appointment/${target}`, { patient_details: { mobile: 'bad-7700112255' } });
      const logs = lines.join('');
      assert.ok(logs.includes('/dr/v1/appointment'), 'requests were logged');
      for (const secret of ['7700112233', '7700112244', '7700112255', practice.client.token]) {
        assert.ok(!logs.includes(secret), `logs do not contain ${secret.slice(0, 8)}...`);
      }
    } finally {
      await logged.close();
    }
  });
});
