import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bearer, createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';
import { BASE, casesApi, newCase, untilSecondIsOver, type CaseJson } from './support.ts';

describe(`cases (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  before(async () => {
    t = await createTestApp();
    client = await createTestClient(t.ctx);
  });
  after(async () => t.close());

  describe('happy', () => {
    it('creates, reads, updates and lists a case with every field', async () => {
      const api = casesApi(t.app, client.token, 'pt-happy');
      const created = await api.create(
        newCase('c1', {
          type: 'OP',
          hi_type: 'OPConsultation',
          partner_meta: { facility: 'F1', hrn: { id: 7, tags: ['a'] } },
        }),
      );
      assert.equal(created.statusCode, 201);
      assert.deepEqual(created.json(), { id: 'c1' });
      assert.equal(created.headers['cache-control'], 'no-store');

      const read = await api.get('c1');
      assert.equal(read.statusCode, 200);
      const body = read.json();
      assert.equal(body.id, 'c1');
      assert.equal(body.status, 'A');
      assert.ok(Number.isInteger(body.updated_at) && Math.abs(body.updated_at - Date.now() / 1000) < 5, 'updated_at is epoch seconds');
      assert.deepEqual(
        { ...body.item, created_at: 0 },
        {
          display_name: 'Case c1',
          type: 'OP',
          hi_type: 'OPConsultation',
          partner_meta: { facility: 'F1', hrn: { id: 7, tags: ['a'] } },
          created_at: 0,
          occurred_at: 1_700_000_000,
        },
      );
      assert.ok(Math.abs(body.item.created_at - Date.now() / 1000) < 5, 'created_at is epoch seconds');

      const patched = await api.update('c1', { display_name: 'Renamed', partner_meta: { only: true }, type: null });
      assert.equal(patched.statusCode, 204);
      assert.equal(patched.body, '');
      const after = (await api.get('c1')).json();
      assert.equal(after.item.display_name, 'Renamed');
      assert.deepEqual(after.item.partner_meta, { only: true }, 'partner_meta is replaced, not merged');
      assert.equal('type' in after.item, false, 'a cleared type is omitted');
      assert.equal(after.item.hi_type, 'OPConsultation');
      assert.ok(after.updated_at >= body.updated_at);

      await untilSecondIsOver();
      const list = await api.list();
      assert.equal(list.statusCode, 200);
      assert.deepEqual(list.json(), { cases: [after], next_token: null });
    });

    it('omits absent optional fields and gives partner_meta as {}', async () => {
      const api = casesApi(t.app, client.token, 'pt-minimal');
      assert.equal((await api.create(newCase('m1'))).statusCode, 201);
      const item = (await api.get('m1')).json().item;
      assert.deepEqual(Object.keys(item).sort(), ['created_at', 'display_name', 'occurred_at', 'partner_meta']);
      assert.deepEqual(item.partner_meta, {});
    });

    it('deletes as a tombstone: listed as D without item, updated_at bumped, GET 404, POST of its id 409', async () => {
      const api = casesApi(t.app, client.token, 'pt-delete');
      assert.equal((await api.create(newCase('d1'))).statusCode, 201);
      assert.equal((await api.create(newCase('d2'))).statusCode, 201);
      await untilSecondIsOver();
      const before = (await api.all()).cases;
      const max = Math.max(...before.map((c) => c.updated_at));

      assert.equal((await api.remove('d1')).statusCode, 204);
      assert.equal((await api.get('d1')).statusCode, 404);
      assert.deepEqual((await api.get('d1')).json(), { error: 'No case found with the given ID.', code: 'NOT_FOUND' });
      assert.equal((await api.create(newCase('d1'))).statusCode, 409);
      assert.equal((await api.remove('d1')).statusCode, 404, 'deleting a tombstone again');
      assert.equal((await api.update('d1', { display_name: 'x' })).statusCode, 404, 'updating a tombstone');

      await untilSecondIsOver();
      const all = (await api.all()).cases;
      const tombstone = all.find((c) => c.id === 'd1')!;
      assert.deepEqual(Object.keys(tombstone).sort(), ['id', 'status', 'updated_at']);
      assert.equal(tombstone.status, 'D');
      assert.ok(tombstone.updated_at > max, 'the delete took a later updated_at');
      assert.equal(all.at(-1)!.id, 'd1', 'the tombstone sorts last');

      const incremental = (await api.all({ u_at__gt: max })).cases;
      assert.deepEqual(incremental, [tombstone], 'an incremental sync receives the delete');
    });

    it('lists an unknown patient as empty', async () => {
      const response = await casesApi(t.app, client.token, 'nobody').list();
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json(), { cases: [], next_token: null });
    });

    it('accepts cases:read for reads and cases:write for reads and writes', async () => {
      const reader = await createTestClient(t.ctx, { businessId: client.businessId, scopes: ['cases:read'] });
      const writer = await createTestClient(t.ctx, { businessId: client.businessId, scopes: ['cases:write'] });
      const w = casesApi(t.app, writer.token, 'pt-scopes');
      assert.equal((await w.create(newCase('s1'))).statusCode, 201);
      assert.equal((await w.get('s1')).statusCode, 200);
      assert.equal((await w.list()).statusCode, 200);
      const r = casesApi(t.app, reader.token, 'pt-scopes');
      assert.equal((await r.get('s1')).statusCode, 200);
      assert.equal((await r.list()).statusCode, 200);
    });

    it('accepts the raw token in the auth header and paths with a trailing slash', async () => {
      const response = await t.app.inject({ method: 'GET', url: `${BASE}/`, headers: { auth: client.token, 'x-pt-id': 'pt-x' } });
      assert.equal(response.statusCode, 200);
    });
  });

  describe('errors', () => {
    const api = () => casesApi(t.app, client.token, 'pt-errors');

    it('requires X-Pt-Id after authentication and before every other check', async () => {
      const expected = { error: 'X-Pt-Id header is required', code: 'INVALID_REQUEST' };
      for (const request of [
        { method: 'GET' as const, url: BASE },
        { method: 'GET' as const, url: `${BASE}?u_at__gt=abc&offset=forged` },
        { method: 'POST' as const, url: BASE, payload: { id: 5 } },
        { method: 'POST' as const, url: BASE, payload: '{not json', headers: { 'content-type': 'application/json' } },
        { method: 'GET' as const, url: `${BASE}/missing` },
        { method: 'PATCH' as const, url: `${BASE}/missing`, payload: {} },
        { method: 'DELETE' as const, url: `${BASE}/missing` },
      ]) {
        for (const pt of [undefined, '', '   ']) {
          const response = await t.app.inject({
            ...request,
            headers: { ...bearer(client.token), ...(request.headers ?? {}), ...(pt === undefined ? {} : { 'x-pt-id': pt }) },
          });
          assert.equal(response.statusCode, 400, `${request.method} ${request.url} ${JSON.stringify(pt)}`);
          assert.deepEqual(response.json(), expected);
        }
      }
      const unauthenticated = await t.app.inject({ method: 'GET', url: BASE });
      assert.equal(unauthenticated.statusCode, 401, 'authentication comes first');
      assert.equal(unauthenticated.json().code, 'UNAUTHORIZED');
    });

    it('rejects an over-long X-Pt-Id', async () => {
      const response = await casesApi(t.app, client.token, 'p'.repeat(201)).list();
      assert.equal(response.statusCode, 400);
      assert.equal(response.json().code, 'INVALID_REQUEST');
      assert.match(response.json().error, /X-Pt-Id/);
    });

    it('validates the create body, naming each field, in the cases body', async () => {
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ display_name: 'x', occurred_at: 1 }, /id: This field is required/],
        [newCase('v1', { display_name: '' }), /display_name: must be a string of 1 to 200 characters/],
        [newCase('v1', { display_name: 'x'.repeat(201) }), /display_name: must be a string of 1 to 200 characters/],
        [newCase('v1', { display_name: 5 }), /display_name/],
        [newCase('v1', { occurred_at: '1700000000' }), /occurred_at: must be an integer epoch in seconds/],
        [newCase('v1', { occurred_at: 1.5 }), /occurred_at: must be an integer epoch in seconds/],
        [newCase('v1', { occurred_at: -1 }), /occurred_at/],
        [newCase('v1', { hi_type: 'XRay' }), /hi_type: must be one of OPConsultation, Prescription, DischargeSummary/],
        [newCase('v1', { partner_meta: [1, 2] }), /partner_meta: must be an object/],
        [newCase('v1', { partner_meta: 'x' }), /partner_meta: must be an object/],
        [newCase('v1', { type: 7 }), /type/],
        [newCase(''), /id: must be a string of 1 to 200 characters/],
      ];
      for (const [body, message] of cases) {
        const response = await api().create(body);
        assert.equal(response.statusCode, 400, JSON.stringify(body));
        const json = response.json();
        assert.deepEqual(Object.keys(json).sort(), ['code', 'error']);
        assert.equal(json.code, 'INVALID_REQUEST');
        assert.match(json.error, message);
      }
      const several = (await api().create({ id: 'v2', display_name: '', occurred_at: 'x' })).json();
      assert.match(several.error, /display_name/);
      assert.match(several.error, /occurred_at/, 'every problem is reported');
      assert.equal((await api().get('v1')).statusCode, 404, 'nothing was stored');
    });

    it('ignores unknown fields and accepts every hi_type of the contract', async () => {
      for (const [i, hiType] of [
        'OPConsultation',
        'Prescription',
        'DischargeSummary',
        'DiagnosticReport',
        'ImmunizationRecord',
        'HealthDocumentRecord',
        'WellnessRecord',
      ].entries()) {
        const response = await api().create(newCase(`h${i}`, { hi_type: hiType, surprise: true, created_at: 5 }));
        assert.equal(response.statusCode, 201, hiType);
      }
    });

    it('validates the update body', async () => {
      assert.equal((await api().create(newCase('u1'))).statusCode, 201);
      for (const body of [{}, { display_name: '' }, { occurred_at: 'x' }, { hi_type: 'Nope' }, { partner_meta: null }]) {
        const response = await api().update('u1', body);
        assert.equal(response.statusCode, 400, JSON.stringify(body));
        assert.equal(response.json().code, 'INVALID_REQUEST');
      }
      assert.deepEqual((await api().update('u1', { type: 5 })).json(), {
        error: 'type: must be a string of at most 100 characters, or null',
        code: 'INVALID_REQUEST',
      });
      assert.deepEqual(
        (await api().update('u1', { hi_type: 5 })).json().error,
        'hi_type: must be one of OPConsultation, Prescription, DischargeSummary, DiagnosticReport, ImmunizationRecord, HealthDocumentRecord, WellnessRecord, or null',
      );
      assert.equal((await api().update('u1', { hi_type: null })).statusCode, 204);
      const missingBody = await t.app.inject({ method: 'PATCH', url: `${BASE}/u1`, headers: { ...bearer(client.token), 'x-pt-id': 'pt-errors' } });
      assert.equal(missingBody.statusCode, 400);
    });

    it('answers 409 CONFLICT to a repeated id and 404 NOT_FOUND to an unknown one', async () => {
      assert.equal((await api().create(newCase('dup'))).statusCode, 201);
      const again = await api().create(newCase('dup', { display_name: 'Other' }));
      assert.equal(again.statusCode, 409);
      assert.deepEqual(again.json(), { error: 'Case already exists', code: 'CONFLICT' });
      assert.equal((await api().get('dup')).json().item.display_name, 'Case dup');
      for (const response of [await api().get('nope'), await api().update('nope', { display_name: 'x' }), await api().remove('nope')]) {
        assert.equal(response.statusCode, 404);
        assert.deepEqual(response.json(), { error: 'No case found with the given ID.', code: 'NOT_FOUND' });
      }
    });

    it('validates the list query', async () => {
      for (const query of [
        { u_at__gt: 'yesterday' },
        { u_at__gt: -5 },
        { u_at__gt: '1.5' },
        { u_at__gt: '1e20' },
        { u_at__gt: '99999999999999999999' },
      ]) {
        const response = await api().list(query);
        assert.equal(response.statusCode, 400, JSON.stringify(query));
        assert.deepEqual(Object.keys(response.json()).sort(), ['code', 'error']);
        assert.match(response.json().error, /u_at__gt/);
      }
    });

    it('rejects a malformed JSON body and another content type in the cases body', async () => {
      const headers = { ...bearer(client.token), 'x-pt-id': 'pt-errors' };
      const malformed = await t.app.inject({
        method: 'POST',
        url: BASE,
        headers: { ...headers, 'content-type': 'application/json' },
        payload: '{"id":',
      });
      assert.equal(malformed.statusCode, 400);
      assert.equal(malformed.json().code, 'INVALID_REQUEST');
      const text = await t.app.inject({ method: 'POST', url: BASE, headers: { ...headers, 'content-type': 'text/plain' }, payload: 'hello' });
      assert.equal(text.statusCode, 415);
      assert.equal(text.json().code, 'INVALID_REQUEST');
    });
  });

  describe('security', () => {
    it('answers 401 UNAUTHORIZED and 403 FORBIDDEN in the cases body', async () => {
      const none = await t.app.inject({ method: 'GET', url: BASE, headers: { 'x-pt-id': 'p' } });
      assert.equal(none.statusCode, 401);
      assert.deepEqual(Object.keys(none.json()).sort(), ['code', 'error']);
      assert.equal(none.json().code, 'UNAUTHORIZED');
      const bad = await casesApi(t.app, 'not-a-token', 'p').list();
      assert.equal(bad.statusCode, 401);

      const searchOnly = await createTestClient(t.ctx, { businessId: client.businessId, scopes: ['search'] });
      const noScope = casesApi(t.app, searchOnly.token, 'p');
      for (const response of [await noScope.list(), await noScope.get('x'), await noScope.create(newCase('x'))]) {
        assert.equal(response.statusCode, 403);
        assert.equal(response.json().code, 'FORBIDDEN');
      }
      const reader = await createTestClient(t.ctx, { businessId: client.businessId, scopes: ['cases:read'] });
      const readOnly = casesApi(t.app, reader.token, 'p');
      for (const response of [await readOnly.create(newCase('x')), await readOnly.update('x', { display_name: 'y' }), await readOnly.remove('x')]) {
        assert.equal(response.statusCode, 403);
        assert.equal(response.json().code, 'FORBIDDEN');
      }
      // Scope comes before input and existence.
      const invalid = await readOnly.create({ id: 5 });
      assert.equal(invalid.statusCode, 403);
    });

    it('keeps patients apart: another patient sees nothing and answers 404 for the id', async () => {
      const alice = casesApi(t.app, client.token, 'alice');
      const bob = casesApi(t.app, client.token, 'bob');
      assert.equal((await alice.create(newCase('shared-id'))).statusCode, 201);
      assert.equal((await bob.get('shared-id')).statusCode, 404);
      assert.equal((await bob.update('shared-id', { display_name: 'x' })).statusCode, 404);
      assert.equal((await bob.remove('shared-id')).statusCode, 404);
      assert.equal((await bob.create(newCase('shared-id', { display_name: 'Bob' }))).statusCode, 201, 'ids are unique per patient');
      await untilSecondIsOver();
      assert.deepEqual(
        (await bob.list()).json().cases.map((c: CaseJson) => c.item?.display_name),
        ['Bob'],
      );
      assert.deepEqual(
        (await alice.list()).json().cases.map((c: CaseJson) => c.item?.display_name),
        ['Case shared-id'],
      );
    });

    it("keeps businesses apart: another business's case answers exactly like an unknown one", async () => {
      const other = await createTestClient(t.ctx);
      const mine = casesApi(t.app, client.token, 'same-patient');
      const theirs = casesApi(t.app, other.token, 'same-patient');
      assert.equal((await mine.create(newCase('biz-case'))).statusCode, 201);
      for (const [foreign, unknown] of [
        [await theirs.get('biz-case'), await theirs.get('never-existed')],
        [await theirs.update('biz-case', { display_name: 'x' }), await theirs.update('never-existed', { display_name: 'x' })],
        [await theirs.remove('biz-case'), await theirs.remove('never-existed')],
      ]) {
        assert.equal(foreign!.statusCode, 404);
        assert.equal(foreign!.body, unknown!.body);
      }
      await untilSecondIsOver();
      assert.deepEqual((await theirs.list()).json(), { cases: [], next_token: null });
      assert.equal((await theirs.create(newCase('biz-case'))).statusCode, 201, 'no clash across businesses');
      assert.equal((await mine.get('biz-case')).json().item.display_name, 'Case biz-case');
    });
  });
});
