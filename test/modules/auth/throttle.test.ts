/** Login throttling: failure budgets per client id and per address, the bounded hashing, Redis sharing. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildApp, createContext } from '../../../src/app.ts';
import type { App } from '../../../src/http/app-type.ts';
import { openStorage } from '../../../src/db/index.ts';
import { createLogger } from '../../../src/logger.ts';
import { createModules } from '../../../src/modules/index.ts';
import { addressKey, MemoryBuckets } from '../../../src/security/buckets.ts';
import { createTestApp, createTestClient, DIALECT, testConfig, testKeys, type TestApp, type TestClient } from '../../support.ts';

const LOGIN = '/connect-auth/v1/account/login';

function login(app: App, clientId: string, clientSecret: string, remoteAddress = '127.0.0.1') {
  return app.inject({ method: 'POST', url: LOGIN, payload: { client_id: clientId, client_secret: clientSecret }, remoteAddress });
}

async function counter(t: Pick<TestApp, 'ctx'>, name: string, outcome?: string): Promise<number> {
  const metric = t.ctx.metrics.getSingleMetric(name);
  const values = (await metric!.get()).values;
  return values.filter((v) => outcome === undefined || v.labels.outcome === outcome).reduce((sum, v) => sum + v.value, 0);
}
const verifications = (t: Pick<TestApp, 'ctx'>) => counter(t, 'cps_login_secret_verifications_total');

describe(`login throttling (${DIALECT})`, () => {
  describe('per client id', () => {
    let t: TestApp;
    let victim: TestClient;
    let other: TestClient;
    let clock = 1_000_000;
    before(async () => {
      t = await createTestApp({ env: { CPS_LOGIN_CLIENT_FAILURES: '3', CPS_LOGIN_ADDRESS_FAILURES: '100', CPS_LOGIN_FAILURE_WINDOW_SECONDS: '60' } });
      t.modules.auth.guard.now = () => clock;
      victim = await createTestClient(t.ctx);
      other = await createTestClient(t.ctx);
    });
    after(() => t.close());

    it('answers a wrong secret 429 with Retry-After once the client id has spent its failures', async () => {
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await login(t.app, victim.clientId, 'cs_wrong')).statusCode);
      assert.deepEqual(statuses, [401, 401, 401]);

      const refused = await login(t.app, victim.clientId, 'cs_wrong');
      assert.equal(refused.statusCode, 429);
      assert.deepEqual(refused.json(), { code: 429, error: 'Too many failed logins for this client; retry in 20 s' });
      assert.equal(refused.headers['retry-after'], '20', 'one failure back every 60/3 s');
      assert.equal(refused.headers['cache-control'], 'no-store');
      assert.ok(refused.headers['x-request-id']);
      assert.equal(await verifications(t), 4, 'the refused secret was checked, paid for by its address');
      assert.equal(await counter(t, 'cps_login_attempts_total', 'throttled'), 1);
    });

    it('lets the right secret through a spent client budget, so failing from elsewhere cannot lock the owner out', async () => {
      // Someone who knows the client id keeps failing from another address...
      assert.equal((await login(t.app, victim.clientId, 'cs_wrong', '10.9.9.9')).statusCode, 429);
      // ...and the owner, with the right secret, still logs in; a wrong secret is still refused.
      const response = await login(t.app, victim.clientId, victim.clientSecret);
      assert.equal(response.statusCode, 200);
      assert.ok(response.json().access_token);
      assert.equal((await login(t.app, victim.clientId, 'cs_wrong')).statusCode, 429);
    });

    it('lets another client id log in from the same address meanwhile', async () => {
      const response = await login(t.app, other.clientId, other.clientSecret);
      assert.equal(response.statusCode, 200);
      assert.ok(response.json().access_token);
    });

    it('recovers as the window passes: one attempt per refill, then the whole budget', async () => {
      clock += 19_000;
      assert.equal((await login(t.app, victim.clientId, 'cs_wrong')).statusCode, 429, 'not yet');
      clock += 1_000;
      assert.equal((await login(t.app, victim.clientId, 'cs_wrong')).statusCode, 401, 'one failure back after 20 s');
      clock += 60_000;
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await login(t.app, victim.clientId, 'cs_wrong')).statusCode);
      assert.deepEqual(statuses, [401, 401, 401, 429], 'a whole budget after a whole window');
    });

    it('does not spend the budget on successful logins', async () => {
      clock += 60_000;
      for (let i = 0; i < 5; i++) assert.equal((await login(t.app, victim.clientId, victim.clientSecret)).statusCode, 200);
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await login(t.app, victim.clientId, 'cs_wrong')).statusCode);
      assert.deepEqual(statuses, [401, 401, 401, 429]);
    });

    it('a correct secret of another client succeeds during a concurrent flood on one client id', async () => {
      clock += 60_000;
      const before = await verifications(t);
      const flood = Array.from({ length: 40 }, () => login(t.app, victim.clientId, 'cs_wrong'));
      const real = login(t.app, other.clientId, other.clientSecret);
      const statuses = (await Promise.all(flood)).map((r) => r.statusCode);
      assert.equal((await real).statusCode, 200);
      assert.equal(statuses.filter((s) => s === 401).length, 3);
      assert.equal(statuses.filter((s) => s === 429).length, 37);
      assert.equal(await verifications(t), before + 41, "every attempt was checked: the address's budget (100) bounds them");
    });
  });

  describe('per source address', () => {
    let t: TestApp;
    let client: TestClient;
    let clock = 5_000_000;
    before(async () => {
      t = await createTestApp({ env: { CPS_LOGIN_CLIENT_FAILURES: '10', CPS_LOGIN_ADDRESS_FAILURES: '4', CPS_LOGIN_FAILURE_WINDOW_SECONDS: '60' } });
      t.modules.auth.guard.now = () => clock;
      client = await createTestClient(t.ctx);
    });
    after(() => t.close());

    it('answers 429 to an address that sprays many client ids, and not to other addresses', async () => {
      const statuses = [];
      for (let i = 0; i < 5; i++) statuses.push((await login(t.app, `cl_unknown${i}`, 'cs_wrong', '10.1.1.1')).statusCode);
      assert.deepEqual(statuses, [401, 401, 401, 401, 429]);
      const refused = await login(t.app, client.clientId, client.clientSecret, '10.1.1.1');
      assert.equal(refused.statusCode, 429);
      assert.deepEqual(refused.json(), { code: 429, error: 'Too many failed logins from this address; retry in 15 s' });
      assert.equal(refused.headers['retry-after'], '15');
      assert.equal((await login(t.app, client.clientId, client.clientSecret, '10.1.1.2')).statusCode, 200);
      // IPv6 addresses share the budget of their /64.
      for (let i = 0; i < 4; i++) await login(t.app, `cl_v6_${i}`, 'cs_wrong', `2001:db8:1:2::${i + 1}`);
      assert.equal((await login(t.app, 'cl_v6_x', 'cs_wrong', '2001:db8:1:2:ffff::9')).statusCode, 429);
      assert.equal((await login(t.app, 'cl_v6_y', 'cs_wrong', '2001:db8:1:3::1')).statusCode, 401);
    });

    it("checks a flood on a locked client at the flooding address's cost, then refuses it before hashing", async () => {
      clock += 60_000;
      // Ten failures from several addresses spend the client's budget...
      for (let i = 0; i < 10; i++) await login(t.app, client.clientId, 'cs_wrong', `10.2.0.${i}`);
      const before = await verifications(t);
      // ...then one address floods it: its four are checked and refused by the client's budget, the rest by its own.
      const answers = [];
      for (let i = 0; i < 8; i++) answers.push((await login(t.app, client.clientId, 'cs_wrong', '10.2.1.1')).json().error);
      assert.deepEqual(answers, [
        ...Array(4).fill('Too many failed logins for this client; retry in 6 s'),
        ...Array(4).fill('Too many failed logins from this address; retry in 15 s'),
      ]);
      assert.equal(await verifications(t), before + 4);
      assert.equal((await login(t.app, client.clientId, client.clientSecret, '10.2.1.1')).statusCode, 429, 'that address is out');
      assert.equal((await login(t.app, client.clientId, client.clientSecret, '10.2.1.2')).statusCode, 200, 'the owner is not');
    });

    it('keys addresses: IPv4, IPv4-mapped IPv6, IPv6 by /64', () => {
      assert.equal(addressKey('192.0.2.1'), '192.0.2.1');
      assert.equal(addressKey('::ffff:192.0.2.1'), '192.0.2.1');
      assert.equal(addressKey('2001:db8:0:1::5'), '2001:db8:0:1::/64');
      assert.equal(addressKey('2001:0db8:0000:0001:aaaa:bbbb:cccc:dddd'), '2001:db8:0:1::/64');
      assert.equal(addressKey('::1'), '0:0:0:0::/64');
      assert.equal(addressKey('fe80::1'), 'fe80:0:0:0::/64');
    });
  });

  describe('bounded hashing', () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({
        env: { CPS_LOGIN_HASH_CONCURRENCY: '1', CPS_LOGIN_HASH_QUEUE: '1', CPS_LOGIN_CLIENT_FAILURES: '6', CPS_LOGIN_ADDRESS_FAILURES: '0' },
      });
    });
    after(() => t.close());

    it('answers 503 with Retry-After at once when the verification queue is full, giving the budget back', async () => {
      const client = await createTestClient(t.ctx);
      const guard = t.modules.auth.guard;
      // Verifications held open: one runs, one waits, so the queue is full.
      let release!: (valid: boolean) => void;
      const gate = new Promise<boolean>((resolve) => {
        release = resolve;
      });
      const held = [guard.verify(() => gate), guard.verify(() => gate)];
      const busy = [];
      for (let i = 0; i < 4; i++) busy.push(await login(t.app, 'cl_flood', 'cs_wrong'));
      assert.deepEqual(
        busy.map((r) => r.statusCode),
        [503, 503, 503, 503],
      );
      assert.deepEqual(busy[0]!.json(), { code: 503, error: 'Too many logins in progress; retry in 1 s' });
      assert.equal(busy[0]!.headers['retry-after'], '1');
      assert.equal(await counter(t, 'cps_login_attempts_total', 'busy'), 4);
      release(false);
      await Promise.all(held);
      assert.equal(await verifications(t), 2, 'only the held ones: the refused attempts hashed nothing');
      // The refused attempts gave their failures back: the whole budget of six is tried before the 429.
      const after = [];
      for (let i = 0; i < 7; i++) after.push((await login(t.app, 'cl_flood', 'cs_wrong')).statusCode);
      assert.deepEqual(after, [401, 401, 401, 401, 401, 401, 429]);
      assert.equal((await login(t.app, client.clientId, client.clientSecret)).statusCode, 200);
    });
  });

  describe('throttling off', () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({ env: { CPS_LOGIN_CLIENT_FAILURES: '0', CPS_LOGIN_ADDRESS_FAILURES: '0', CPS_LOGIN_HASH_CONCURRENCY: '0' } });
    });
    after(() => t.close());

    it('answers every wrong secret with 401 when both budgets are 0', async () => {
      const client = await createTestClient(t.ctx);
      const statuses = [];
      for (let i = 0; i < 12; i++) statuses.push((await login(t.app, client.clientId, 'cs_wrong')).statusCode);
      assert.deepEqual(new Set(statuses), new Set([401]));
      assert.equal((await login(t.app, client.clientId, client.clientSecret)).statusCode, 200);
    });
  });

  describe('shared through Redis', () => {
    it('two apps on one Redis share a client id budget', async () => {
      const env = { CPS_REDIS_URL: 'redis://127.0.0.1:6379', CPS_LOGIN_CLIENT_FAILURES: '2', CPS_LOGIN_ADDRESS_FAILURES: '1000' };
      const one = await createTestApp({ env });
      const config = testConfig(one.database, env);
      const storage = openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
      const twoCtx = createContext(config, storage, await testKeys(), createLogger('silent'));
      const twoModules = createModules(twoCtx);
      const two = await buildApp(twoCtx, twoModules);
      await two.ready();
      try {
        const client = await createTestClient(one.ctx);
        const address = `127.${randomBytes(3).join('.')}`;
        // Until Redis connects, each app uses budgets of its own.
        await Promise.all([one.modules.auth.guard.connected(), twoModules.auth.guard.connected()]);
        const statuses = [];
        for (const app of [one.app, two, one.app, two]) statuses.push((await login(app, client.clientId, 'cs_wrong', address)).statusCode);
        assert.deepEqual(statuses, [401, 401, 429, 429]);
        const refused = await login(two, client.clientId, 'cs_wrong', address);
        assert.equal(refused.statusCode, 429);
        assert.ok(Number(refused.headers['retry-after']) >= 1 && Number(refused.headers['retry-after']) <= 30);
        assert.equal((await login(two, client.clientId, client.clientSecret, address)).statusCode, 200);
        const other = await createTestClient(one.ctx);
        assert.equal((await login(two, other.clientId, other.clientSecret, address)).statusCode, 200);
        assert.equal(await verifications(one), 2);
        assert.equal(await verifications({ ctx: twoCtx }), 5);
      } finally {
        await two.close();
        await storage.destroy();
        await one.close();
      }
    });
  });

  describe('in-process buckets', () => {
    it('take from every bucket or none, and refund up to the burst', () => {
      const buckets = new MemoryBuckets();
      const a = { key: 'a', rate: 1, burst: 2 };
      const b = { key: 'b', rate: 1, burst: 1 };
      assert.deepEqual(buckets.take([a, b], 0), { waitMs: 0, refusedBy: -1, left: 0 });
      assert.deepEqual(buckets.take([a, b], 0), { waitMs: 1000, refusedBy: 1, left: 0 });
      assert.deepEqual(buckets.take([a], 0), { waitMs: 0, refusedBy: -1, left: 0 }, 'the refused take took nothing from a');
      assert.deepEqual(buckets.take([a], 0), { waitMs: 1000, refusedBy: 0, left: 0 });
      buckets.refund([a, b], 0);
      buckets.refund([a, b], 0);
      assert.deepEqual(buckets.take([a], 0), { waitMs: 0, refusedBy: -1, left: 1 }, 'a took two refunds');
      assert.deepEqual(buckets.take([a, b], 0), { waitMs: 0, refusedBy: -1, left: 0 });
      assert.deepEqual(buckets.take([a], 0).refusedBy, 0, 'refunds stop at the burst');
      assert.deepEqual(buckets.take([a], 500), { waitMs: 500, refusedBy: 0, left: 0.5 });
      assert.deepEqual(buckets.take([a], 1000), { waitMs: 0, refusedBy: -1, left: 0 });
    });
  });

  describe('on a Unix socket (no source address)', () => {
    let t: TestApp;
    let socketPath: string;
    before(async () => {
      t = await createTestApp({ env: { CPS_LOGIN_CLIENT_FAILURES: '100', CPS_LOGIN_ADDRESS_FAILURES: '2' } });
      socketPath = path.join(t.database.dataDir, 'cps.sock');
      await t.app.listen({ path: socketPath });
    });
    after(() => t.close());

    const overSocket = (clientId: string, clientSecret: string) =>
      new Promise<number>((resolve, reject) => {
        const body = JSON.stringify({ client_id: clientId, client_secret: clientSecret });
        const request = http.request(
          { socketPath, method: 'POST', path: LOGIN, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
          (response) => {
            response.resume();
            response.on('end', () => resolve(response.statusCode!));
          },
        );
        request.on('error', reject);
        request.end(body);
      });

    it('throttles every caller of the socket as one address', async () => {
      const client = await createTestClient(t.ctx);
      assert.equal(await overSocket(client.clientId, client.clientSecret), 200);
      assert.deepEqual(
        [await overSocket('cl_nobody', 'cs_wrong'), await overSocket('cl_nobody', 'cs_wrong'), await overSocket('cl_nobody', 'cs_wrong')],
        [401, 401, 429],
      );
    });
  });

  describe('behind a trusted proxy (CPS_TRUST_PROXY)', () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({ env: { CPS_LOGIN_CLIENT_FAILURES: '100', CPS_LOGIN_ADDRESS_FAILURES: '2', CPS_TRUST_PROXY: '127.0.0.1' } });
    });
    after(() => t.close());

    const viaProxy = (forwardedFor: string) =>
      t.app.inject({
        method: 'POST',
        url: LOGIN,
        remoteAddress: '127.0.0.1',
        headers: { 'x-forwarded-for': forwardedFor },
        payload: { client_id: 'cl_nobody', client_secret: 'cs_wrong' },
      });

    it("budgets by the forwarded client address, not the proxy's", async () => {
      assert.deepEqual(
        [(await viaProxy('203.0.113.7')).statusCode, (await viaProxy('203.0.113.7')).statusCode, (await viaProxy('203.0.113.7')).statusCode],
        [401, 401, 429],
      );
      assert.equal((await viaProxy('198.51.100.9')).statusCode, 401, 'another client behind the same proxy has its own budget');
    });
  });
});
