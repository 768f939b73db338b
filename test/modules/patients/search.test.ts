/**
 * The search endpoints over patients created, changed, archived and merged through the API: the index
 * follows every write, the answers take Eka's shapes, errors their family's body, and a business sees
 * only its own patients.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';
import { book, createPractice } from '../appointments/support.ts';
import { createDr, createProfile, partnerId, request } from './support.ts';

describe(`patients: search endpoints (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  const call = (method: string, url: string, payload?: unknown) => request(t, client.token, method, url, payload);
  const search = async (prefix: string, extra = '') => {
    const response = await call('GET', `/profiles/v1/patient/search?prefix=${encodeURIComponent(prefix)}${extra}`);
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as Array<{ oid: string; fln?: string; username?: string; mobile?: string; gen?: string; arc?: boolean }>;
  };

  before(async () => {
    t = await createTestApp();
    client = await createTestClient(t.ctx);
  });
  after(async () => t.close());

  it('finds patients created in both families and by booking, by spelling variants, initials, mobile and username', async () => {
    const lakshmi = await createDr(t, client.token, { first_name: 'Lakshmi', last_name: 'Narayanan', mobile: '+919845012345' });
    const username = partnerId('uhid');
    const mohammed = await createProfile(t, client.token, { fn: 'Mohammed', ln: 'Iqbal', username, mobile: '+919845099999' });
    const practice = await createPractice(t, { client });
    const booked = await book(t, practice, { patient_details: { first_name: 'Srinivas', last_name: 'Rao', partner_patient_id: partnerId() } });
    const srinivas = (await call('GET', `/dr/v1/appointment/${booked}`)).json().patient_id;

    assert.equal((await search('Laxmi Narayan'))[0]?.oid, lakshmi);
    assert.equal((await search('Mohd Ikbal'))[0]?.oid, mohammed);
    assert.equal((await search('Shrinivas'))[0]?.oid, srinivas);
    assert.equal((await search('S Rao'))[0]?.oid, srinivas);
    assert.deepEqual((await search('98450')).map((p) => p.oid).sort(), [lakshmi, mohammed].sort());
    assert.deepEqual(
      (await search(username)).map((p) => p.oid),
      [mohammed],
    );
    const [hit] = await search('Mohammed', '&select=gen,dob');
    assert.equal(hit!.username, username);
    assert.equal(hit!.gen, 'F');
    assert.equal(typeof hit!.fln, 'string');
    assert.deepEqual(await search('Xylophone'), []);
  });

  it('follows changes: a new name is found and the old one no longer; archived only with arc=true; merged never', async () => {
    const id = await createDr(t, client.token, { first_name: 'Chaudhary', last_name: 'Harpreet' });
    assert.equal((await call('PATCH', `/dr/v1/patient/${id}`, { first_name: 'Gurpreet', last_name: 'Sandhu' })).statusCode, 200);
    assert.equal((await search('Gurprit Sandhu'))[0]?.oid, id);
    assert.equal(
      (await search('Chaudhary Harpreet')).some((p) => p.oid === id),
      false,
    );

    assert.equal((await call('DELETE', `/profiles/v1/patient/${id}`)).statusCode, 200);
    assert.equal(
      (await search('Gurpreet Sandhu')).some((p) => p.oid === id),
      false,
    );
    const archived = await search('Gurpreet Sandhu', '&arc=true');
    assert.equal(archived[0]?.oid, id);
    assert.equal(archived[0]?.arc, true);

    const survivor = await createDr(t, client.token, { first_name: 'Venkatesh', last_name: 'Iyer' });
    const duplicate = await createDr(t, client.token, { first_name: 'Venkatesh', last_name: 'Iyer' });
    assert.equal((await search('Venkatesh Iyer')).filter((p) => [survivor, duplicate].includes(p.oid)).length, 2);
    assert.equal((await call('POST', `/dr/v1/patient/${survivor}/merge`, { duplicate_patient_id: duplicate })).statusCode, 200);
    assert.deepEqual(
      (await search('Venkatesh Iyer', '&arc=true')).filter((p) => [survivor, duplicate].includes(p.oid)).map((p) => p.oid),
      [survivor],
    );
  });

  it('pages with limit and offset, best first', async () => {
    for (let i = 0; i < 7; i++) await createDr(t, client.token, { first_name: 'Pagewalk', last_name: `Sharma${'x'.repeat(i)}` });
    const first = await search('Pagewalk', '&limit=4');
    const second = await search('Pagewalk', '&limit=4&offset=4');
    assert.equal(first.length, 4);
    assert.equal(second.length, 3);
    assert.equal(new Set([...first, ...second].map((p) => p.oid)).size, 7);
  });

  it("/dr/v1/business/patients/search answers Eka's patients of every patient on a mobile number", async () => {
    const mother = await createDr(t, client.token, { first_name: 'Meena', last_name: 'Kulkarni', mobile: '9822000111' });
    const son = await createDr(t, client.token, { first_name: 'Rohan', last_name: 'Kulkarni', mobile: '+919822000111', dob: '2010-06-01' });
    const response = await call('GET', '/dr/v1/business/patients/search?mobile=9822000111');
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json();
    assert.equal(body.success, true);
    assert.deepEqual(
      body.data.patients.map((p: { patient_id: string }) => p.patient_id),
      [mother, son],
    );
    assert.equal(body.data.patients[1].name, 'Rohan Kulkarni');
    assert.equal(body.data.patients[1].patient_profile.dob, '2010-06-01');
    assert.equal(body.data.patients[1].patient_profile.mobile, '+919822000111');
    assert.deepEqual((await call('GET', '/dr/v1/business/patients/search?mobile=9822000999')).json().data.patients, []);
  });

  it('bad input: 400 in the family body of each path, naming the parameter', async () => {
    const missing = await call('GET', '/profiles/v1/patient/search');
    assert.equal(missing.statusCode, 400);
    assert.equal(missing.json().error.code, 'invalid_request');
    assert.match(missing.json().error.message, /prefix/);
    const tooMany = await call('GET', '/profiles/v1/patient/search?prefix=ram&limit=51');
    assert.equal(tooMany.statusCode, 400);
    assert.match(tooMany.json().error.message, /limit/);
    const badMobile = await call('GET', '/dr/v1/business/patients/search?mobile=12ab');
    assert.equal(badMobile.statusCode, 400);
    assert.equal(badMobile.json().error.code, 'INVALID_REQUEST');
  });

  it("another business's patients are never found; scopes 401/403", async () => {
    const mine = await createDr(t, client.token, { first_name: 'Isolated', last_name: 'Bhattacharya', mobile: '+919830000777' });
    const stranger = await createTestClient(t.ctx);
    for (const url of [
      '/profiles/v1/patient/search?prefix=Isolated%20Bhattacharya',
      '/profiles/v1/patient/search?prefix=98300',
      `/profiles/v1/patient/search?prefix=${mine}`,
    ]) {
      assert.deepEqual((await request(t, stranger.token, 'GET', url)).json(), [], url);
    }
    const byMobile = await request(t, stranger.token, 'GET', '/dr/v1/business/patients/search?mobile=9830000777');
    assert.deepEqual(byMobile.json().data.patients, []);
    const none = await createTestClient(t.ctx, { businessId: client.businessId, scopes: ['search'] });
    for (const [url, code] of [
      ['/profiles/v1/patient/search?prefix=ram', 'access_denied'],
      ['/dr/v1/business/patients/search?mobile=9830000777', 'ACCESS_DENIED'],
    ]) {
      assert.equal((await t.app.inject({ method: 'GET', url })).statusCode, 401);
      const forbidden = await request(t, none.token, 'GET', url!);
      assert.equal(forbidden.statusCode, 403);
      assert.equal(forbidden.json().error.code, code);
    }
  });
});
