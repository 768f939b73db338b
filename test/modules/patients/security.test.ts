/** Patients: 401 and 403 in each family, and another business's patient answers as an unknown one everywhere. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';
import { createDr, drBody, partnerId, request } from './support.ts';

describe(`patients: security (${DIALECT})`, () => {
  let t: TestApp;
  let owner: TestClient;
  let stranger: TestClient;
  let id: string;
  let partner: string;
  let other: string;
  const operations = () =>
    [
      ['POST', '/dr/v1/patient', drBody(), 'write'],
      ['GET', `/dr/v1/patient/${id}`, undefined, 'read'],
      ['PATCH', `/dr/v1/patient/${id}`, { first_name: 'X' }, 'write'],
      ['GET', `/dr/v1/appointment/patient/${id}`, undefined, 'read'],
      ['POST', '/profiles/v1/patient/', { fn: 'A', gen: 'M', dob: '1990-01-01' }, 'write'],
      ['GET', '/profiles/v1/patient/minified/', undefined, 'read'],
      ['GET', `/profiles/v1/patient/${id}`, undefined, 'read'],
      ['PATCH', `/profiles/v1/patient/${id}`, { s: 'Mr.' }, 'write'],
      ['DELETE', `/profiles/v1/patient/${id}`, undefined, 'write'],
      ['GET', '/profiles/v1/patient/by-mobile/?mob=%2B919812345678', undefined, 'read'],
      ['GET', '/profiles/v1/patient/by-abha/?abha_number=12345678901234', undefined, 'read'],
      ['GET', `/profiles/v1/patient/${partner}/username/`, undefined, 'read'],
      ['POST', `/dr/v1/patient/${id}/merge`, { duplicate_patient_id: other }, 'write'],
      ['POST', `/profiles/v1/patient/${id}/merge`, { duplicate_oid: other }, 'write'],
    ] as const;

  before(async () => {
    t = await createTestApp();
    owner = await createTestClient(t.ctx);
    stranger = await createTestClient(t.ctx);
    partner = partnerId();
    id = await createDr(t, owner.token, { partner_patient_id: partner, abha_number: '12345678901234' });
    other = await createDr(t, owner.token);
  });
  after(async () => t.close());

  it('401 without a valid token, 403 without the scope, in the family body of the path', async () => {
    const reader = await createTestClient(t.ctx, { businessId: owner.businessId, scopes: ['patient:read'] });
    const none = await createTestClient(t.ctx, { businessId: owner.businessId, scopes: ['search'] });
    for (const [method, url, payload, scope] of operations()) {
      const profiles = url.startsWith('/profiles/');
      const anonymous = await t.app.inject({ method, url, ...(payload && { payload }) });
      assert.equal(anonymous.statusCode, 401, `${method} ${url}`);
      assert.equal(anonymous.json().error.code, profiles ? 'unauthorized' : 'UNAUTHORIZED');
      const forbidden = await request(t, none.token, method, url, payload);
      assert.equal(forbidden.statusCode, 403, `${method} ${url}`);
      assert.equal(forbidden.json().error.code, profiles ? 'access_denied' : 'ACCESS_DENIED');
      const asReader = await request(t, reader.token, method, url, payload);
      if (scope === 'write') assert.equal(asReader.statusCode, 403, `${method} ${url} needs patient:write`);
      else assert.equal(asReader.statusCode, 200, `${method} ${url} reads with patient:read`);
    }
  });

  it("answers another business's patient exactly as an unknown one, on every operation", async () => {
    for (const [method, url, payload] of operations()) {
      if (!url.includes(id) && !url.includes(partner)) continue;
      const foreign = await request(t, stranger.token, method, url, payload);
      const unknown = await request(t, stranger.token, method, url.replace(id, 'pt_unknown').replace(partner, 'unknown'), payload);
      assert.equal(foreign.statusCode, 404, `${method} ${url}`);
      assert.deepEqual(foreign.json(), unknown.json());
    }
    const byMobile = await request(t, stranger.token, 'GET', '/profiles/v1/patient/by-mobile/?mob=%2B919812345678');
    assert.deepEqual(byMobile.json(), []);
    const byAbha = await request(t, stranger.token, 'GET', '/profiles/v1/patient/by-abha/?abha_number=12345678901234');
    assert.deepEqual(byAbha.json(), []);
    const listed = await request(t, stranger.token, 'GET', '/profiles/v1/patient/minified/');
    assert.deepEqual(listed.json().profiles, []);
    // Another business's patient cannot be merged into one's own either.
    const own = await createDr(t, stranger.token);
    const intoOwn = await request(t, stranger.token, 'POST', `/dr/v1/patient/${own}/merge`, { duplicate_patient_id: id });
    assert.equal(intoOwn.statusCode, 404);
    const taken = await request(t, stranger.token, 'POST', '/dr/v1/patient', drBody({ partner_patient_id: partner }));
    assert.equal(taken.statusCode, 201, 'partner ids are per business');
    assert.equal((await request(t, owner.token, 'GET', `/dr/v1/patient/${id}`)).json().first_name, 'Ravi', 'untouched');
  });
});
