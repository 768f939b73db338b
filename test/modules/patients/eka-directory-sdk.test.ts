/**
 * The calls of Eka's patient directory SDK (github.com/eka-care/eka-patient-directory-ts-sdk) that Eka's
 * document does not describe as the SDK makes them, sent as it sends them (`Content-Type: application/json`
 * on every request, a Bearer token), with what it reads of each answer:
 * - `MinifiedMethods.getPage(page, limit)` (`?page=1&limit=1000&select=...`) read as `data` by
 *   `DataLoaderService.syncAllPages`, which stops at a page shorter than `limit`; Eka's document's
 *   `pageNo`/`pageSize` and `profiles` keep working;
 * - `SearchMethods.bulkGet` (`GET /profiles/v1/patient/bulk?oid_list=a,b`), read as a list of patients;
 *   `TrinityProfilesSDK.testConnection()` sends it with an empty `oid_list` and fails on anything but 2xx;
 * - `UtilsMethods.unarchive` (`PATCH .../{oid}/unarchive` with `{}`) and `removeFields` (`PATCH
 *   .../{oid}/remove-fields` with `{fields}`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';
import { createProfile } from './support.ts';

describe(`Eka's patient directory SDK (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(async () => t.close());

  /** One `HttpClient.request` of the SDK: JSON headers on every method, the body only on POST and PATCH. */
  const sdk = (client: TestClient, method: 'GET' | 'PATCH' | 'DELETE', path: string, params?: Record<string, string | number>, body?: unknown) =>
    t.app.inject({
      method,
      url: params === undefined ? path : `${path}?${new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString()}`,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        authorization: `Bearer ${client.token}`,
        'client-id': 'pt-directory-sdk',
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });

  /** `syncAllPages`: pages from 1 until one is shorter than `limit`; the oids it stored. */
  async function syncAll(client: TestClient, limit: number, select: string) {
    const stored: Array<Record<string, unknown>> = [];
    for (let page = 1; ; page++) {
      const response = await sdk(client, 'GET', '/profiles/v1/patient/minified', { page, limit, select });
      assert.equal(response.statusCode, 200, response.body);
      const patients = response.json().data ?? [];
      if (patients.length === 0) break;
      stored.push(...patients);
      if (patients.length < limit) break;
    }
    return stored;
  }

  describe('happy', () => {
    it('minified: page/limit read as data, pageNo/pageSize as profiles, one listing', async () => {
      const client = await createTestClient(t.ctx);
      const oids: string[] = [];
      for (let i = 0; i < 5; i++)
        oids.push(await createProfile(t, client.token, { fn: `P${i}`, mobile: `+9198000000${i}0`, ...(i === 3 && { dob: undefined, age: 40 }) }));
      // The SDK's select: extraMinifiedPatientFields joined, ",is_age" taken out (a leading is_age stays).
      const stored = await syncAll(client, 2, 'dob,gen');
      assert.deepEqual(
        stored.map((p) => p.oid),
        oids,
      );
      assert.deepEqual(Object.keys(stored[0]!).sort(), ['ccd', 'dob', 'fln', 'gen', 'mobile', 'oid', 'wid'].sort());
      const withIsAge = await sdk(client, 'GET', '/profiles/v1/patient/minified', { page: 2, limit: 2, select: 'is_age,dob' });
      assert.equal(withIsAge.statusCode, 200, withIsAge.body);
      assert.deepEqual(
        withIsAge.json().data.map((p: { is_age: boolean }) => p.is_age),
        [false, true],
      );
      // Eka's document's reader.
      const documented = await sdk(client, 'GET', '/profiles/v1/patient/minified/', { pageNo: 2, pageSize: 2 });
      const body = documented.json();
      assert.deepEqual(
        body.profiles.map((p: { oid: string }) => p.oid),
        oids.slice(2, 4),
      );
      assert.deepEqual(body.data, body.profiles);
      assert.deepEqual(body.currPageMeta, { currPageNo: 2, pageSize: 2, nextPage: 3 });
      // Both names sent, agreeing.
      const both = await sdk(client, 'GET', '/profiles/v1/patient/minified', { pageNo: 3, page: 3, pageSize: 2, limit: 2 });
      assert.deepEqual(both.json().currPageMeta, { currPageNo: 3, pageSize: 2, nextPage: -1 });
    });

    it('bulk: the profiles of oid_list in its order; unknown and archived ones left out (archived with arc=true)', async () => {
      const client = await createTestClient(t.ctx);
      const [a, b, c] = [
        await createProfile(t, client.token),
        await createProfile(t, client.token, { fn: 'Bina' }),
        await createProfile(t, client.token, { fn: 'Chandu' }),
      ];
      assert.equal((await sdk(client, 'DELETE', `/profiles/v1/patient/${c}`)).statusCode, 200);
      const response = await sdk(client, 'GET', '/profiles/v1/patient/bulk', { oid_list: [b, 'pt_unknown', a, c, b].join(',') });
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(
        response.json().map((p: { oid: string; fn: string }) => [p.oid, p.fn]),
        [
          [b, 'Bina'],
          [a, 'Anita'],
        ],
      );
      const archived = await sdk(client, 'GET', '/profiles/v1/patient/bulk', { oid_list: `${c}`, arc: 'true' });
      assert.deepEqual(
        archived.json().map((p: { oid: string; arc: boolean }) => [p.oid, p.arc]),
        [[c, true]],
      );
    });

    it("bulk with an empty oid_list (the SDK's testConnection) answers an empty list", async () => {
      const client = await createTestClient(t.ctx);
      await createProfile(t, client.token);
      for (const oid_list of ['', ' , ']) {
        const response = await sdk(client, 'GET', '/profiles/v1/patient/bulk', { oid_list });
        assert.equal(response.statusCode, 200, response.body);
        assert.deepEqual(response.json(), []);
      }
    });

    it('unarchive brings a profile back to reads, listings and search; remove-fields clears what it names', async () => {
      const client = await createTestClient(t.ctx);
      const oid = await createProfile(t, client.token, { fn: 'Zubin', mn: 'K', email: 'z@example.org', mobile: '+919811112222', extras: { crm: 1 } });
      assert.equal((await sdk(client, 'DELETE', `/profiles/v1/patient/${oid}`)).statusCode, 200);
      assert.equal((await sdk(client, 'GET', `/profiles/v1/patient/${oid}`)).statusCode, 404);
      const back = await sdk(client, 'PATCH', `/profiles/v1/patient/${oid}/unarchive`, undefined, {});
      assert.equal(back.statusCode, 200, back.body);
      assert.equal(back.json().oid, oid);
      assert.equal(back.json().arc, false);
      assert.equal((await sdk(client, 'GET', `/profiles/v1/patient/${oid}`)).statusCode, 200);
      const found = await sdk(client, 'GET', '/profiles/v1/patient/search', { prefix: 'Zubin' });
      assert.deepEqual(
        found.json().map((p: { oid: string }) => p.oid),
        [oid],
      );
      // A live one stays as it is.
      const again = await sdk(client, 'PATCH', `/profiles/v1/patient/${oid}/unarchive`, undefined, {});
      assert.equal(again.statusCode, 200);

      const removed = await sdk(client, 'PATCH', `/profiles/v1/patient/${oid}/remove-fields`, undefined, { fields: ['email', 'mn', 'extras'] });
      assert.equal(removed.statusCode, 200, removed.body);
      assert.deepEqual(removed.json(), { message: 'Fields removed successfully' });
      const profile = (await sdk(client, 'GET', `/profiles/v1/patient/${oid}`)).json();
      assert.equal(profile.email, undefined);
      assert.equal(profile.mn, undefined);
      assert.deepEqual(profile.extras, {});
      assert.equal(profile.fn, 'Zubin');
      assert.equal(profile.mobile, '9811112222');
      const dob = await sdk(client, 'PATCH', `/profiles/v1/patient/${oid}/remove-fields`, undefined, { fields: ['dob', 'mobile'] });
      assert.equal(dob.statusCode, 200, dob.body);
      const bare = (await sdk(client, 'GET', `/profiles/v1/patient/${oid}`)).json();
      assert.equal(bare.dob, undefined);
      assert.equal(bare.mobile, undefined);
      assert.equal((await sdk(client, 'GET', '/profiles/v1/patient/by-mobile/', { mob: '+919811112222' })).json().length, 0);
    });
  });

  describe('errors', () => {
    it('names the parameter or field at fault', async () => {
      const client = await createTestClient(t.ctx);
      const oid = await createProfile(t, client.token);
      for (const [method, path, params, body, field] of [
        ['GET', '/profiles/v1/patient/minified', { page: 1, pageNo: 2 }, undefined, 'page'],
        ['GET', '/profiles/v1/patient/minified', { limit: 5, pageSize: 6 }, undefined, 'limit'],
        ['GET', '/profiles/v1/patient/minified', { limit: 0 }, undefined, 'limit'],
        ['GET', '/profiles/v1/patient/bulk', { oid_list: Array.from({ length: 101 }, (_, i) => `pt_${i}`).join(',') }, undefined, 'oid_list'],
        ['GET', '/profiles/v1/patient/bulk', {}, undefined, 'oid_list'],
        ['PATCH', `/profiles/v1/patient/${oid}/remove-fields`, undefined, { fields: ['email', 'fn'] }, 'fields.1'],
        ['PATCH', `/profiles/v1/patient/${oid}/remove-fields`, undefined, { fields: [] }, 'fields'],
        ['PATCH', `/profiles/v1/patient/${oid}/remove-fields`, undefined, { fields: 'email' }, 'fields'],
      ] as const) {
        const response = await sdk(client, method, path, params, body);
        assert.equal(response.statusCode, 400, `${path} ${JSON.stringify(params ?? body)}: ${response.body}`);
        assert.equal(response.json().error.code, 'invalid_request');
        assert.match(response.json().error.message, new RegExp(field.replace('.', '\\.')), response.body);
      }
      assert.equal((await sdk(client, 'GET', `/profiles/v1/patient/${oid}`)).json().fn, 'Anita', 'nothing removed');
    });

    it('unknown profiles are 404; a merged one stays archived (409)', async () => {
      const client = await createTestClient(t.ctx);
      for (const path of ['/profiles/v1/patient/pt_unknown/unarchive', '/profiles/v1/patient/pt_unknown/remove-fields']) {
        const response = await sdk(client, 'PATCH', path, undefined, { fields: ['email'] });
        assert.equal(response.statusCode, 404, path);
        assert.equal(response.json().error.code, 'profile_not_found');
      }
      const survivor = await createProfile(t, client.token);
      const duplicate = await createProfile(t, client.token, { fn: 'Anitha' });
      assert.equal(
        (
          await t.app.inject({
            method: 'POST',
            url: `/profiles/v1/patient/${survivor}/merge`,
            headers: { auth: client.token },
            payload: { duplicate_oid: duplicate },
          })
        ).statusCode,
        200,
      );
      const merged = await sdk(client, 'PATCH', `/profiles/v1/patient/${duplicate}/unarchive`, undefined, {});
      assert.equal(merged.statusCode, 409, merged.body);
      assert.match(merged.json().error.message, new RegExp(survivor));
    });
  });

  describe('security', () => {
    it("another business's profiles answer as unknown ones; scopes are checked", async () => {
      const mine = await createTestClient(t.ctx);
      const theirs = await createTestClient(t.ctx);
      const their = await createProfile(t, theirs.token, { email: 'x@example.org' });
      assert.deepEqual((await sdk(mine, 'GET', '/profiles/v1/patient/bulk', { oid_list: their })).json(), []);
      for (const path of [`/profiles/v1/patient/${their}/unarchive`, `/profiles/v1/patient/${their}/remove-fields`]) {
        const response = await sdk(mine, 'PATCH', path, undefined, { fields: ['email'] });
        assert.equal(response.statusCode, 404, path);
      }
      assert.equal((await sdk(theirs, 'GET', `/profiles/v1/patient/${their}`)).json().email, 'x@example.org');

      const reader = await createTestClient(t.ctx, { businessId: mine.businessId, scopes: ['patient:read'] });
      const oid = await createProfile(t, mine.token);
      assert.equal((await sdk(reader, 'GET', '/profiles/v1/patient/bulk', { oid_list: oid })).statusCode, 200);
      assert.equal((await sdk(reader, 'GET', '/profiles/v1/patient/minified', { page: 1, limit: 10 })).statusCode, 200);
      for (const path of [`/profiles/v1/patient/${oid}/unarchive`, `/profiles/v1/patient/${oid}/remove-fields`]) {
        const refused = await sdk(reader, 'PATCH', path, undefined, { fields: ['email'] });
        assert.equal(refused.statusCode, 403, path);
        const anonymous = await t.app.inject({ method: 'PATCH', url: path, payload: { fields: ['email'] } });
        assert.equal(anonymous.statusCode, 401, path);
      }
      const appointmentsOnly = await createTestClient(t.ctx, { businessId: mine.businessId, scopes: ['appointment:write'] });
      assert.equal((await sdk(appointmentsOnly, 'GET', '/profiles/v1/patient/bulk', { oid_list: oid })).statusCode, 403);
    });
  });

  describe('concurrency', () => {
    it('unarchives and archives racing leave the profile in the state of the last one, indexed to match', async () => {
      const client = await createTestClient(t.ctx);
      const oid = await createProfile(t, client.token, { fn: 'Racer' });
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          i % 2 === 0
            ? sdk(client, 'DELETE', `/profiles/v1/patient/${oid}`)
            : sdk(client, 'PATCH', `/profiles/v1/patient/${oid}/unarchive`, undefined, {}),
        ),
      );
      for (const answer of answers) assert.ok([200, 404].includes(answer.statusCode), answer.body);
      const visible = (await sdk(client, 'GET', `/profiles/v1/patient/${oid}`)).statusCode === 200;
      const found = (await sdk(client, 'GET', '/profiles/v1/patient/search', { prefix: 'Racer' })).json().length === 1;
      assert.equal(found, visible, 'the search index follows the archive state');
    });
  });
});
