/** X-Pt-Id names a patient by the service's id or the partner's: both reach the same cases (contract 6). */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PatientService } from '../../../src/modules/patients/service.ts';
import { bearer, createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';

describe(`cases: a patient by either id (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  before(async () => {
    t = await createTestApp();
    client = await createTestClient(t.ctx);
  });
  after(async () => t.close());

  it('lists the same cases under the service patient id and the partner patient id', async () => {
    const { db } = t.ctx.storage;
    const patient = await new PatientService({ db, compartment: t.ctx.compartment }).forBooking(db, client.businessId, {
      partner_patient_id: 'partner-77',
    });
    const created = await t.app.inject({
      method: 'POST',
      url: '/mr/api/v1/cases',
      headers: { ...bearer(client.token), 'x-pt-id': 'partner-77' },
      payload: { id: 'case-1', display_name: 'OPD visit', occurred_at: 1_700_000_000 },
    });
    assert.equal(created.statusCode, 201);
    const byService = await t.app.inject({
      method: 'GET',
      url: '/mr/api/v1/cases/case-1',
      headers: { ...bearer(client.token), 'x-pt-id': patient.id },
    });
    assert.equal(byService.statusCode, 200);
    assert.equal(byService.json().id, 'case-1');
    const other = await createTestClient(t.ctx);
    const foreign = await t.app.inject({ method: 'GET', url: '/mr/api/v1/cases/case-1', headers: { ...bearer(other.token), 'x-pt-id': patient.id } });
    assert.equal(foreign.statusCode, 404);
  });
});
