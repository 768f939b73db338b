import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SCOPES } from '../../../src/auth/scopes.ts';
import { ADMIN_TOKEN, bearer, createTestApp, createTestClient, DIALECT, type TestApp } from '../../support.ts';

describe(`admin API (${DIALECT})`, () => {
  let t: TestApp;
  let noAdmin: TestApp;
  before(async () => {
    t = await createTestApp();
    noAdmin = await createTestApp({ env: { CPS_ADMIN_TOKEN: '' } });
  });
  after(async () => {
    await t.close();
    await noAdmin.close();
  });

  const admin = bearer(ADMIN_TOKEN);

  describe('happy', () => {
    it('creates a business whose client can log in with every scope', async () => {
      const created = await t.app.inject({ method: 'POST', url: '/admin/v1/businesses', headers: admin, payload: { name: 'Sunrise Clinic' } });
      assert.equal(created.statusCode, 201);
      const body = created.json();
      assert.deepEqual(Object.keys(body).sort(), ['business_id', 'client_id', 'client_secret']);
      const login = await t.app.inject({
        method: 'POST',
        url: '/connect-auth/v1/account/login',
        payload: { client_id: body.client_id, client_secret: body.client_secret },
      });
      assert.equal(login.statusCode, 200);
      const claims = await t.ctx.tokens.verify(login.json().access_token);
      assert.equal(claims?.businessId, body.business_id);
      assert.equal(claims?.scopes.length, SCOPES.length);
    });

    it('creates a client with chosen scopes, or all scopes without a body', async () => {
      const business = (await t.app.inject({ method: 'POST', url: '/admin/v1/businesses', headers: admin, payload: { name: 'B' } })).json();
      const scoped = await t.app.inject({
        method: 'POST',
        url: `/admin/v1/businesses/${business.business_id}/clients`,
        headers: admin,
        payload: { scopes: ['search', 'cases:read'] },
      });
      assert.equal(scoped.statusCode, 201);
      assert.deepEqual(scoped.json().scopes, ['search', 'cases:read']);
      assert.equal(scoped.json().business_id, business.business_id);
      const all = await t.app.inject({ method: 'POST', url: `/admin/v1/businesses/${business.business_id}/clients`, headers: admin });
      assert.equal(all.statusCode, 201);
      assert.equal(all.json().scopes.length, SCOPES.length);
      const login = await t.app.inject({
        method: 'POST',
        url: '/connect-auth/v1/account/login',
        payload: { client_id: scoped.json().client_id, client_secret: scoped.json().client_secret },
      });
      assert.deepEqual((await t.ctx.tokens.verify(login.json().access_token))?.scopes, ['search', 'cases:read']);
    });
  });

  describe('errors', () => {
    it('400 for a missing name or an unknown scope', async () => {
      const noName = await t.app.inject({ method: 'POST', url: '/admin/v1/businesses', headers: admin, payload: {} });
      assert.equal(noName.statusCode, 400);
      assert.equal(noName.json().error.code, 'INVALID_REQUEST');
      assert.match(noName.json().error.message, /name/);
      const business = (await t.app.inject({ method: 'POST', url: '/admin/v1/businesses', headers: admin, payload: { name: 'C' } })).json();
      const badScope = await t.app.inject({
        method: 'POST',
        url: `/admin/v1/businesses/${business.business_id}/clients`,
        headers: admin,
        payload: { scopes: ['root'] },
      });
      assert.equal(badScope.statusCode, 400);
      assert.match(badScope.json().error.message, /scopes/);
    });

    it('400 for an explicit empty scope list, storing no client; no list still grants every scope', async () => {
      const business = (
        await t.app.inject({ method: 'POST', url: '/admin/v1/businesses', headers: admin, payload: { name: 'Empty scopes' } })
      ).json();
      const clientsBefore = await t.ctx.storage.db.selectFrom('api_clients').select('id').where('business_id', '=', business.business_id).execute();
      const empty = await t.app.inject({
        method: 'POST',
        url: `/admin/v1/businesses/${business.business_id}/clients`,
        headers: admin,
        payload: { scopes: [] },
      });
      assert.equal(empty.statusCode, 400);
      assert.deepEqual(empty.json(), {
        error: { code: 'INVALID_REQUEST', message: 'scopes: must list at least one scope, or be left out for every scope' },
      });
      const clientsAfter = await t.ctx.storage.db.selectFrom('api_clients').select('id').where('business_id', '=', business.business_id).execute();
      assert.equal(clientsAfter.length, clientsBefore.length, 'nothing stored');
      const noList = await t.app.inject({ method: 'POST', url: `/admin/v1/businesses/${business.business_id}/clients`, headers: admin, payload: {} });
      assert.equal(noList.statusCode, 201);
      assert.equal(noList.json().scopes.length, SCOPES.length);
    });

    it('404 for an unknown business', async () => {
      const response = await t.app.inject({ method: 'POST', url: '/admin/v1/businesses/biz_nope/clients', headers: admin, payload: {} });
      assert.equal(response.statusCode, 404);
      assert.equal(response.json().error.code, 'NOT_FOUND');
    });
  });

  describe('security', () => {
    it('401 without the admin token, with a wrong one, or with a client token', async () => {
      const client = await createTestClient(t.ctx);
      for (const headers of [{}, bearer('wrong-admin-token-xxxxxxxx'), bearer(client.token), { auth: ADMIN_TOKEN.slice(0, -1) }]) {
        const response = await t.app.inject({ method: 'POST', url: '/admin/v1/businesses', headers, payload: { name: 'X' } });
        assert.equal(response.statusCode, 401);
        assert.equal(response.json().error.code, 'UNAUTHORIZED');
      }
    });

    it('401 for everyone when CPS_ADMIN_TOKEN is not set', async () => {
      const response = await noAdmin.app.inject({ method: 'POST', url: '/admin/v1/businesses', headers: bearer(''), payload: { name: 'X' } });
      assert.equal(response.statusCode, 401);
    });
  });
});
