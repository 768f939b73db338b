/** GET /audit/v1/events and the operator's /admin/v1/audit/events: scopes, isolation, filters, paging, and the reading audited. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ADMIN_TOKEN, createTestApp, createTestClient, DIALECT, type TestApp } from '../support.ts';
import { call, seed, type Seeded } from './support.ts';

describe(`access log API (${DIALECT})`, () => {
  let t: TestApp;
  let a: Seeded;
  let b: Seeded;
  before(async () => {
    t = await createTestApp();
    a = await seed(t);
    b = await seed(t);
    for (let i = 0; i < 6; i++) await call(t, a.client.token, 'GET', `/dr/v1/appointment/${a.appointmentId}`);
    await call(t, b.client.token, 'GET', `/dr/v1/appointment/${b.appointmentId}`);
    await t.ctx.audit.flush();
  });
  after(async () => t.close());

  const list = async (token: string, query = '') => {
    await t.ctx.audit.flush();
    return call(t, token, 'GET', `/audit/v1/events${query}`);
  };

  it("lists the business's own entries in chain order, and the reading is itself an entry", async () => {
    const first = await list(a.client.token);
    assert.equal(first.statusCode, 200, first.body);
    const events = first.json().events as Array<Record<string, unknown>>;
    assert.ok(events.length >= 8);
    assert.ok(events.every((e) => e.business_id === a.client.businessId));
    assert.deepEqual(
      events.map((e) => e.seq),
      events.map((_, i) => i + 1),
    );
    const reads = events.filter((e) => e.operation === 'GET /dr/v1/appointment/:appointment_id');
    assert.equal(reads[0]!.patient_ref, a.patientId);
    const again = await list(a.client.token);
    const audited = (again.json().events as Array<Record<string, unknown>>).find((e) => e.request_id === first.headers['x-request-id']);
    assert.equal(audited?.resource_type, 'access_log');
    assert.equal(audited?.result_count, events.length);
  });

  it('needs a token and the scope audit:read; clients created without scopes have it', async () => {
    assert.equal((await t.app.inject({ method: 'GET', url: '/audit/v1/events' })).statusCode, 401);
    const narrow = await createTestClient(t.ctx, { businessId: a.client.businessId, scopes: ['patient:read'] });
    const refused = await list(narrow.token);
    assert.equal(refused.statusCode, 403);
    assert.equal(refused.json().error.code, 'ACCESS_DENIED');
    const all = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${a.client.businessId}/clients`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: {},
    });
    assert.ok((all.json().scopes as string[]).includes('audit:read'));
  });

  it("never shows another business's entries, even filtered by its patient", async () => {
    const own = (await list(b.client.token)).json().events as Array<Record<string, unknown>>;
    assert.ok(own.length > 0 && own.every((e) => e.business_id === b.client.businessId));
    const foreign = await list(b.client.token, `?patient_id=${a.patientId}`);
    assert.equal(foreign.statusCode, 200);
    assert.deepEqual(foreign.json().events, []);
  });

  it('filters by patient (its own id or the partner id), client, resource and time', async () => {
    const byPatient = (await list(a.client.token, `?patient_id=${a.patientId}&resource_type=appointment`)).json().events as Array<
      Record<string, unknown>
    >;
    assert.ok(byPatient.length >= 7);
    assert.ok(byPatient.every((e) => e.resource_type === 'appointment'));
    // The booking named the patient by its partner id; the filter finds it by the service's id too.
    assert.ok(byPatient.some((e) => e.operation === 'POST /dr/v1/appointment'));
    const byPartner = (await list(a.client.token, `?patient_id=${a.partnerPatientId}&resource_type=appointment`)).json().events;
    assert.equal(byPartner.length, byPatient.length);
    const other = await createTestClient(t.ctx, { businessId: a.client.businessId });
    await call(t, other.token, 'GET', `/dr/v1/appointment/${a.appointmentId}`);
    const byClient = (await list(a.client.token, `?client_id=${other.clientId}`)).json().events as Array<Record<string, unknown>>;
    assert.equal(byClient.length, 1);
    const byResource = (await list(a.client.token, `?resource_type=appointment&resource_id=${a.appointmentId}`)).json().events;
    assert.ok(byResource.length >= 7);
    const future = (await list(a.client.token, `?from=${Math.floor(Date.now() / 1000) + 3600}`)).json().events;
    assert.deepEqual(future, []);
    const past = (await list(a.client.token, '?to=1')).json().events;
    assert.deepEqual(past, []);
  });

  it('pages by keyset: next_token until null, every entry once; a token of another walk is 400', async () => {
    const whole = (await list(a.client.token, '?resource_type=appointment')).json().events as Array<{ id: string }>;
    const seen: string[] = [];
    let token: string | null = null;
    do {
      const page = await list(a.client.token, `?resource_type=appointment&limit=2${token ? `&offset=${token}` : ''}`);
      assert.equal(page.statusCode, 200, page.body);
      seen.push(...(page.json().events as Array<{ id: string }>).map((e) => e.id));
      token = page.json().next_token;
    } while (token !== null);
    assert.deepEqual(seen, whole.map((e) => e.id).slice(0, seen.length));
    assert.ok(seen.length >= whole.length);
    const one = (await list(a.client.token, '?resource_type=appointment&limit=1')).json().next_token as string;
    assert.equal((await list(a.client.token, `?resource_type=case&limit=1&offset=${one}`)).statusCode, 400);
    assert.equal((await list(b.client.token, `?resource_type=appointment&limit=1&offset=${one}`)).statusCode, 400);
    assert.equal((await list(a.client.token, '?offset=garbage')).statusCode, 400);
  });

  it('the operator reads across businesses or one, with the admin token only; that reading is audited too', async () => {
    const admin = (query: string) =>
      t.app.inject({ method: 'GET', url: `/admin/v1/audit/events${query}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(
      (await t.app.inject({ method: 'GET', url: '/admin/v1/audit/events', headers: { authorization: `Bearer ${a.client.token}` } })).statusCode,
      401,
    );
    await t.ctx.audit.flush();
    const across = await admin('?limit=500');
    assert.equal(across.statusCode, 200);
    const businesses = new Set((across.json().events as Array<{ business_id: string }>).map((e) => e.business_id));
    assert.ok(businesses.has(a.client.businessId) && businesses.has(b.client.businessId));
    const one = await admin(`?business_id=${b.client.businessId}`);
    assert.ok((one.json().events as Array<{ business_id: string }>).every((e) => e.business_id === b.client.businessId));
    // B sees that the operator read its log; the read across businesses is in the operator's chain.
    const seenByB = (await list(b.client.token, '?client_id=admin')).json().events as Array<{ request_id: string }>;
    assert.ok(seenByB.some((e) => e.request_id === one.headers['x-request-id']));
    await t.ctx.audit.flush();
    const operator = (await admin('?business_id=*')).json().events as Array<{ request_id: string }>;
    assert.ok(operator.some((e) => e.request_id === across.headers['x-request-id']));
  });

  it("the operator has cps audit verify's verdict per chain over HTTP; an altered entry shows where the chain breaks", async () => {
    const verify = (query = '') =>
      t.app.inject({ method: 'GET', url: `/admin/v1/audit/verify${query}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(
      (await t.app.inject({ method: 'GET', url: '/admin/v1/audit/verify', headers: { authorization: `Bearer ${a.client.token}` } })).statusCode,
      401,
    );
    await t.ctx.audit.flush();
    const all = await verify();
    assert.equal(all.statusCode, 200, all.body);
    assert.equal(all.json().ok, true);
    const chains = all.json().chains as Array<{ business_id: string; ok: boolean; entries: number }>;
    assert.ok(chains.some((chain) => chain.business_id === a.client.businessId && chain.ok && chain.entries > 0));
    assert.ok(chains.some((chain) => chain.business_id === b.client.businessId));

    const victim = await t.ctx.storage.db
      .selectFrom('access_log')
      .select(['id', 'seq', 'client_id'])
      .where('business_id', '=', b.client.businessId)
      .where('seq', 'is not', null)
      .orderBy('seq')
      .executeTakeFirstOrThrow();
    await t.ctx.storage.db.updateTable('access_log').set({ client_id: 'someone-else' }).where('id', '=', victim.id).execute();
    try {
      const one = await verify(`?business_id=${b.client.businessId}`);
      assert.equal(one.json().ok, false);
      assert.deepEqual(
        one
          .json()
          .chains.map((chain: { business_id: string; ok: boolean; broken?: { seq: number } }) => [chain.business_id, chain.ok, chain.broken?.seq]),
        [[b.client.businessId, false, victim.seq]],
      );
      assert.equal((await verify()).json().chains.find((chain: { business_id: string }) => chain.business_id === a.client.businessId).ok, true);
    } finally {
      await t.ctx.storage.db.updateTable('access_log').set({ client_id: victim.client_id }).where('id', '=', victim.id).execute();
    }
  });
});
