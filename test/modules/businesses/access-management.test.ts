/**
 * Managing access through the admin API (and the cps command): list businesses and clients, revoke a client,
 * rotate a client's secret with the old one working for a grace period the operator chose; each change and
 * listing of a business's clients leaves an access log entry in that business's chain.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { businessService } from '../../../src/modules/businesses/index.ts';
import { BusinessService, USAGE_FRESH_MS } from '../../../src/modules/businesses/service.ts';
import { runCli } from '../../process.ts';
import { recordReviewEvent, startReceiver } from '../webhooks/support.ts';
import { ADMIN_TOKEN, bearer, createTestApp, DIALECT, testKeys, type TestApp } from '../../support.ts';

describe(`access management: admin API and the cps command (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(async () => {
    await t.close();
  });

  const admin = bearer(ADMIN_TOKEN);
  const call = (method: 'GET' | 'POST', url: string, payload?: unknown, headers: Record<string, string> = admin) =>
    t.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
  const login = (client_id: string, client_secret: string) => call('POST', '/connect-auth/v1/account/login', { client_id, client_secret }, {});
  const newBusiness = async (name: string) => {
    const created = await call('POST', '/admin/v1/businesses', { name });
    assert.equal(created.statusCode, 201, created.body);
    return created.json() as { business_id: string; client_id: string; client_secret: string };
  };
  const unrevokedRefreshTokens = (clientId: string) =>
    t.ctx.storage.db.selectFrom('refresh_tokens').select('id').where('client_id', '=', clientId).where('revoked_at', 'is', null).execute();
  const entries = async (businessId: string, resource = 'api_client') => {
    await t.ctx.audit.flush();
    return t.ctx.storage.db
      .selectFrom('access_log')
      .select(['client_id', 'operation', 'action', 'resource_type', 'resource_id', 'status'])
      .where('business_id', '=', businessId)
      .where('resource_type', '=', resource)
      .orderBy('at')
      .orderBy('id')
      .execute();
  };
  // The cps command under the test app's master key, so the chain heads it seals and the app's agree.
  const env = async () => ({
    CPS_DATA_DIR: t.database.dataDir,
    CPS_MASTER_KEY: (await testKeys()).masterKey.toString('base64'),
    ...(t.database.databaseUrl ? { DATABASE_URL: t.database.databaseUrl } : {}),
  });

  it('lists businesses and their clients, without secrets', async () => {
    const business = await newBusiness('Lakeside Clinic');
    const listed = await call('GET', '/admin/v1/businesses');
    assert.equal(listed.statusCode, 200, listed.body);
    const mine = listed.json().businesses.find((b: { business_id: string }) => b.business_id === business.business_id);
    assert.deepEqual(
      { ...mine, created_at: typeof mine.created_at },
      { business_id: business.business_id, name: 'Lakeside Clinic', created_at: 'number', clients: 1 },
    );
    const clients = await call('GET', `/admin/v1/businesses/${business.business_id}/clients`);
    assert.equal(clients.statusCode, 200, clients.body);
    assert.deepEqual(
      clients.json().clients.map((c: Record<string, unknown>) => [c.client_id, c.disabled_at, c.previous_secret_expires_at]),
      [[business.client_id, null, null]],
    );
    assert.ok(!clients.body.includes(business.client_secret.slice(3)), 'no secret is shown');
    assert.equal((await call('GET', '/admin/v1/businesses/biz_nope/clients')).statusCode, 404);
    assert.deepEqual(await entries(business.business_id), [
      {
        client_id: 'admin',
        operation: 'GET /admin/v1/businesses/:business_id/clients',
        action: 'list',
        resource_type: 'api_client',
        resource_id: null,
        status: 200,
      },
    ]);
  });

  it('creating a business or a client and listing businesses are access log entries, as other admin actions are', async () => {
    const business = await newBusiness('Creek Clinic');
    const client = await call('POST', `/admin/v1/businesses/${business.business_id}/clients`, { scopes: ['search'] });
    assert.equal(client.statusCode, 201, client.body);
    assert.equal((await call('POST', '/admin/v1/businesses/biz_nope/clients', {})).statusCode, 404);
    assert.equal((await call('POST', '/admin/v1/businesses', { name: '' })).statusCode, 400);
    assert.equal((await call('GET', '/admin/v1/businesses')).statusCode, 200);
    // The creation is the first entry of the new business's own chain.
    assert.deepEqual(await entries(business.business_id, 'business'), [
      {
        client_id: 'admin',
        operation: 'POST /admin/v1/businesses',
        action: 'create',
        resource_type: 'business',
        resource_id: business.business_id,
        status: 201,
      },
    ]);
    assert.deepEqual(await entries(business.business_id), [
      {
        client_id: 'admin',
        operation: 'POST /admin/v1/businesses/:business_id/clients',
        action: 'create',
        resource_type: 'api_client',
        resource_id: client.json().client_id,
        status: 201,
      },
    ]);
    assert.deepEqual(
      (await entries('biz_nope')).filter((entry) => entry.action === 'create').map((entry) => [entry.operation, entry.status]),
      [['POST /admin/v1/businesses/:business_id/clients', 404]],
    );
    // A refused creation names no business, and the list of every business is the operator's own: both in the operator's chain.
    const operator = (await entries('*', 'business')).map((entry) => [entry.operation, entry.action, entry.status]);
    assert.ok(
      operator.some(([operation, , status]) => operation === 'POST /admin/v1/businesses' && status === 400),
      JSON.stringify(operator),
    );
    assert.ok(operator.some(([operation, action, status]) => operation === 'GET /admin/v1/businesses' && action === 'list' && status === 200));
  });

  it('cps business create, client create, client list and business list leave access log entries (client cli)', async () => {
    const created = await runCli(['business', 'create', '--name', 'Ridge Clinic'], await env());
    assert.equal(created.code, 0, created.stderr);
    const business = JSON.parse(created.stdout);
    const client = await runCli(['client', 'create', '--business', business.business_id, '--scope', 'search'], await env());
    assert.equal(client.code, 0, client.stderr);
    const clientId = JSON.parse(client.stdout).client_id;
    const listed = await runCli(['client', 'list', '--business', business.business_id], await env());
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal(JSON.parse(listed.stdout).length, 2);
    const all = await runCli(['business', 'list'], await env());
    assert.equal(all.code, 0, all.stderr);
    assert.deepEqual(
      (await entries(business.business_id, 'business')).map((entry) => [entry.client_id, entry.operation, entry.action, entry.resource_id]),
      [['cli', 'cps business create', 'create', business.business_id]],
    );
    assert.deepEqual(
      (await entries(business.business_id)).map((entry) => [entry.client_id, entry.operation, entry.action, entry.resource_id, entry.status]),
      [
        ['cli', 'cps client create', 'create', clientId, 200],
        ['cli', 'cps client list', 'list', null, 200],
      ],
    );
    const count = await t.ctx.storage.db
      .selectFrom('access_log')
      .select('result_count')
      .where('business_id', '=', business.business_id)
      .where('operation', '=', 'cps client list')
      .executeTakeFirstOrThrow();
    assert.equal(Number(count.result_count), 2);
    assert.ok((await entries('*', 'business')).some((entry) => entry.client_id === 'cli' && entry.operation === 'cps business list'));
    // The service chains the command's entries into the business's chain, which verifies.
    const verified = await runCli(['audit', 'verify', '--business', business.business_id], await env());
    assert.equal(verified.code, 0, verified.stdout + verified.stderr);
  });

  it('rotates a secret: the new one logs in at once, the old one until its grace period ends', async () => {
    const business = await newBusiness('Hillside Clinic');
    const path = `/admin/v1/businesses/${business.business_id}/clients/${business.client_id}/rotate-secret`;
    const rotated = await call('POST', path, { grace_seconds: 3600 });
    assert.equal(rotated.statusCode, 200, rotated.body);
    const body = rotated.json();
    assert.equal(body.client_id, business.client_id);
    assert.match(body.client_secret, /^cs_/);
    assert.ok(Math.abs(body.previous_secret_expires_at - (Date.now() + 3_600_000)) < 60_000);
    assert.equal((await login(business.client_id, body.client_secret)).statusCode, 200, 'the new secret');
    assert.equal((await login(business.client_id, business.client_secret)).statusCode, 200, 'the old secret, in its grace period');
    const listed = (await call('GET', `/admin/v1/businesses/${business.business_id}/clients`)).json().clients[0];
    assert.equal(listed.previous_secret_expires_at, body.previous_secret_expires_at);

    // The grace period over (moved back in the database): the old secret is refused, the new one works.
    await t.ctx.storage.db
      .updateTable('api_clients')
      .set({ previous_secret_expires_at: Date.now() - 1 })
      .where('id', '=', business.client_id)
      .execute();
    assert.equal((await login(business.client_id, business.client_secret)).statusCode, 401, 'the old secret after its grace period');
    assert.equal((await login(business.client_id, body.client_secret)).statusCode, 200);

    // grace_seconds 0: the replaced secret stops now; a rotation also ends an earlier rotation's grace.
    const again = await call('POST', path, { grace_seconds: 0 });
    assert.equal(again.statusCode, 200, again.body);
    assert.equal(again.json().previous_secret_expires_at, null);
    assert.equal((await login(business.client_id, body.client_secret)).statusCode, 401);
    assert.equal((await login(business.client_id, again.json().client_secret)).statusCode, 200);
    const third = (await call('POST', path, { grace_seconds: 60 })).json();
    const fourth = (await call('POST', path, { grace_seconds: 60 })).json();
    assert.equal((await login(business.client_id, again.json().client_secret)).statusCode, 401, 'two rotations back');
    assert.equal((await login(business.client_id, third.client_secret)).statusCode, 200, 'one rotation back');
    assert.equal((await login(business.client_id, fourth.client_secret)).statusCode, 200);

    const changes = (await entries(business.business_id)).filter((entry) => entry.action === 'update');
    assert.equal(changes.length, 4);
    assert.deepEqual(changes[0], {
      client_id: 'admin',
      operation: 'POST /admin/v1/businesses/:business_id/clients/:client_id/rotate-secret',
      action: 'update',
      resource_type: 'api_client',
      resource_id: business.client_id,
      status: 200,
    });
  });

  it('refuses a bad grace period, an unknown client and another business’s client', async () => {
    const business = await newBusiness('North Clinic');
    const other = await newBusiness('South Clinic');
    const path = `/admin/v1/businesses/${business.business_id}/clients/${business.client_id}/rotate-secret`;
    for (const payload of [{}, { grace_seconds: -1 }, { grace_seconds: 2_592_001 }, { grace_seconds: 1.5 }, { grace_seconds: '60' }]) {
      const refused = await call('POST', path, payload);
      assert.equal(refused.statusCode, 400, `${JSON.stringify(payload)}: ${refused.body}`);
    }
    for (const url of [
      `/admin/v1/businesses/${business.business_id}/clients/cl_nope/rotate-secret`,
      `/admin/v1/businesses/${other.business_id}/clients/${business.client_id}/rotate-secret`,
    ]) {
      assert.equal((await call('POST', url, { grace_seconds: 60 })).statusCode, 404, url);
    }
    assert.equal((await call('POST', `/admin/v1/businesses/${other.business_id}/clients/${business.client_id}/revoke`)).statusCode, 404);
    assert.equal((await login(business.client_id, business.client_secret)).statusCode, 200, 'nothing changed');
    const noToken = await call('POST', path, { grace_seconds: 60 }, {});
    assert.equal(noToken.statusCode, 401);
    assert.equal((await call('GET', '/admin/v1/businesses', undefined, {})).statusCode, 401);
  });

  it('two rotations of one client at once: one applies, the other answers 409 and issued no secret', async () => {
    const business = await newBusiness('Racing Clinic');
    const path = `/admin/v1/businesses/${business.business_id}/clients/${business.client_id}/rotate-secret`;
    // The window widened: each rotation, having read the secret, waits for the other to read it too, so
    // the second to commit finds it changed whatever the machine's load.
    const findActiveClient = BusinessService.prototype.findActiveClient;
    let read = 0;
    let bothRead!: () => void;
    const together = new Promise<void>((resolve) => (bothRead = resolve));
    BusinessService.prototype.findActiveClient = async function (this: BusinessService, ...args: Parameters<typeof findActiveClient>) {
      const client = await findActiveClient.apply(this, args);
      if (args[1] !== business.client_id || read >= 2) return client;
      if (++read === 2) bothRead();
      await together;
      return client;
    } as typeof findActiveClient;
    let answers: Awaited<ReturnType<typeof call>>[];
    try {
      answers = await Promise.all([call('POST', path, { grace_seconds: 3600 }), call('POST', path, { grace_seconds: 3600 })]);
    } finally {
      BusinessService.prototype.findActiveClient = findActiveClient;
    }
    assert.deepEqual(answers.map((answer) => answer.statusCode).sort(), [200, 409], answers.map((answer) => answer.body).join('\n'));
    const won = answers.find((answer) => answer.statusCode === 200)!.json();
    const lost = answers.find((answer) => answer.statusCode === 409)!.json();
    assert.equal(lost.error.code, 'CONFLICT');
    assert.match(lost.error.message, /another rotation of its secret finished while this one ran, so this one was not applied/);
    assert.equal((await login(business.client_id, won.client_secret)).statusCode, 200, 'the rotation that applied');
    assert.equal((await login(business.client_id, business.client_secret)).statusCode, 200, 'the secret it replaced, in its grace period');
    const listed = (await call('GET', `/admin/v1/businesses/${business.business_id}/clients`)).json().clients[0];
    assert.equal(listed.previous_secret_expires_at, won.previous_secret_expires_at);
    assert.deepEqual(
      (await entries(business.business_id))
        .filter((entry) => entry.action === 'update')
        .map((entry) => entry.status)
        .sort(),
      [200, 409],
    );
  });

  it('revokes a client: no more logins or refreshes, its refresh tokens revoked, listed as disabled, a second revoke is 404', async () => {
    const business = await newBusiness('East Clinic');
    const session = await login(business.client_id, business.client_secret);
    assert.equal(session.statusCode, 200, session.body);
    const path = `/admin/v1/businesses/${business.business_id}/clients/${business.client_id}/revoke`;
    const revoked = await call('POST', path);
    assert.equal(revoked.statusCode, 200, revoked.body);
    assert.deepEqual(revoked.json(), { client_id: business.client_id, revoked: true });
    assert.equal((await login(business.client_id, business.client_secret)).statusCode, 401);
    const refreshed = await call('POST', '/connect-auth/v1/account/refresh-token', { refresh_token: session.json().refresh_token }, {});
    assert.equal(refreshed.statusCode, 401, refreshed.body);
    assert.deepEqual(await unrevokedRefreshTokens(business.client_id), [], 'revoked in the transaction that disabled the client');
    assert.equal(typeof (await call('GET', `/admin/v1/businesses/${business.business_id}/clients`)).json().clients[0].disabled_at, 'number');
    assert.equal((await call('POST', path)).statusCode, 404);
    assert.equal(
      (await call('POST', `/admin/v1/businesses/${business.business_id}/clients/${business.client_id}/rotate-secret`, { grace_seconds: 60 }))
        .statusCode,
      404,
    );
    assert.deepEqual(
      (await entries(business.business_id)).filter((entry) => entry.action === 'delete').map((entry) => [entry.resource_id, entry.status]),
      [
        [business.client_id, 200],
        [business.client_id, 404],
      ],
    );
  });

  it('cps client rotate: a new secret, the old one working for --grace seconds, with an access log entry', async () => {
    const business = await newBusiness('West Clinic');
    const missing = await runCli(['client', 'rotate', '--client', business.client_id], await env());
    assert.equal(missing.code, 2, missing.stderr);
    assert.match(missing.stderr, /--grace SECONDS/);
    const result = await runCli(['client', 'rotate', '--client', business.client_id, '--grace', '600'], await env());
    assert.equal(result.code, 0, result.stderr);
    const rotated = JSON.parse(result.stdout);
    assert.equal((await login(business.client_id, rotated.client_secret)).statusCode, 200);
    assert.equal((await login(business.client_id, business.client_secret)).statusCode, 200, 'in its grace period');
    assert.ok(Math.abs(rotated.previous_secret_expires_at - (Date.now() + 600_000)) < 60_000);
    const session = await login(business.client_id, rotated.client_secret);
    assert.equal(session.statusCode, 200, session.body);
    const revoked = await runCli(['client', 'revoke', '--client', business.client_id], await env());
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.equal((await login(business.client_id, business.client_secret)).statusCode, 401, 'a revoke ends the grace period too');
    assert.deepEqual(await unrevokedRefreshTokens(business.client_id), [], 'cps client revoke revokes the refresh tokens too');
    assert.deepEqual(
      (await entries(business.business_id)).map((entry) => [entry.client_id, entry.operation, entry.action, entry.resource_id, entry.status]),
      [
        ['cli', 'cps client rotate', 'update', business.client_id, 200],
        ['cli', 'cps client revoke', 'delete', business.client_id, 200],
      ],
    );
  });

  it("a business's own client lists that business's clients and never another's; scope webhook:admin; an entry in its chain", async () => {
    const ours = await newBusiness('Ours');
    const theirs = await newBusiness('Theirs');
    const desk = await call('POST', `/admin/v1/businesses/${ours.business_id}/clients`, { scopes: ['appointment:write'] });
    const token = async (clientId: string, secret: string) => {
      const answer = await login(clientId, secret);
      assert.equal(answer.statusCode, 200, answer.body);
      return bearer(answer.json().access_token as string);
    };
    const ourToken = await token(ours.client_id, ours.client_secret);
    const listed = await call('GET', '/connect-auth/v1/account/clients', undefined, ourToken);
    assert.equal(listed.statusCode, 200, listed.body);
    const ids = (listed.json().clients as Array<{ client_id: string; client_secret?: string }>).map((client) => client.client_id).sort();
    assert.deepEqual(ids, [ours.client_id, desk.json().client_id].sort());
    assert.ok(!listed.body.includes(ours.client_secret), 'no secret listed');
    assert.ok(!ids.includes(theirs.client_id), "another business's client is never listed");

    const theirList = await call('GET', '/connect-auth/v1/account/clients', undefined, await token(theirs.client_id, theirs.client_secret));
    assert.deepEqual(
      theirList.json().clients.map((client: { client_id: string }) => client.client_id),
      [theirs.client_id],
    );
    // A query or path naming another business changes nothing: the business is the caller's.
    const asked = await call('GET', `/connect-auth/v1/account/clients?business_id=${theirs.business_id}`, undefined, ourToken);
    assert.ok(!asked.body.includes(theirs.client_id));

    const deskToken = await token(desk.json().client_id, desk.json().client_secret);
    assert.equal((await call('GET', '/connect-auth/v1/account/clients', undefined, deskToken)).statusCode, 403, 'a front desk lacks webhook:admin');
    assert.equal((await call('GET', '/connect-auth/v1/account/clients', undefined, {})).statusCode, 401);
    assert.equal((await call('GET', '/connect-auth/v1/account/clients')).statusCode, 401, 'the admin token acts for no business');

    const logged = (await entries(ours.business_id)).filter((entry) => entry.operation === 'GET /connect-auth/v1/account/clients');
    assert.deepEqual(
      logged.map((entry) => [entry.client_id, entry.action, entry.status]),
      [
        [ours.client_id, 'list', 200],
        [ours.client_id, 'list', 200],
      ],
    );
    assert.equal((await entries(theirs.business_id)).filter((entry) => entry.operation === 'GET /connect-auth/v1/account/clients').length, 1);
  });

  it("a business's usage is counted again once the last count is USAGE_FRESH_MS old, and a refused count is not kept", async () => {
    const business = await newBusiness('Watched');
    const service = businessService(t.ctx, async () => {});
    const requestsToday = async (now: number) => (await service.usage(business.business_id, 1, now))[0]!.requests;
    await t.ctx.audit.flush();
    const now = Date.now();
    const counted = await requestsToday(now);
    await call('GET', `/admin/v1/businesses/${business.business_id}/clients`);
    await t.ctx.audit.flush();
    assert.equal(await requestsToday(now + USAGE_FRESH_MS - 1), counted, 'the count answered again while fresh');
    assert.equal(await requestsToday(now + USAGE_FRESH_MS), counted + 1, 'counted anew once as old as USAGE_FRESH_MS');
    const late = `biz_late${now}`;
    await assert.rejects(service.usage(late, 1, now), /not found/);
    await service.createBusiness('Late', late);
    assert.equal((await service.usage(late, 1, now + 1))[0]!.requests, 0, 'a refused count is not answered again');
  });

  it("a business's usage per day: its access log's requests and failures, its webhook attempts and failures, never another's", async () => {
    const ours = await newBusiness('Busy');
    const theirs = await newBusiness('Quiet');
    const token = bearer((await login(ours.client_id, ours.client_secret)).json().access_token as string);
    const down = await startReceiver(() => ({ status: 503 }));
    const up = await startReceiver(() => ({ status: 200 }));
    try {
      for (const endpoint of [down.url, up.url]) {
        const subscribed = await call('POST', '/notification/v1/connect/webhook/subscriptions', { endpoint }, token);
        assert.equal(subscribed.statusCode, 201, subscribed.body);
      }
      assert.equal((await call('GET', '/dr/v1/patient/pt_unknown', undefined, token)).statusCode, 404);
      await call('GET', `/admin/v1/businesses/${ours.business_id}/clients`);
      await recordReviewEvent(t.ctx.storage, ours.business_id);
      await t.ctx.jobs.runDue();
    } finally {
      await down.close();
      await up.close();
    }
    await t.ctx.audit.flush();

    const usage = await call('GET', `/admin/v1/businesses/${ours.business_id}/usage?days=3`);
    assert.equal(usage.statusCode, 200, usage.body);
    const days = usage.json().days as Array<{ day: string; requests: number; failures: number; deliveries: number; delivery_failures: number }>;
    assert.deepEqual(
      days.map((d) => d.day),
      [2, 1, 0].map((back) => new Date(Date.now() - back * 86_400_000).toISOString().slice(0, 10)),
      'every day of the window, oldest first',
    );
    const today = days[2]!;
    const logged = await t.ctx.storage.db.selectFrom('access_log').select('status').where('business_id', '=', ours.business_id).execute();
    assert.equal(today.requests, logged.length);
    assert.equal(today.failures, logged.filter((entry) => entry.status === null || entry.status >= 400).length);
    assert.ok(today.failures >= 1, 'the 404 is a failure');
    assert.deepEqual([today.deliveries, today.delivery_failures], [2, 1], 'one attempt answered 503, one 200');

    const quiet = (await call('GET', `/admin/v1/businesses/${theirs.business_id}/usage`)).json().days;
    assert.equal(quiet.length, 7, 'a week unless asked');
    assert.equal(
      quiet.reduce((sum: number, d: { deliveries: number }) => sum + d.deliveries, 0),
      0,
      "another business's deliveries are not counted",
    );
    assert.equal((await call('GET', '/admin/v1/businesses/biz_unknown/usage')).statusCode, 404);
    assert.equal((await call('GET', `/admin/v1/businesses/${ours.business_id}/usage?days=91`)).statusCode, 400);
    assert.equal((await call('GET', `/admin/v1/businesses/${ours.business_id}/usage`, undefined, token)).statusCode, 401);
    const entry = (await entries(ours.business_id, 'business')).find((e) => e.operation === 'GET /admin/v1/businesses/:business_id/usage');
    assert.deepEqual(entry && [entry.client_id, entry.action, entry.resource_id], ['admin', 'read', ours.business_id]);
  });
});
