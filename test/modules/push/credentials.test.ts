import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { decrypt } from '../../../src/security/encryption.ts';
import { validateSaKey } from '../../../src/modules/push/service.ts';
import { bearer, createTestClient, DIALECT } from '../../support.ts';
import { createPushTest, type PushTest } from './support.ts';

/** Lines of the PEM body: no part of any of them may appear anywhere. */
function keyFragments(pem: string): string[] {
  return pem
    .split('\n')
    .filter((line) => line.length > 20 && !line.startsWith('-----'))
    .map((line) => line.slice(0, 24));
}

describe(`push credentials (${DIALECT})`, () => {
  let t: PushTest;
  before(async () => {
    t = await createPushTest();
  });
  after(async () => t.close());

  describe('happy', () => {
    it('saves, shows metadata only, replaces and deletes', async () => {
      const saved = await t.post('/notification/push-creds', { sa_key: t.saKey() });
      assert.equal(saved.statusCode, 200);
      assert.deepEqual(saved.json(), { message: 'Push credentials saved' });

      const info = await t.get('/notification/push-creds');
      assert.equal(info.statusCode, 200);
      const body = info.json();
      assert.deepEqual(Object.keys(body).sort(), ['client_email', 'private_key_id', 'project_id', 'updated_at']);
      assert.equal(body.project_id, 'demo-project');
      assert.ok(Number.isInteger(body.updated_at) && Math.abs(body.updated_at - Date.now() / 1000) < 60, 'epoch seconds');

      const replaced = await t.post('/notification/push-creds', { sa_key: t.saKey({ project_id: 'second-project', private_key_id: 'kid-2' }) });
      assert.equal(replaced.statusCode, 200);
      assert.equal((await t.get('/notification/push-creds')).json().project_id, 'second-project');
      const rows = await t.ctx.storage.db
        .selectFrom('push_credentials')
        .select('business_id')
        .where('business_id', '=', t.client.businessId)
        .execute();
      assert.equal(rows.length, 1, 'one set per business');

      const removed = await t.app.inject({ method: 'DELETE', url: '/notification/push-creds', headers: bearer(t.client.token) });
      assert.equal(removed.statusCode, 200);
      const gone = await t.get('/notification/push-creds');
      assert.equal(gone.statusCode, 404);
      assert.deepEqual(gone.json(), { message: 'No push credentials are stored for this business', error_code: 404 });
    });

    it('accepts universe_domain in place of universal_domain, a PKCS#1 key and a trailing slash', async () => {
      const { universal_domain: _omit, ...rest } = t.saKey();
      const pkcs1 = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs1' }).toString();
      const response = await t.post('/notification/push-creds/', { sa_key: { ...rest, universe_domain: 'googleapis.com', private_key: pkcs1 } });
      assert.equal(response.statusCode, 200, response.body);
    });

    it('allows http to loopback only in development', () => {
      const base = t.saKey() as Record<string, string>;
      assert.doesNotThrow(() => validateSaKey({ ...base, token_uri: 'http://localhost:8000/token' }, 'development'));
      assert.throws(() => validateSaKey({ ...base, token_uri: 'http://127.0.0.1:8000/token' }, 'production'), /Invalid sa_key/);
      assert.doesNotThrow(() => validateSaKey({ ...base, token_uri: 'https://oauth2.googleapis.com/token' }, 'production'));
    });
  });

  describe('errors', () => {
    it('400 names every invalid member at once', async () => {
      const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
      const response = await t.post('/notification/push-creds', {
        sa_key: t.saKey({
          type: 'user',
          private_key: ec,
          client_email: 'not-an-email',
          token_uri: 'http://oauth.example.com/token',
          client_id: '',
          universal_domain: undefined,
        }),
      });
      assert.equal(response.statusCode, 400);
      const body = response.json();
      assert.equal(body.error_code, 400);
      for (const member of ['type', 'private_key', 'client_email', 'token_uri', 'client_id', 'universal_domain']) {
        assert.match(body.message, new RegExp(`sa_key\\.${member}`), `${member} in ${body.message}`);
      }
    });

    it('400 for a missing sa_key, a wrong type, garbage key text, malformed JSON; 415 for another content type', async () => {
      assert.deepEqual((await t.post('/notification/push-creds', {})).json(), { message: 'sa_key: This field is required.', error_code: 400 });
      const typed = await t.post('/notification/push-creds', { sa_key: t.saKey({ project_id: 5 }) });
      assert.equal(typed.statusCode, 400);
      assert.match(typed.json().message, /sa_key\.project_id: must be a string/);
      const garbage = await t.post('/notification/push-creds', {
        sa_key: t.saKey({ private_key: '-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n' }),
      });
      assert.equal(garbage.statusCode, 400);
      assert.match(garbage.json().message, /sa_key\.private_key: must be a PEM-encoded RSA private key/);
      const malformed = await t.app.inject({
        method: 'POST',
        url: '/notification/push-creds',
        headers: { ...bearer(t.client.token), 'content-type': 'application/json' },
        payload: '{"sa_key":',
      });
      assert.equal(malformed.statusCode, 400);
      assert.equal(malformed.json().error_code, 400);
      const text = await t.app.inject({
        method: 'POST',
        url: '/notification/push-creds',
        headers: { ...bearer(t.client.token), 'content-type': 'text/plain' },
        payload: 'x',
      });
      assert.equal(text.statusCode, 415);
      assert.equal(text.json().error_code, 415);
    });

    it('401 without or with a bad token, 403 without the scope, before validation', async () => {
      const none = await t.app.inject({ method: 'POST', url: '/notification/push-creds', payload: {} });
      assert.equal(none.statusCode, 401);
      assert.equal(none.json().error_code, 401);
      assert.equal((await t.post('/notification/push-creds', {}, 'not-a-token')).json().error_code, 401);
      const searcher = await createTestClient(t.ctx, { scopes: ['search'], businessId: t.client.businessId });
      for (const [method, url] of [
        ['POST', '/notification/push-creds'],
        ['GET', '/notification/push-creds'],
        ['DELETE', '/notification/push-creds'],
      ] as const) {
        const response = await t.app.inject({ method, url, headers: bearer(searcher.token), ...(method === 'POST' ? { payload: {} } : {}) });
        assert.equal(response.statusCode, 403, `${method} ${url}`);
        assert.equal(response.json().error_code, 403);
      }
    });

    it('DELETE without stored credentials is 404', async () => {
      const other = await createTestClient(t.ctx);
      const response = await t.app.inject({ method: 'DELETE', url: '/notification/push-creds', headers: bearer(other.token) });
      assert.equal(response.statusCode, 404);
      assert.equal(response.json().error_code, 404);
    });
  });

  describe('security', () => {
    it('the stored row is sealed: no key text, a fresh nonce per write, unreadable without the master key or under another business', async () => {
      const key = t.saKey();
      await t.post('/notification/push-creds', { sa_key: key });
      const first = await t.ctx.storage.db
        .selectFrom('push_credentials')
        .select('sealed')
        .where('business_id', '=', t.client.businessId)
        .executeTakeFirstOrThrow();
      await t.post('/notification/push-creds', { sa_key: key });
      const second = await t.ctx.storage.db
        .selectFrom('push_credentials')
        .selectAll()
        .where('business_id', '=', t.client.businessId)
        .executeTakeFirstOrThrow();
      assert.notEqual(first.sealed, second.sealed, 'fresh nonce');
      const row = JSON.stringify(second);
      for (const fragment of [...keyFragments(t.key.pem), 'BEGIN PRIVATE KEY', String(key.client_id)])
        assert.ok(!row.includes(fragment), `row holds ${fragment}`);
      assert.throws(() => decrypt(randomBytes(32), second.sealed, t.client.businessId));
      assert.throws(() => decrypt(t.ctx.keys.masterKey, second.sealed, 'another-business'));
      assert.equal(JSON.parse(decrypt(t.ctx.keys.masterKey, second.sealed, t.client.businessId)).private_key, t.key.pem);
    });

    it("another business's credentials answer as none", async () => {
      await t.post('/notification/push-creds', { sa_key: t.saKey() });
      const other = await createTestClient(t.ctx);
      const response = await t.get('/notification/push-creds', other.token);
      assert.equal(response.statusCode, 404);
      assert.deepEqual(response.json(), { message: 'No push credentials are stored for this business', error_code: 404 });
      assert.equal((await t.app.inject({ method: 'DELETE', url: '/notification/push-creds', headers: bearer(other.token) })).statusCode, 404);
      assert.equal((await t.get('/notification/push-creds')).statusCode, 200, 'the owner still has them');
    });

    it('no part of the private key in any response or log line, even for an invalid key', async () => {
      const responses: string[] = [];
      responses.push((await t.post('/notification/push-creds', { sa_key: t.saKey() })).body);
      responses.push((await t.get('/notification/push-creds')).body);
      // A key cut short: the error must not echo it.
      const truncated = t.key.pem.slice(0, 400);
      responses.push((await t.post('/notification/push-creds', { sa_key: t.saKey({ private_key: truncated }) })).body);
      responses.push((await t.post('/notification/push-creds', { sa_key: t.saKey({ type: 5 }) })).body);
      const text = responses.join('\n') + t.logs.join('');
      assert.ok(t.logs.length > 0, 'logs were captured');
      for (const fragment of keyFragments(t.key.pem)) assert.ok(!text.includes(fragment), `leaked ${fragment}`);
      assert.ok(!text.includes('BEGIN PRIVATE KEY'));
    });

    it('answers carry no-store', async () => {
      assert.equal((await t.get('/notification/push-creds')).headers['cache-control'], 'no-store');
    });
  });
});
