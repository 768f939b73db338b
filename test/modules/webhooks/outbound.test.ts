/**
 * Webhooks under the outbound address policy: registration refusals, the connect-time check
 * against DNS rebinding, and delivery errors that name only the class of failure. DNS answers are
 * stubbed; the only sockets opened are to loopback listeners.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OutboundClient } from '../../../src/security/outbound-client.ts';
import { freePort } from '../../net.ts';
import { bearer, createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';
import { countingListener, productionEnv, stubResolver, type StubResolver } from '../../security/support.ts';
import { recordReviewEvent, startReceiver } from './support.ts';

const BASE = '/notification/v1/connect/webhook/subscriptions';

describe(`webhook endpoints under the outbound policy in production (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  let dns: StubResolver;
  before(async () => {
    dns = stubResolver({
      'partner.test': ['93.184.215.14', '2606:4700:4700::1111'],
      'intranet.test': ['10.20.30.40'],
      'mixed.test': ['93.184.215.14', '169.254.169.254'],
      'mapped.test': ['::ffff:7f00:1'],
      'sixtofour.test': ['2002:c0a8:101::1'],
    });
    t = await createTestApp({
      env: productionEnv({ CPS_WEBHOOK_RETRY_SCHEDULE: '0' }),
      context: (ctx) => {
        ctx.outbound = new OutboundClient({ publicOnly: true, resolve: dns.resolve });
      },
    });
    client = await createTestClient(t.ctx, { scopes: ['webhook:admin'] });
  });
  after(() => t.close());

  const create = (endpoint: string) => t.app.inject({ method: 'POST', url: BASE, headers: bearer(client.token), payload: { endpoint } });
  const stored = async () =>
    await t.ctx.storage.db.selectFrom('webhook_subscriptions').select(['id', 'endpoint']).where('business_id', '=', client.businessId).execute();

  it('refuses at registration every non-public address, spelling and name, with 400 in the standard body', async () => {
    const before = (await stored()).length;
    for (const endpoint of [
      'https://2130706433/hook',
      'https://0177.0.0.1/hook',
      'https://0x7f.1/hook',
      'https://127.1/hook',
      'https://127.0.0.1./hook',
      'https://[0:0:0:0:0:FFFF:7F00:1]/hook',
      'https://[::ffff:a9fe:a9fe]/hook',
      'https://[64:ff9b::a9fe:a9fe]/hook',
      'https://[64:ff9b:1::808:808]/hook',
      'https://[2002:7f00:1::]/hook',
      'https://[2001:0:808:808::80ff:fffe]/hook',
      'https://[fe80::1]/hook',
      'https://[ff02::1]/hook',
      'https://100.64.0.1/hook',
      'https://100.100.100.200/hook',
      'https://198.18.0.1/hook',
      'https://192.0.2.1/hook',
      'https://224.0.0.1/hook',
      'https://255.255.255.255/hook',
      'https://metadata.google.internal/computeMetadata/v1/',
      'https://LOCALHOST./hook',
      'https://intranet.test/hook',
      'https://mixed.test/hook',
      'https://mapped.test/hook',
      'https://sixtofour.test/hook',
    ]) {
      const response = await create(endpoint);
      assert.equal(response.statusCode, 400, endpoint);
      assert.deepEqual(
        response.json(),
        {
          error: {
            code: 'INVALID_REQUEST',
            message: 'endpoint: must not be or resolve to a loopback, private, link-local, metadata or other non-public address',
          },
        },
        endpoint,
      );
    }
    const plain = await create('http://partner.test/hook');
    assert.equal(plain.statusCode, 400);
    assert.equal(plain.json().error.message, 'endpoint: must use https');
    assert.equal((await stored()).length, before, 'nothing refused was stored');
  });

  it('accepts a name whose every address is public, and refuses moving it to a blocked one', async () => {
    const created = await create('https://partner.test/hooks/ok');
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json().id as string;
    const moved = await t.app.inject({
      method: 'PATCH',
      url: `${BASE}/${id}`,
      headers: bearer(client.token),
      payload: { endpoint: 'https://intranet.test/hook' },
    });
    assert.equal(moved.statusCode, 400);
    assert.equal(moved.json().error.code, 'INVALID_REQUEST');
    assert.equal((await stored()).find((s) => s.id === id)?.endpoint, 'https://partner.test/hooks/ok');
  });

  it('refuses at connect time a name that resolved to a public address at registration and now to loopback', async () => {
    const listener = await countingListener();
    const partner = await createTestClient(t.ctx, { scopes: ['webhook:admin'] });
    try {
      dns.answer('rebind.test', ['93.184.215.14']);
      const created = await t.app.inject({
        method: 'POST',
        url: BASE,
        headers: bearer(partner.token),
        payload: { endpoint: `https://rebind.test:${listener.port}/hook` },
      });
      assert.equal(created.statusCode, 201, created.body);
      const id = created.json().id as string;
      // DNS rebinding: every name now answers loopback, where the listener waits.
      dns.rebindAll();
      const asked = dns.asked.length;
      await recordReviewEvent(t.ctx.storage, partner.businessId);
      await t.ctx.jobs.runDue();
      assert.equal(listener.connections(), 0, 'nothing reached the loopback listener');
      assert.deepEqual(dns.asked.slice(asked), ['rebind.test', 'rebind.test'], 'each attempt resolved the name in the socket lookup');
      const response = await t.app.inject({ method: 'GET', url: `${BASE}/${id}/deliveries`, headers: bearer(partner.token) });
      assert.deepEqual(
        response.json().data.map((d: Record<string, unknown>) => [d.status, d.attempts, d.last_status_code, d.last_error]),
        [['failed', 2, null, 'address not allowed']],
      );
      const job = await t.ctx.storage.db
        .selectFrom('jobs')
        .select('last_error')
        .where('kind', '=', 'webhook.delivery')
        .where('business_id', '=', partner.businessId)
        .executeTakeFirstOrThrow();
      assert.equal(job.last_error, 'address not allowed', 'the job keeps the class too');
    } finally {
      await listener.close();
    }
  });
});

describe(`webhooks to destinations the operator allows (CPS_OUTBOUND_ALLOW) in production (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const dialled: string[] = [];
  before(async () => {
    receiver = await startReceiver();
    const dns = stubResolver({ 'receiver.clinic.test': ['192.168.1.20'], 'printer.clinic.test': ['192.168.2.30'] });
    t = await createTestApp({
      env: productionEnv({ CPS_WEBHOOK_RETRY_SCHEDULE: '0', CPS_OUTBOUND_ALLOW: '192.168.1.0/24, 10.8.0.0/16' }),
      context: (ctx) => {
        // The connect step is stubbed: an approved LAN address is dialled at the loopback receiver.
        ctx.outbound = new OutboundClient({
          publicOnly: true,
          allow: ctx.config.outboundAllow,
          resolve: dns.resolve,
          connectTo: (address) => {
            dialled.push(address);
            return '127.0.0.1';
          },
        });
      },
    });
    client = await createTestClient(t.ctx, { scopes: ['webhook:admin'] });
  });
  after(async () => {
    await t.close();
    await receiver.close();
  });

  const create = (endpoint: string) => t.app.inject({ method: 'POST', url: BASE, headers: bearer(client.token), payload: { endpoint } });

  it('delivers over plain http to a LAN receiver whose address the list covers', async () => {
    const created = await create(`http://receiver.clinic.test:${receiver.port}/hooks`);
    assert.equal(created.statusCode, 201, created.body);
    await recordReviewEvent(t.ctx.storage, client.businessId);
    await t.ctx.jobs.runDue();
    assert.deepEqual(dialled, ['192.168.1.20'], 'the policy approved the LAN address before the stubbed connect');
    assert.equal(receiver.received.length, 1);
    assert.equal(JSON.parse(receiver.received[0]!.body).event, 'external_review.request');
    const [delivery] = (await t.app.inject({ method: 'GET', url: `${BASE}/${created.json().id}/deliveries`, headers: bearer(client.token) })).json()
      .data;
    assert.equal(delivery.status, 'succeeded');
  });

  it('still refuses addresses outside the list, loopback and metadata, at registration', async () => {
    for (const endpoint of ['http://printer.clinic.test/hook', 'http://192.168.2.30/hook', 'http://127.0.0.1/hook', 'http://169.254.169.254/hook']) {
      const response = await create(endpoint);
      assert.equal(response.statusCode, 400, endpoint);
      assert.equal(response.json().error.code, 'INVALID_REQUEST', endpoint);
    }
  });
});

describe(`webhook delivery errors name the class of failure (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  before(async () => {
    t = await createTestApp({ env: { CPS_WEBHOOK_RETRY_SCHEDULE: '0' } });
    client = await createTestClient(t.ctx, { scopes: ['webhook:admin'] });
  });
  after(() => t.close());

  async function lastError(endpoint: string): Promise<unknown> {
    const created = await t.app.inject({ method: 'POST', url: BASE, headers: bearer(client.token), payload: { endpoint } });
    assert.equal(created.statusCode, 201, created.body);
    await recordReviewEvent(t.ctx.storage, client.businessId);
    await t.ctx.jobs.runDue();
    const [delivery] = (await t.app.inject({ method: 'GET', url: `${BASE}/${created.json().id}/deliveries`, headers: bearer(client.token) })).json()
      .data;
    assert.equal(delivery.status, 'failed');
    return delivery.last_error;
  }

  it('a closed port and a TLS failure on an open port read the same; an HTTP status reads as HTTP <status>', async () => {
    const receiver = await startReceiver(() => ({ status: 503 }));
    try {
      // Development allows loopback: a closed port, https to a plain-HTTP port, and an answer.
      assert.equal(await lastError(`http://127.0.0.1:${await freePort()}/closed`), 'could not connect');
      assert.equal(await lastError(`https://127.0.0.1:${receiver.port}/tls`), 'could not connect');
      assert.equal(await lastError(`${receiver.url}/status`), 'HTTP 503');
    } finally {
      await receiver.close();
    }
  });
});
