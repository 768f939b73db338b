/**
 * The console's sessions over HTTP: the cookie's attributes, the token stored hashed, API calls
 * authorised by the cookie (changes only with the CSRF token), scopes and businesses kept apart, the
 * idle timeout, a revoked client, sign-out, and the page's headers (a strict CSP without inline script).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sha256 } from '../../../src/security/secrets.ts';
import { ADMIN_TOKEN, bearer, createTestApp, createTestClient, type TestApp, type TestClient } from '../../support.ts';
import { signInClient, signInOperator, withSession } from './support.ts';

describe('console sessions', () => {
  let t: TestApp;
  let desk: TestClient;
  let other: TestClient;

  before(async () => {
    t = await createTestApp({ env: { CPS_TRUST_PROXY: '127.0.0.1' } });
    desk = await createTestClient(t.ctx, { scopes: ['appointment:write', 'clinic:write', 'patient:read', 'patient:write'] });
    other = await createTestClient(t.ctx);
  });
  after(() => t?.close());

  test('the page and its files: a strict CSP with no inline script and no upgrade to https, ETags', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/console' });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    const csp = String(page.headers['content-security-policy']);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /style-src 'self'(;|$)/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|upgrade-insecure-requests/);
    assert.doesNotMatch(page.body, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
    assert.doesNotMatch(page.body, /\sstyle=|<style/, 'no inline style');
    assert.equal((await t.app.inject({ method: 'GET', url: '/console/desk/anything' })).body, page.body, 'every console path is the page');

    const script = await t.app.inject({ method: 'GET', url: '/console/assets/app.js' });
    assert.equal(script.statusCode, 200);
    assert.match(String(script.headers['content-type']), /^text\/javascript/);
    const again = await t.app.inject({ method: 'GET', url: '/console/assets/app.js', headers: { 'if-none-match': String(script.headers.etag) } });
    assert.equal(again.statusCode, 304);
    assert.equal((await t.app.inject({ method: 'GET', url: '/console/assets/nothing.js' })).statusCode, 404);
    assert.equal((await t.app.inject({ method: 'GET', url: '/console/assets/index.html' })).statusCode, 404);
    assert.equal((await t.app.inject({ method: 'GET', url: '/console/assets/..%2f..%2fservice.ts' })).statusCode, 404);
  });

  test('a client signs in: HttpOnly, SameSite=Strict cookie (Secure over https), the token stored only as its hash', async () => {
    const session = await signInClient(t, desk.clientId, desk.clientSecret);
    assert.match(session.setCookie, /^cps_console=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict$/);
    assert.equal(session.view.kind, 'client');
    assert.equal(session.view.business_id, desk.businessId);
    assert.equal(session.view.business_name, 'Test Business');
    assert.deepEqual(session.view.scopes, ['appointment:write', 'clinic:write', 'patient:read', 'patient:write']);
    const token = session.cookie.split('=')[1]!;
    const rows = await t.ctx.storage.db.selectFrom('console_sessions').selectAll().execute();
    assert.ok(rows.some((row) => row.token_hash === sha256(token)));
    assert.ok(!JSON.stringify(rows).includes(token), 'the token itself is not stored');
    assert.ok(!JSON.stringify(rows).includes(session.csrf), 'nor the CSRF token');

    const overHttps = await t.app.inject({
      method: 'POST',
      url: '/console/session/client',
      headers: { 'x-forwarded-proto': 'https' },
      payload: { client_id: desk.clientId, client_secret: desk.clientSecret },
    });
    assert.match(String(overHttps.headers['set-cookie']), /; HttpOnly; SameSite=Strict; Secure$/);

    const who = await withSession(t, session, 'GET', '/console/session');
    assert.equal(who.statusCode, 200);
    assert.equal(who.json().csrf_token, session.csrf);
    assert.equal(who.headers['cache-control'], 'no-store');
  });

  test('a wrong secret or admin token opens nothing', async () => {
    const wrong = await t.app.inject({
      method: 'POST',
      url: '/console/session/client',
      payload: { client_id: desk.clientId, client_secret: 'cs_wrong' },
    });
    assert.equal(wrong.statusCode, 401);
    assert.equal(wrong.headers['set-cookie'], undefined);
    const operator = await t.app.inject({
      method: 'POST',
      url: '/console/session/operator',
      headers: { authorization: 'Bearer not-the-admin-token' },
    });
    assert.equal(operator.statusCode, 401);
    assert.equal((await t.app.inject({ method: 'GET', url: '/console/session' })).statusCode, 401);
    assert.equal((await t.app.inject({ method: 'GET', url: '/console/session', headers: { cookie: 'cps_console=forged' } })).statusCode, 401);
  });

  test('the cookie authorises API calls; a change needs the CSRF token and leaves the API call’s own audit entry', async () => {
    const session = await signInClient(t, desk.clientId, desk.clientSecret);
    const body = { first_name: 'Meera', last_name: 'Iyer', gender: 'F', dob: '1988-02-03', mobile: '+919800000001' };
    const refused = await withSession(t, session, 'POST', '/dr/v1/patient', body, false);
    assert.equal(refused.statusCode, 403, refused.body);
    assert.match(refused.body, /X-CSRF-Token/);
    const forged = await t.app.inject({
      method: 'POST',
      url: '/dr/v1/patient',
      headers: { cookie: session.cookie, 'x-csrf-token': 'guess' },
      payload: body,
    });
    assert.equal(forged.statusCode, 403);

    const created = await withSession(t, session, 'POST', '/dr/v1/patient', body);
    assert.equal(created.statusCode, 201, created.body);
    const patientId = created.json().patient_id;
    const read = await withSession(t, session, 'GET', `/dr/v1/patient/${patientId}`, undefined, false);
    assert.equal(read.statusCode, 200, 'a read needs no CSRF token');

    await t.ctx.audit.flush();
    const entries = await t.ctx.storage.db.selectFrom('access_log').selectAll().where('patient_ref', '=', patientId).execute();
    const create = entries.find((entry) => entry.action === 'create');
    assert.ok(create, 'the create has its entry');
    assert.equal(create.client_id, desk.clientId, 'the entry names the client, as the API call with its token does');
    assert.equal(create.business_id, desk.businessId);
  });

  test('scopes are the client’s; another business’s data stays unknown; admin routes refuse a client’s session', async () => {
    const session = await signInClient(t, desk.clientId, desk.clientSecret);
    assert.equal((await withSession(t, session, 'GET', '/notification/v1/connect/webhook/subscriptions')).statusCode, 403);
    const theirs = await t.app.inject({
      method: 'POST',
      url: '/dr/v1/patient',
      headers: bearer(other.token),
      payload: { first_name: 'Other', last_name: 'Person', gender: 'M', dob: '1970-01-01', mobile: '+919800000002' },
    });
    assert.equal(theirs.statusCode, 201);
    assert.equal((await withSession(t, session, 'GET', `/dr/v1/patient/${theirs.json().patient_id}`)).statusCode, 404);
    assert.equal((await withSession(t, session, 'GET', '/admin/v1/audit/events')).statusCode, 401);
  });

  test('an operator’s session admits admin routes and no business’s routes', async () => {
    const session = await signInOperator(t, ADMIN_TOKEN);
    assert.equal(session.view.kind, 'operator');
    assert.equal(session.view.business_id, null);
    assert.equal((await withSession(t, session, 'GET', '/admin/v1/audit/events')).statusCode, 200);
    assert.equal((await withSession(t, session, 'POST', '/admin/v1/businesses', { name: 'Made in the console' }, false)).statusCode, 403);
    const made = await withSession(t, session, 'POST', '/admin/v1/businesses', { name: 'Made in the console' });
    assert.equal(made.statusCode, 201, made.body);
    assert.equal((await withSession(t, session, 'GET', '/dr/v1/business/entities')).statusCode, 403);
  });

  test('an operator’s session lists, rotates and revokes a business’s clients, with CSRF, leaving the admin API’s entries', async () => {
    const session = await signInOperator(t, ADMIN_TOKEN);
    const made = await withSession(t, session, 'POST', '/admin/v1/businesses', { name: 'Clients in the console' });
    const { business_id: businessId, client_id: clientId, client_secret: oldSecret } = made.json();
    const listed = await withSession(t, session, 'GET', '/admin/v1/businesses');
    assert.ok(listed.json().businesses.some((b: { business_id: string; clients: number }) => b.business_id === businessId && b.clients === 1));
    const clients = await withSession(t, session, 'GET', `/admin/v1/businesses/${businessId}/clients`);
    assert.deepEqual(
      clients.json().clients.map((c: { client_id: string }) => c.client_id),
      [clientId],
    );

    const clientPath = `/admin/v1/businesses/${businessId}/clients/${clientId}`;
    assert.equal((await withSession(t, session, 'POST', `${clientPath}/rotate-secret`, { grace_seconds: 3600 }, false)).statusCode, 403);
    const rotated = await withSession(t, session, 'POST', `${clientPath}/rotate-secret`, { grace_seconds: 3600 });
    assert.equal(rotated.statusCode, 200, rotated.body);
    for (const secret of [oldSecret, rotated.json().client_secret]) {
      const login = await t.app.inject({
        method: 'POST',
        url: '/connect-auth/v1/account/login',
        payload: { client_id: clientId, client_secret: secret },
      });
      assert.equal(login.statusCode, 200, 'the old secret works through its grace period, the new one at once');
    }
    assert.equal((await withSession(t, session, 'POST', `${clientPath}/revoke`, {}, false)).statusCode, 403);
    assert.equal((await withSession(t, session, 'POST', `${clientPath}/revoke`, {})).statusCode, 200);
    const refused = await t.app.inject({
      method: 'POST',
      url: '/connect-auth/v1/account/login',
      payload: { client_id: clientId, client_secret: rotated.json().client_secret },
    });
    assert.equal(refused.statusCode, 401);

    await t.ctx.audit.flush();
    const entries = await t.ctx.storage.db
      .selectFrom('access_log')
      .select(['resource_type', 'action'])
      .where('business_id', '=', businessId)
      .where('resource_type', '=', 'api_client')
      .execute();
    assert.deepEqual(
      entries.map((entry) => entry.action).sort(),
      ['delete', 'list', 'update'],
      'the list, the rotation and the revocation, in the business’s chain',
    );
  });

  test('an idle session ends, a revoked client’s session ends, sign-out ends it and clears the cookie', async () => {
    const idle = await signInClient(t, desk.clientId, desk.clientSecret);
    const idleHash = sha256(idle.cookie.split('=')[1]!);
    await t.ctx.storage.db
      .updateTable('console_sessions')
      .set({ last_seen_at: Date.now() - 31 * 60_000 })
      .where('token_hash', '=', idleHash)
      .execute();
    assert.equal((await withSession(t, idle, 'GET', '/dr/v1/business/entities')).statusCode, 401);
    assert.equal(
      await t.ctx.storage.db.selectFrom('console_sessions').select('token_hash').where('token_hash', '=', idleHash).executeTakeFirst(),
      undefined,
    );

    const revokedClient = await createTestClient(t.ctx, { scopes: ['appointment:write'] });
    const revoked = await signInClient(t, revokedClient.clientId, revokedClient.clientSecret);
    assert.equal((await withSession(t, revoked, 'GET', '/dr/v1/business/entities')).statusCode, 200);
    const revoke = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${revokedClient.businessId}/clients/${revokedClient.clientId}/revoke`,
      headers: bearer(ADMIN_TOKEN),
    });
    assert.equal(revoke.statusCode, 200, revoke.body);
    assert.equal((await withSession(t, revoked, 'GET', '/dr/v1/business/entities')).statusCode, 401);

    const session = await signInClient(t, desk.clientId, desk.clientSecret);
    assert.equal((await withSession(t, session, 'DELETE', '/console/session', undefined, false)).statusCode, 403);
    const out = await withSession(t, session, 'DELETE', '/console/session');
    assert.equal(out.statusCode, 204);
    assert.match(String(out.headers['set-cookie']), /^cps_console=; Path=\/; HttpOnly; SameSite=Strict; Max-Age=0$/);
    assert.equal((await withSession(t, session, 'GET', '/dr/v1/business/entities')).statusCode, 401);
    assert.equal((await withSession(t, session, 'GET', '/console/session')).statusCode, 401);
  });

  test('a bearer token wins over a cookie', async () => {
    const session = await signInClient(t, desk.clientId, desk.clientSecret);
    const response = await t.app.inject({
      method: 'GET',
      url: '/notification/v1/connect/webhook/subscriptions',
      headers: { ...bearer(other.token), cookie: session.cookie },
    });
    assert.equal(response.statusCode, 200);
  });
});
