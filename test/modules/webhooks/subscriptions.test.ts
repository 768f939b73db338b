import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { bearer, createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';

const BASE = '/notification/v1/connect/webhook/subscriptions';

describe(`webhook subscriptions (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  let other: TestClient;
  before(async () => {
    t = await createTestApp();
    client = await createTestClient(t.ctx, { scopes: ['webhook:admin'] });
    other = await createTestClient(t.ctx, { scopes: ['webhook:admin'] });
  });
  after(() => t.close());

  const create = (payload: unknown, who: TestClient = client) =>
    t.app.inject({ method: 'POST', url: BASE, headers: bearer(who.token), payload: payload as object });
  const list = (who: TestClient = client) => t.app.inject({ method: 'GET', url: BASE, headers: bearer(who.token) });

  describe('happy', () => {
    it('creates with a generated whsec_ key returned once, and lists without keys', async () => {
      const created = await create({ endpoint: 'https://partner.example/hooks/a' });
      assert.equal(created.statusCode, 201);
      const body = created.json();
      assert.deepEqual(Object.keys(body).sort(), ['id', 'signing_key', 'status']);
      assert.equal(body.status, 'success');
      assert.match(body.signing_key, /^whsec_[A-Za-z0-9+/]+=*$/);
      const bytes = Buffer.from(body.signing_key.slice(6), 'base64').length;
      assert.ok(bytes >= 24 && bytes <= 64);

      const listed = await list();
      assert.equal(listed.statusCode, 200);
      const item = listed.json().data.find((s: { id: string }) => s.id === body.id);
      assert.equal(listed.json().msg, 'success');
      assert.deepEqual(Object.keys(item).sort(), ['created_at', 'endpoint', 'event_names', 'id', 'protocol', 'status', 'updated_at']);
      assert.equal(item.endpoint, 'https://partner.example/hooks/a');
      assert.deepEqual(item.event_names, ['external_review.request']);
      assert.equal(item.protocol, 'https');
      assert.equal(item.status, 'active');
      assert.ok(Math.abs(item.created_at - Date.now() / 1000) < 60, 'created_at is epoch seconds');
      assert.ok(!listed.body.includes(body.signing_key.slice(6)), 'the key never comes back');
    });

    it('keeps a given signing key, event names and http protocol (development)', async () => {
      const key = `whsec_${randomBytes(24).toString('base64')}`;
      const created = await create({
        endpoint: 'http://127.0.0.1:9/hook',
        event_names: ['external_review.request'],
        signing_key: key,
        protocol: 'http',
      });
      assert.equal(created.statusCode, 201);
      assert.equal(created.json().signing_key, key);
      const item = (await list()).json().data.find((s: { id: string }) => s.id === created.json().id);
      assert.equal(item.protocol, 'http');
    });

    it('updates endpoint, event names, status and key, answering the item', async () => {
      const id = (await create({ endpoint: 'https://partner.example/hooks/update' })).json().id;
      const patched = await t.app.inject({
        method: 'PATCH',
        url: `${BASE}/${id}`,
        headers: bearer(client.token),
        payload: { endpoint: 'https://partner.example/hooks/updated', status: 'disabled' },
      });
      assert.equal(patched.statusCode, 200);
      assert.equal(patched.json().id, id);
      assert.equal(patched.json().endpoint, 'https://partner.example/hooks/updated');
      assert.equal(patched.json().status, 'disabled');
      assert.equal(patched.json().signing_key, undefined);
      const enabled = await t.app.inject({
        method: 'PATCH',
        url: `${BASE}/${id}/`,
        headers: bearer(client.token),
        payload: { status: 'active', signing_key: `whsec_${randomBytes(32).toString('base64')}` },
      });
      assert.equal(enabled.statusCode, 200);
      assert.equal(enabled.json().status, 'active');
      assert.equal(enabled.json().signing_key, undefined);
    });

    it('deletes', async () => {
      const id = (await create({ endpoint: 'https://partner.example/hooks/delete' })).json().id;
      const deleted = await t.app.inject({ method: 'DELETE', url: `${BASE}/${id}`, headers: bearer(client.token) });
      assert.equal(deleted.statusCode, 200);
      assert.deepEqual(deleted.json(), { status: 'webhook deleted successfully', msg: 'success' });
      assert.ok(!(await list()).json().data.some((s: { id: string }) => s.id === id));
      const again = await t.app.inject({ method: 'DELETE', url: `${BASE}/${id}`, headers: bearer(client.token) });
      assert.equal(again.statusCode, 404);
    });

    it('stores the key encrypted', async () => {
      const created = (await create({ endpoint: 'https://partner.example/hooks/secret' })).json();
      const row = await t.ctx.storage.db.selectFrom('webhook_subscriptions').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
      assert.ok(!row.signing_key.includes(created.signing_key.slice(6)));
    });
  });

  describe('limits', () => {
    it('a business holds at most 20 subscriptions; the 21st is refused until one is deleted, also when created at once', async () => {
      const busy = await createTestClient(t.ctx, { scopes: ['webhook:admin'] });
      const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => create({ endpoint: `https://partner.example/hooks/cap-${i}` }, busy)));
      const created = answers.filter((r) => r.statusCode === 201);
      assert.equal(created.length, 20);
      for (const refused of answers.filter((r) => r.statusCode !== 201)) {
        assert.equal(refused.statusCode, 400);
        assert.deepEqual(refused.json(), {
          error: { code: 'INVALID_REQUEST', message: 'a business has at most 20 webhook subscriptions: delete one first' },
        });
      }
      assert.equal((await list(busy)).json().data.length, 20);
      const id = created[0]!.json().id;
      assert.equal((await t.app.inject({ method: 'DELETE', url: `${BASE}/${id}`, headers: bearer(busy.token) })).statusCode, 200);
      assert.equal((await create({ endpoint: 'https://partner.example/hooks/cap-after' }, busy)).statusCode, 201);
      // Another business is not counted against this one.
      assert.equal((await create({ endpoint: 'https://partner.example/hooks/cap-0' }, other)).statusCode, 201);
    });
  });

  describe('errors', () => {
    it('refuses the same endpoint twice', async () => {
      assert.equal((await create({ endpoint: 'https://partner.example/hooks/dup' })).statusCode, 201);
      const dup = await create({ endpoint: 'https://partner.example/hooks/dup' });
      assert.equal(dup.statusCode, 400);
      assert.deepEqual(dup.json(), { error: { code: 'INVALID_REQUEST', message: 'requested endpoint is already registered' } });
      const id = (await create({ endpoint: 'https://partner.example/hooks/dup2' })).json().id;
      const moved = await t.app.inject({
        method: 'PATCH',
        url: `${BASE}/${id}`,
        headers: bearer(client.token),
        payload: { endpoint: 'https://partner.example/hooks/dup' },
      });
      assert.equal(moved.statusCode, 400);
      assert.equal(moved.json().error.message, 'requested endpoint is already registered');
    });

    it('refuses event names the service does not emit', async () => {
      const response = await create({ endpoint: 'https://partner.example/hooks/ev', event_names: ['appointment.assessments.taken'] });
      assert.equal(response.statusCode, 400);
      assert.equal(response.json().error.code, 'INVALID_REQUEST');
      assert.match(response.json().error.message, /event_names/);
      const id = (await create({ endpoint: 'https://partner.example/hooks/ev2' })).json().id;
      const patched = await t.app.inject({
        method: 'PATCH',
        url: `${BASE}/${id}`,
        headers: bearer(client.token),
        payload: { event_names: ['nope'] },
      });
      assert.equal(patched.statusCode, 400);
    });

    it('refuses malformed input, naming the field', async () => {
      for (const [payload, field] of [
        [{}, /endpoint/],
        [{ endpoint: 42 }, /endpoint/],
        [{ endpoint: 'ftp://x.example/' }, /endpoint/],
        [{ endpoint: 'https://x.example/', protocol: 'gopher' }, /protocol/],
        [{ endpoint: 'https://x.example/', protocol: 'http' }, /protocol/],
        [{ endpoint: 'https://x.example/', signing_key: 'secret' }, /signing_key/],
        [{ endpoint: 'https://x.example/', signing_key: `whsec_${randomBytes(8).toString('base64')}` }, /signing_key/],
        [{ endpoint: 'https://x.example/', event_names: [] }, /event_names/],
        [{ endpoint: 'https://x.example/', event_names: 'external_review.request' }, /event_names/],
      ] as const) {
        const response = await create(payload);
        assert.equal(response.statusCode, 400, JSON.stringify(payload));
        assert.equal(response.json().error.code, 'INVALID_REQUEST');
        assert.match(response.json().error.message, field, JSON.stringify(payload));
      }
      const id = (await create({ endpoint: 'https://partner.example/hooks/bad' })).json().id;
      const badStatus = await t.app.inject({ method: 'PATCH', url: `${BASE}/${id}`, headers: bearer(client.token), payload: { status: 'paused' } });
      assert.equal(badStatus.statusCode, 400);
      assert.match(badStatus.json().error.message, /status/);
    });

    it('404 NOT_FOUND for unknown ids', async () => {
      for (const [method, url] of [
        ['PATCH', `${BASE}/whs_nope`],
        ['DELETE', `${BASE}/whs_nope`],
        ['GET', `${BASE}/whs_nope/deliveries`],
        ['POST', `${BASE}/whs_nope/deliveries/evt_nope/retry`],
      ] as const) {
        const response = await t.app.inject({ method, url, headers: bearer(client.token), ...(method === 'PATCH' ? { payload: {} } : {}) });
        assert.equal(response.statusCode, 404, `${method} ${url}`);
        assert.equal(response.json().error.code, 'NOT_FOUND');
      }
    });
  });

  describe('security', () => {
    it('401 without a token, 403 without webhook:admin', async () => {
      const anonymous = await t.app.inject({ method: 'GET', url: BASE });
      assert.equal(anonymous.statusCode, 401);
      assert.equal(anonymous.json().error.code, 'UNAUTHORIZED');
      const search = await createTestClient(t.ctx, { scopes: ['search', 'notification:admin'] });
      const forbidden = await t.app.inject({ method: 'POST', url: BASE, headers: bearer(search.token), payload: {} });
      assert.equal(forbidden.statusCode, 403);
      assert.equal(forbidden.json().error.code, 'ACCESS_DENIED');
    });

    it("another business's subscription answers exactly like an unknown one", async () => {
      const id = (await create({ endpoint: 'https://partner.example/hooks/private' })).json().id;
      assert.ok(!(await list(other)).json().data.some((s: { id: string }) => s.id === id));
      for (const [method, path] of [
        ['PATCH', ''],
        ['DELETE', ''],
        ['GET', '/deliveries'],
        ['POST', '/deliveries/evt_x/retry'],
      ] as const) {
        const theirs = await t.app.inject({
          method,
          url: `${BASE}/${id}${path}`,
          headers: bearer(other.token),
          ...(method === 'PATCH' ? { payload: { status: 'disabled' } } : {}),
        });
        const unknown = await t.app.inject({
          method,
          url: `${BASE}/whs_unknown${path}`,
          headers: bearer(other.token),
          ...(method === 'PATCH' ? { payload: { status: 'disabled' } } : {}),
        });
        assert.equal(theirs.statusCode, 404);
        assert.equal(theirs.body, unknown.body.replace('whs_unknown', id));
      }
      // The same endpoint is free for another business.
      assert.equal((await create({ endpoint: 'https://partner.example/hooks/private' }, other)).statusCode, 201);
      const mine = (await list()).json().data.find((s: { id: string }) => s.id === id);
      assert.equal(mine.status, 'active');
    });
  });
});

describe(`webhook subscriptions in production (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  before(async () => {
    t = await createTestApp({
      env: {
        CPS_ENV: 'production',
        CPS_JWT_PRIVATE_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
        CPS_MASTER_KEY: randomBytes(32).toString('base64'),
        CPS_PUBLIC_URL: 'https://cps.test',
      },
    });
    client = await createTestClient(t.ctx, { scopes: ['webhook:admin'] });
  });
  after(() => t.close());

  it('accepts only https endpoints on public addresses', async () => {
    for (const endpoint of [
      'http://93.184.215.14/hook',
      'https://localhost/hook',
      'https://127.0.0.1/hook',
      'https://10.1.2.3/hook',
      'https://192.168.1.1/hook',
      'https://172.20.0.1/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/hook',
      'https://[fd00:ec2::254]/hook',
      'https://[::ffff:127.0.0.1]/hook',
      'https://0.0.0.0/hook',
    ]) {
      const response = await t.app.inject({ method: 'POST', url: BASE, headers: bearer(client.token), payload: { endpoint } });
      assert.equal(response.statusCode, 400, endpoint);
      assert.match(response.json().error.message, /endpoint/);
    }
    const ok = await t.app.inject({ method: 'POST', url: BASE, headers: bearer(client.token), payload: { endpoint: 'https://93.184.215.14/hook' } });
    assert.equal(ok.statusCode, 201);
    const moved = await t.app.inject({
      method: 'PATCH',
      url: `${BASE}/${ok.json().id}`,
      headers: bearer(client.token),
      payload: { endpoint: 'https://127.0.0.1/hook' },
    });
    assert.equal(moved.statusCode, 400);
  });
});
