/**
 * The requests Eka's Python SDK (`ekacare`, github.com/eka-care/ekapython-sdk) makes, sent as it sends them
 * over loopback HTTP: `EkaCareClient.request` joins the path to the base URL, adds `Authorization: Bearer
 * <access_token>` (after logging in when it has none) and `client-id: <client_id>`, and `requests` adds
 * its own headers; a JSON body is `json.dumps` of the dict (", " and ": " separators). What the SDK reads
 * of each answer is asserted: `access_token` of the login and of the refresh, then the record.
 *
 * SDK calls covered: `auth.login()` (POST /connect-auth/v1/account/login), `auth.refresh_token()` (POST
 * /connect-auth/v1/account/refresh), `appointments.get_appointment_details()` (GET
 * /dr/v1/appointment/{id}), `clinic_doctor.get_clinic_details()` (GET /dr/v1/business/clinic/{id}),
 * `clinic_doctor.get_doctor_details()` (GET /dr/v1/doctor/{id}), `patient.get_patient()` (GET
 * /dr/v1/patient/{id}).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { createTestApp, DIALECT, type TestApp } from '../../support.ts';
import { book, createPractice, type Practice } from '../appointments/support.ts';

interface Answer {
  status: number;
  contentType: string;
  body: Record<string, unknown>;
}

/** Python's `json.dumps` of a flat dict of strings. */
const pythonJson = (body: Record<string, string>) =>
  `{${Object.entries(body)
    .map(([key, value]) => `${JSON.stringify(key)}: ${JSON.stringify(value)}`)
    .join(', ')}}`;

describe(`Eka's Python SDK requests (${DIALECT})`, () => {
  let t: TestApp;
  let base: URL;
  let p: Practice;
  let appointmentId: string;
  before(async () => {
    t = await createTestApp();
    base = new URL(await t.app.listen({ port: 0, host: '127.0.0.1' }));
    p = await createPractice(t);
    appointmentId = await book(t, p);
  });
  after(async () => t.close());

  /** One `session.request(...)` of the SDK, with the headers `requests` sends. */
  function sdkRequest(method: string, endpoint: string, options: { json?: Record<string, string>; token?: string } = {}): Promise<Answer> {
    const payload = options.json === undefined ? undefined : pythonJson(options.json);
    const headers: Record<string, string> = {
      'User-Agent': 'python-requests/2.32.3',
      'Accept-Encoding': 'gzip, deflate',
      Accept: '*/*',
      Connection: 'keep-alive',
      ...(options.token === undefined ? {} : { Authorization: `Bearer ${options.token}` }),
      'client-id': p.client.clientId,
      ...(payload === undefined ? {} : { 'Content-Length': String(Buffer.byteLength(payload)), 'Content-Type': 'application/json' }),
    };
    return new Promise((resolve, reject) => {
      const request = http.request(new URL(endpoint, base), { method, headers, agent: false }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            contentType: String(response.headers['content-type'] ?? ''),
            body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>,
          }),
        );
        response.on('error', reject);
      });
      request.on('error', reject);
      request.end(payload);
    });
  }

  /** What `EkaCareClient.request` returns: the JSON of a 2xx answer; anything else raises. */
  function returned(answer: Answer): Record<string, unknown> {
    assert.ok(answer.status >= 200 && answer.status < 300, `the SDK would raise: ${answer.status} ${JSON.stringify(answer.body)}`);
    assert.match(answer.contentType, /application\/json/);
    return answer.body;
  }

  async function login(): Promise<{ access_token: string; refresh_token: string }> {
    const body = returned(
      await sdkRequest('POST', '/connect-auth/v1/account/login', { json: { client_id: p.client.clientId, client_secret: p.client.clientSecret } }),
    );
    assert.equal(typeof body.access_token, 'string');
    return body as { access_token: string; refresh_token: string };
  }

  it('auth.login and auth.refresh_token: the SDK reads access_token of each', async () => {
    const tokens = await login();
    const refreshed = returned(await sdkRequest('POST', '/connect-auth/v1/account/refresh', { json: { refresh_token: tokens.refresh_token } }));
    assert.equal(typeof refreshed.access_token, 'string');
    assert.equal(typeof refreshed.refresh_token, 'string');
    // The refreshed token is the one the SDK sets (`client.set_access_token`) and sends next.
    const read = returned(await sdkRequest('GET', `/dr/v1/business/clinic/${p.clinicId}`, { token: refreshed.access_token as string }));
    assert.equal((read.data as { clinic: { clinic_id: string } }).clinic.clinic_id, p.clinicId);
  });

  it('appointments.get_appointment_details, clinic_doctor.get_clinic_details and get_doctor_details, patient.get_patient', async () => {
    const { access_token: token } = await login();
    const appointment = returned(await sdkRequest('GET', `/dr/v1/appointment/${appointmentId}`, { token }));
    assert.equal(appointment.appointment_id, appointmentId);
    assert.equal(appointment.clinic_id, p.clinicId);

    const clinic = returned(await sdkRequest('GET', `/dr/v1/business/clinic/${appointment.clinic_id}`, { token }));
    assert.equal(clinic.success, true);
    assert.deepEqual((clinic.data as { clinic: unknown }).clinic, {
      clinic_id: p.clinicId,
      partner_id: p.partnerClinicId,
      name: 'Sunrise Clinic',
      address: { line1: '1 MG Road' },
    });

    const doctor = returned(await sdkRequest('GET', `/dr/v1/doctor/${appointment.doctor_id}`, { token }));
    assert.equal(doctor.id, p.doctorId);
    const profile = doctor.profile as { personal: { first_name: string }; professional: { clinics: Array<{ id: string }> } };
    assert.equal(profile.personal.first_name, 'Asha');
    assert.deepEqual(
      profile.professional.clinics.map((c) => c.id),
      [p.clinicId],
    );

    const patient = returned(await sdkRequest('GET', `/dr/v1/patient/${appointment.patient_id}`, { token }));
    assert.equal(patient.patient_id, appointment.patient_id);
  });

  it('a request without a token raises EkaCareAuthError in the SDK (401)', async () => {
    const answer = await sdkRequest('GET', `/dr/v1/doctor/${p.doctorId}`);
    assert.equal(answer.status, 401);
  });
});
