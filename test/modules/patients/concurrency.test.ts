/** Patients: racing creates with one partner id, and racing changes of one patient. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';
import { createDr, drBody, partnerId, request } from './support.ts';

describe(`patients: concurrency (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  before(async () => {
    t = await createTestApp();
    client = await createTestClient(t.ctx);
  });
  after(async () => t.close());

  it('two creates with one partner id: one 201 and one 409', async () => {
    for (let round = 0; round < 5; round++) {
      const partner = partnerId();
      const responses = await Promise.all([
        request(t, client.token, 'POST', '/dr/v1/patient', drBody({ partner_patient_id: partner })),
        request(t, client.token, 'POST', '/profiles/v1/patient/', { fn: 'B', gen: 'F', dob: '1991-01-01', username: partner }),
      ]);
      assert.deepEqual(responses.map((r) => r.statusCode).sort(), [201, 409], responses.map((r) => r.body).join(' '));
      const rows = await t.ctx.storage.db.selectFrom('patients').select('id').where('partner_patient_id', '=', partner).execute();
      assert.equal(rows.length, 1);
    }
  });

  it('concurrent changes of one patient all land', async () => {
    const id = await createDr(t, client.token);
    const fields = ['designation', 'middle_name', 'last_name', 'email'] as const;
    const values = { designation: 'Dr.', middle_name: 'M', last_name: 'L', email: 'a@b.co' };
    const responses = await Promise.all(fields.map((field) => request(t, client.token, 'PATCH', `/dr/v1/patient/${id}`, { [field]: values[field] })));
    for (const response of responses) assert.equal(response.statusCode, 200, response.body);
    const read = (await request(t, client.token, 'GET', `/dr/v1/patient/${id}`)).json();
    for (const field of fields) assert.equal(read[field], values[field]);
  });
});
