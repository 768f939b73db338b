/**
 * Push under the outbound address policy: token_uri refused at upload, the token request refused
 * at connect time after DNS rebinding, CPS_FCM_URL checked at start, and delivery errors that name
 * only the class of failure. DNS answers are stubbed; sockets go to loopback listeners only.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildApp, createContext } from '../../../src/app.ts';
import { ConfigError } from '../../../src/config.ts';
import { openStorage } from '../../../src/db/index.ts';
import { migrateToLatest } from '../../../src/db/migrate.ts';
import { createLogger } from '../../../src/logger.ts';
import { freePort } from '../../net.ts';
import { bearer, createTestDatabase, DIALECT, testConfig, testKeys } from '../../support.ts';
import { countingListener, productionEnv, stubResolver, type StubResolver } from '../../security/support.ts';
import { createPushTest, type PushTest } from './support.ts';

const REFUSED = 'sa_key.token_uri: must not be or resolve to a loopback, private, link-local, metadata or other non-public address';

describe(`push token_uri under the outbound policy in production (${DIALECT})`, () => {
  let t: PushTest;
  let dns: StubResolver;
  before(async () => {
    dns = stubResolver({
      'oauth2.partner.test': ['93.184.215.14'],
      'oauth.intranet.test': ['192.168.10.10'],
      'oauth.cgnat.test': ['100.64.1.1'],
      'oauth.teredo.test': ['2001:0:808:808::5601:5601'],
    });
    t = await createPushTest(productionEnv({ CPS_FCM_URL: 'https://fcm.push.test' }), { resolve: dns.resolve });
  });
  after(async () => t.close());

  it('refuses at upload a token_uri on a non-public address, in any spelling, with 400 in the notifications body; stores nothing', async () => {
    for (const tokenUri of [
      'https://127.0.0.1/token',
      'https://2130706433/token',
      'https://0x7f.1/token',
      'https://[::1]/token',
      'https://169.254.169.254/computeMetadata/v1/',
      'https://[::ffff:a9fe:a9fe]/token',
      'https://[fd00:ec2::254]/latest',
      'https://100.100.100.200/latest/meta-data',
      'https://metadata.google.internal/token',
      'https://localhost./token',
      'https://oauth.intranet.test/token',
      'https://oauth.cgnat.test/token',
      'https://oauth.teredo.test/token',
    ]) {
      const response = await t.post('/notification/push-creds', { sa_key: t.saKey({ token_uri: tokenUri }) });
      assert.equal(response.statusCode, 400, tokenUri);
      assert.deepEqual(response.json(), { message: REFUSED, error_code: 400 }, tokenUri);
    }
    const plain = await t.post('/notification/push-creds', { sa_key: t.saKey({ token_uri: 'http://oauth2.partner.test/token' }) });
    assert.deepEqual(plain.json(), { message: 'sa_key.token_uri: must be https', error_code: 400 });
    assert.equal((await t.get('/notification/push-creds')).statusCode, 404, 'nothing refused was stored');
    const accepted = await t.post('/notification/push-creds', { sa_key: t.saKey({ token_uri: 'https://oauth2.partner.test/token' }) });
    assert.equal(accepted.statusCode, 200, accepted.body);
    assert.equal(t.oauth.verified.length + t.oauth.rejected.length, 0, 'an upload connects to nothing');
  });

  it('refuses the token request at connect time when the name now resolves to loopback (DNS rebinding)', async () => {
    const listener = await countingListener();
    try {
      dns.answer('oauth.rebind.test', ['93.184.215.14']);
      const saved = await t.post('/notification/push-creds', { sa_key: t.saKey({ token_uri: `https://oauth.rebind.test:${listener.port}/token` }) });
      assert.equal(saved.statusCode, 200, saved.body);
      await t.post('/notification/add-device', { devicePayload: { did: 'phone', 'fcm-id': 'fcm-phone-token', 'app-version': '1' } }, undefined, {
        'x-pt-id': 'pt-1',
      });
      const sent = await t.post('/notification/send', { patient_id: 'pt-1', title: 'T', body: 'B' });
      assert.equal(sent.statusCode, 202, sent.body);
      // Every name now answers loopback, where the listener waits.
      dns.rebindAll();
      const asked = dns.asked.length;
      await t.deliver();
      assert.equal(listener.connections(), 0, 'nothing reached the loopback listener');
      assert.deepEqual(
        dns.asked.slice(asked),
        ['oauth.rebind.test', 'oauth.rebind.test', 'oauth.rebind.test'],
        'each attempt (CPS_PUSH_RETRY_SCHEDULE=0,0) asked DNS in the socket lookup',
      );
      assert.equal(t.fcm.requests.length, 0);
      const report = (await t.get(`/notification/send/${sent.json().notification_id}`)).json();
      assert.deepEqual(report.devices, [{ did: 'phone', status: 'failed', error: 'OAuth token endpoint: address not allowed' }]);
      const stored = await t.ctx.storage.db
        .selectFrom('push_deliveries')
        .select('error')
        .where('business_id', '=', t.client.businessId)
        .executeTakeFirstOrThrow();
      assert.equal(stored.error, 'OAuth token endpoint: address not allowed');
      const logged = t.logs.find((line) => line.includes('refused by the outbound address policy'));
      assert.ok(logged, 'the refusal is logged');
      assert.equal(JSON.parse(logged).level, 40, 'at warn');
      assert.match(logged, /oauth\.rebind\.test/, 'with the details the client is not shown');
    } finally {
      await listener.close();
    }
  });
});

describe(`push under the operator allow-list (CPS_OUTBOUND_ALLOW) in production (${DIALECT})`, () => {
  let t: PushTest;
  before(async () => {
    const dns = stubResolver({ 'oauth.intranet.test': ['192.168.10.10'], 'oauth.other.test': ['192.168.11.10'] });
    t = await createPushTest(productionEnv({ CPS_FCM_URL: 'https://fcm.push.test', CPS_OUTBOUND_ALLOW: '192.168.10.0/24' }), {
      resolve: dns.resolve,
    });
  });
  after(async () => t.close());

  it('accepts a token_uri whose addresses the list covers, and still refuses the rest and loopback', async () => {
    const accepted = await t.post('/notification/push-creds', { sa_key: t.saKey({ token_uri: 'https://oauth.intranet.test/token' }) });
    assert.equal(accepted.statusCode, 200, accepted.body);
    for (const tokenUri of ['https://oauth.other.test/token', 'https://127.0.0.1/token', 'https://169.254.169.254/token']) {
      const refused = await t.post('/notification/push-creds', { sa_key: t.saKey({ token_uri: tokenUri }) });
      assert.deepEqual(refused.json(), { message: REFUSED, error_code: 400 }, tokenUri);
    }
  });
});

describe(`CPS_FCM_URL under the outbound policy (${DIALECT})`, () => {
  it('a production start refuses an FCM address that is not https to a public host', async () => {
    for (const fcmUrl of ['https://127.0.0.1:8443', 'https://[::ffff:a9fe:a9fe]', 'https://metadata.google.internal', 'http://fcm.push.test']) {
      const database = await createTestDatabase();
      const config = testConfig(database, productionEnv({ CPS_FCM_URL: fcmUrl }));
      const storage = openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
      try {
        await migrateToLatest(storage.db);
        const ctx = createContext(config, storage, await testKeys(), createLogger('silent'));
        await assert.rejects(buildApp(ctx), (error) => error instanceof ConfigError && error.variable === 'CPS_FCM_URL', fcmUrl);
      } finally {
        await storage.destroy();
        await database.drop();
      }
    }
  });

  it('a production start accepts an FCM address the operator lists', async () => {
    const database = await createTestDatabase();
    const config = testConfig(database, productionEnv({ CPS_FCM_URL: 'http://fcm.clinic.test:8080', CPS_OUTBOUND_ALLOW: 'fcm.clinic.test' }));
    const storage = openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
    try {
      await migrateToLatest(storage.db);
      const ctx = createContext(config, storage, await testKeys(), createLogger('silent'));
      const app = await buildApp(ctx);
      await app.close();
    } finally {
      await storage.destroy();
      await database.drop();
    }
  });
});

describe(`push delivery errors name the class of failure (${DIALECT})`, () => {
  let t: PushTest;
  before(async () => {
    t = await createPushTest();
  });
  after(async () => t.close());

  async function deliveryError(tokenUri: string, did: string): Promise<unknown> {
    assert.equal((await t.post('/notification/push-creds', { sa_key: t.saKey({ token_uri: tokenUri }) })).statusCode, 200);
    await t.post('/notification/add-device', { devicePayload: { did, 'fcm-id': `fcm-${did}`, 'app-version': '1' } });
    const sent = await t.post('/notification/send', { device_ids: [did], title: 'T', body: 'B' });
    await t.deliver();
    const [device] = (
      await t.app.inject({ method: 'GET', url: `/notification/send/${sent.json().notification_id}`, headers: bearer(t.client.token) })
    ).json().devices;
    assert.equal(device.status, 'failed');
    return device.error;
  }

  it('a closed port and a TLS failure on an open port read the same, in development where loopback is allowed', async () => {
    assert.equal(await deliveryError(`http://127.0.0.1:${await freePort()}/token`, 'closed'), 'OAuth token endpoint: could not connect');
    // https to the plain-HTTP fake token endpoint: a TLS error.
    assert.equal(await deliveryError(`https://127.0.0.1:${new URL(t.oauth.url).port}/token`, 'tls'), 'OAuth token endpoint: could not connect');
    assert.equal(t.oauth.verified.length, 0);
    const text = t.logs.join('');
    assert.ok(!text.includes('ya29.fake'), 'no access token logged');
  });
});
