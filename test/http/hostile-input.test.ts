/**
 * Input that the database or the serializer cannot take is refused with 400 in the family body,
 * the same on SQLite and PostgreSQL: U+0000 in any request part, free-form objects past their
 * bounds, numbers outside what the columns store; and every id a schema accepts can be addressed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MAX_PARAM_LENGTH } from '../../src/app.ts';
import { MAX_STRING_ERRORS } from '../../src/http/hostile-input.ts';
import { FREE_FORM_LIMITS, MAX_ID_LENGTH } from '../../src/http/schemas.ts';
import { bearer, createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../support.ts';
import { book, bookingBody, createPractice, request, type Practice } from '../modules/appointments/support.ts';
import { casesApi, untilSecondIsOver } from '../modules/cases/support.ts';
import { postForm, reviewToken } from '../modules/reviews/support.ts';

const NUL_MESSAGE = 'must not contain the NUL character (U+0000)';
const DEPTH = FREE_FORM_LIMITS['x-max-depth'];

/** `depth` levels of objects: `{"a": {"a": ... 1}}`, as JSON text (JSON.stringify overflows on deep ones). */
function nestedJson(depth: number): string {
  return `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

/** A JSON body with `placeholder` (a string value) replaced by raw JSON text. */
function withRaw(body: Record<string, unknown>, raw: string): string {
  return JSON.stringify(body).replace('"@raw@"', raw);
}

describe(`hostile input (${DIALECT})`, () => {
  let t: TestApp;
  let practice: Practice;
  let client: TestClient;
  before(async () => {
    t = await createTestApp({
      setup: (app) => {
        // A route with no schema at all still gets the NUL rule on its path and query.
        app.get('/probe/:id', { config: { family: 'standard', auth: 'public' } }, async (req) => ({ params: req.params, query: req.query }));
      },
    });
    practice = await createPractice(t);
    client = await createTestClient(t.ctx);
  });
  after(async () => t.close());

  const count = async (table: 'appointments' | 'cases') =>
    Number(
      (
        await t.ctx.storage.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const appointmentPost = (body: string) =>
    t.app.inject({
      method: 'POST',
      url: '/dr/v1/appointment',
      headers: { auth: practice.client.token, 'content-type': 'application/json' },
      payload: body,
    });

  describe('strings the database cannot store (U+0000, unpaired surrogates)', () => {
    it('is refused in the unauthenticated login body, naming the field', async () => {
      const response = await t.app.inject({
        method: 'POST',
        url: '/connect-auth/v1/account/login',
        payload: { client_id: 'a\u0000b', client_secret: 'x\u0000' },
      });
      assert.equal(response.statusCode, 400);
      assert.deepEqual(response.json(), { code: 400, error: `client_id: ${NUL_MESSAGE}; client_secret: ${NUL_MESSAGE}` });
      assert.equal(response.headers['cache-control'], 'no-store');
      assert.match(String(response.headers['x-request-id']), /^req_/);
    });

    it('refuses a JSON body with a key that would reach the prototype', async () => {
      for (const raw of [
        '{"client_id":"a","client_secret":"b","__proto__":{"x":1}}',
        '{"client_id":"a","client_secret":"b","constructor":{"prototype":{"x":1}}}',
      ]) {
        const response = await t.app.inject({
          method: 'POST',
          url: '/connect-auth/v1/account/login',
          headers: { 'content-type': 'application/json' },
          payload: raw,
        });
        assert.equal(response.statusCode, 400);
        assert.deepEqual(response.json(), { code: 400, error: 'The request body is not valid JSON.' });
        assert.equal(({} as Record<string, unknown>).x, undefined);
      }
    });

    it('names a field called like an Object.prototype member (constructor, __proto__) without breaking the error body', async () => {
      for (const key of ['constructor', '__proto__', 'toString']) {
        const response = await t.app.inject({
          method: 'POST',
          url: `/connect-auth/v1/account/login?${key}=%00`,
          payload: { client_id: 'a', client_secret: 'b' },
        });
        assert.equal(response.statusCode, 400, key);
        assert.deepEqual(response.json(), { code: 400, error: `${key}: ${NUL_MESSAGE}` });
      }
    });

    it('is refused in the path of clinic and doctor writes, which collect body problems themselves', async () => {
      for (const url of ['/cdr/v1/clinic/%00', '/cdr/v1/doctor/%00', '/cdr/v1/doctor/a%00b?partner_id=1']) {
        const response = await t.app.inject({ method: 'PATCH', url, headers: { auth: practice.client.token }, payload: { name: 'x' } });
        assert.equal(response.statusCode, 400, url);
        assert.deepEqual(response.json(), { id: [NUL_MESSAGE] });
      }
    });

    it('is refused in nested body strings and in keys of free-form objects, and nothing is stored', async () => {
      const before = await count('appointments');
      const nested = await request(
        t,
        practice.client.token,
        'POST',
        '/dr/v1/appointment',
        bookingBody(practice, { patient_details: { first_name: 'Ra\u0000vi', address: { city: '\u0000' } }, partner_meta: { ok: ['x', 'y\u0000'] } }),
      );
      assert.equal(nested.statusCode, 400);
      assert.deepEqual(nested.json(), {
        error: {
          code: 'INVALID_REQUEST',
          message: `patient_details.first_name: ${NUL_MESSAGE}; patient_details.address.city: ${NUL_MESSAGE}; partner_meta.ok.1: ${NUL_MESSAGE}`,
        },
      });
      const key = await request(t, practice.client.token, 'POST', '/dr/v1/appointment', bookingBody(practice, { partner_meta: { 'k\u0000': 1 } }));
      assert.equal(key.statusCode, 400);
      assert.deepEqual(key.json(), { error: { code: 'INVALID_REQUEST', message: 'partner_meta: has a key containing the NUL character (U+0000)' } });
      assert.equal(await count('appointments'), before);
    });

    it('is refused in the clinics family body as field → messages', async () => {
      const response = await request(t, practice.client.token, 'POST', '/cdr/v1/clinic/', {
        name: 'Sun\u0000rise',
        address: '1 MG Road',
        partner_id: 'pc-nul',
      });
      assert.equal(response.statusCode, 400);
      assert.deepEqual(response.json(), { name: [NUL_MESSAGE] });
    });

    it('is refused in path parameters and query strings, with a schema or without', async () => {
      const api = casesApi(t.app, client.token, 'pt-nul');
      const path = await api.get('a\u0000b');
      assert.equal(path.statusCode, 400);
      assert.deepEqual(path.json(), { error: `id: ${NUL_MESSAGE}`, code: 'INVALID_REQUEST' });
      const query = await api.list({ offset: '\u0000' });
      assert.equal(query.statusCode, 400);
      assert.deepEqual(query.json(), { error: `offset: ${NUL_MESSAGE}`, code: 'INVALID_REQUEST' });
      const appointments = await request(t, practice.client.token, 'GET', '/dr/v1/appointment?clinic_id=%00');
      assert.equal(appointments.statusCode, 400);
      assert.deepEqual(appointments.json(), { error: { code: 'INVALID_REQUEST', message: `clinic_id: ${NUL_MESSAGE}` } });
      const byId = await request(t, practice.client.token, 'GET', '/dr/v1/appointment/apt%00?partner_id=1');
      assert.equal(byId.statusCode, 400);
      assert.deepEqual(byId.json(), { error: { code: 'INVALID_REQUEST', message: `appointment_id: ${NUL_MESSAGE}` } });

      const bare = await t.app.inject({ method: 'GET', url: '/probe/a%00?q=ok' });
      assert.equal(bare.statusCode, 400);
      assert.deepEqual(bare.json(), { error: { code: 'INVALID_REQUEST', message: `id: ${NUL_MESSAGE}` } });
      const bareQuery = await t.app.inject({ method: 'GET', url: '/probe/a?q=%00' });
      assert.equal(bareQuery.statusCode, 400);
      assert.deepEqual(bareQuery.json(), { error: { code: 'INVALID_REQUEST', message: `q: ${NUL_MESSAGE}` } });
      assert.deepEqual((await t.app.inject({ method: 'GET', url: '/probe/a?q=ok' })).json(), { params: { id: 'a' }, query: { q: 'ok' } });
    });

    it('is refused in the headers the routes read (X-Pt-Id, device-id)', async () => {
      const cases = await t.app.inject({ method: 'GET', url: '/mr/api/v1/cases', headers: { ...bearer(client.token), 'x-pt-id': 'pt\u00001' } });
      assert.equal(cases.statusCode, 400);
      assert.deepEqual(cases.json(), { error: `x-pt-id: ${NUL_MESSAGE}`, code: 'INVALID_REQUEST' });
      const device = await t.app.inject({
        method: 'DELETE',
        url: '/notification/delete-device',
        headers: { ...bearer(client.token), 'device-id': 'd\u0000' },
      });
      assert.equal(device.statusCode, 400);
      assert.deepEqual(device.json(), { message: `device-id: ${NUL_MESSAGE}`, error_code: 400 });
    });

    it('comes with the unpaired surrogate (not encodable as UTF-8) refused the same way', async () => {
      const login = await t.app.inject({
        method: 'POST',
        url: '/connect-auth/v1/account/login',
        headers: { 'content-type': 'application/json' },
        payload: '{"client_id":"\\ud800","client_secret":"x"}',
      });
      assert.equal(login.statusCode, 400);
      assert.deepEqual(login.json(), { code: 400, error: 'client_id: must be well-formed Unicode (no unpaired surrogate)' });
      const before = await count('cases');
      const created = await t.app.inject({
        method: 'POST',
        url: '/mr/api/v1/cases',
        headers: { ...bearer(client.token), 'x-pt-id': 'pt-sur', 'content-type': 'application/json' },
        payload: '{"id":"\\udc00x","display_name":"ok \\ud83d\\ude00","occurred_at":1700000000,"partner_meta":{"\\ud800":1}}',
      });
      assert.equal(created.statusCode, 400);
      assert.deepEqual(created.json(), {
        error:
          'id: must be well-formed Unicode (no unpaired surrogate); partner_meta: has a key that is not well-formed Unicode (an unpaired surrogate)',
        code: 'INVALID_REQUEST',
      });
      assert.equal(await count('cases'), before);
    });

    it('reports at most MAX_STRING_ERRORS of them, however many and however deep (thousands of NULs nested in one another: minutes, 400 MB, then 500)', async () => {
      const depth = 60_000;
      const body = withRaw(
        { first_name: 'A', gender: 'M', dob: '1990-01-01', partner_meta: '@raw@' },
        `{"x":${'["\\u0000",'.repeat(depth)}1${']'.repeat(depth)}}`,
      );
      const response = await t.app.inject({
        method: 'POST',
        url: '/dr/v1/patient',
        headers: { ...bearer(client.token), 'content-type': 'application/json' },
        payload: body,
      });
      assert.equal(response.statusCode, 400, response.body.slice(0, 300));
      assert.ok(response.body.length < 100_000, `${response.body.length} bytes`);
      assert.equal(response.json().error.message.split(NUL_MESSAGE).length - 1, MAX_STRING_ERRORS);
    });

    it('is refused in a review comment, with the form shown again', async () => {
      const appointmentId = await book(t, practice);
      const token = await reviewToken(t, appointmentId);
      const response = await postForm(t, token, { rating: '4', comment: 'good\u0000' });
      assert.equal(response.statusCode, 400);
      assert.match(response.body, /NUL character/);
      const stored = await t.ctx.storage.db.selectFrom('reviews').select('id').where('appointment_id', '=', appointmentId).execute();
      assert.deepEqual(stored, []);
    });
  });

  describe('free-form objects', () => {
    it(`stores the deepest allowed partner_meta (${DEPTH} levels) and reads it back in the record and every listing`, async () => {
      const patientRef = `pp-deep-${DIALECT}`;
      const body = withRaw(
        bookingBody(practice, {
          partner_meta: '@raw@',
          patient_details: { first_name: 'Deep', mobile: '+919812345678', partner_patient_id: patientRef },
        }),
        nestedJson(DEPTH),
      );
      const created = await appointmentPost(body);
      assert.equal(created.statusCode, 201, created.body);
      const id = created.json().appointment_id;
      const expected = JSON.parse(nestedJson(DEPTH));
      const read = await request(t, practice.client.token, 'GET', `/dr/v1/appointment/${id}`);
      assert.equal(read.statusCode, 200);
      assert.deepEqual(read.json().partner_meta, expected);
      const listed = await request(t, practice.client.token, 'GET', `/dr/v1/appointment?patient_id=${read.json().patient_id}`);
      assert.equal(listed.statusCode, 200);
      assert.deepEqual(
        listed.json().appointments.map((a: { partner_meta: unknown }) => a.partner_meta),
        [expected],
      );

      const api = casesApi(t.app, client.token, 'pt-deep');
      const deepCase = await t.app.inject({
        method: 'POST',
        url: '/mr/api/v1/cases',
        headers: { ...bearer(client.token), 'x-pt-id': 'pt-deep', 'content-type': 'application/json' },
        payload: withRaw({ id: 'deep', display_name: 'Deep', occurred_at: 1_700_000_000, partner_meta: '@raw@' }, nestedJson(DEPTH)),
      });
      assert.equal(deepCase.statusCode, 201, deepCase.body);
      assert.equal((await api.create({ id: 'flat', display_name: 'Flat', occurred_at: 1_700_000_000 })).statusCode, 201);
      await untilSecondIsOver();
      assert.deepEqual((await api.get('deep')).json().item.partner_meta, expected);
      const { cases } = await api.all();
      assert.deepEqual(cases.map((c) => [c.id, c.item?.partner_meta]).sort(), [
        ['deep', expected],
        ['flat', {}],
      ]);
    });

    it('refuses partner_meta one level deeper, and far deeper, with 400 and stores nothing', async () => {
      const before = await count('appointments');
      for (const depth of [DEPTH + 1, 100_000]) {
        const response = await appointmentPost(withRaw(bookingBody(practice, { partner_meta: '@raw@' }), nestedJson(depth)));
        assert.equal(response.statusCode, 400, `depth ${depth}`);
        assert.match(response.json().error.message, new RegExp(`^partner_meta: must be nested at most ${DEPTH} levels deep`));
      }
      assert.equal(await count('appointments'), before);

      const casesBefore = await count('cases');
      const deepCase = await t.app.inject({
        method: 'POST',
        url: '/mr/api/v1/cases',
        headers: { ...bearer(client.token), 'x-pt-id': 'pt-deep-refused', 'content-type': 'application/json' },
        payload: withRaw({ id: 'too-deep', display_name: 'Deep', occurred_at: 1_700_000_000, partner_meta: '@raw@' }, nestedJson(DEPTH + 1)),
      });
      assert.equal(deepCase.statusCode, 400);
      assert.deepEqual(deepCase.json(), { error: `partner_meta: must be nested at most ${DEPTH} levels deep`, code: 'INVALID_REQUEST' });
      assert.equal(await count('cases'), casesBefore);
    });

    it('refuses an update past the bounds and keeps the stored value', async () => {
      const id = await book(t, practice, { partner_meta: { kept: true } });
      const response = await t.app.inject({
        method: 'PATCH',
        url: `/dr/v1/appointment/${id}`,
        headers: { auth: practice.client.token, 'content-type': 'application/json' },
        payload: withRaw({ partner_meta: '@raw@' }, nestedJson(DEPTH + 1)),
      });
      assert.equal(response.statusCode, 400);
      assert.deepEqual((await request(t, practice.client.token, 'GET', `/dr/v1/appointment/${id}`)).json().partner_meta, { kept: true });
    });

    it('bounds the keys at the top level and in all, and the encoded size', async () => {
      const topLevel = Object.fromEntries(Array.from({ length: FREE_FORM_LIMITS.maxProperties + 1 }, (_, i) => [`k${i}`, i]));
      const tooManyTop = await request(t, practice.client.token, 'POST', '/dr/v1/appointment', bookingBody(practice, { partner_meta: topLevel }));
      assert.equal(tooManyTop.statusCode, 400);
      assert.equal(tooManyTop.json().error.message, `partner_meta: must NOT have more than ${FREE_FORM_LIMITS.maxProperties} properties`);

      const spread = Object.fromEntries(
        Array.from({ length: 11 }, (_, i) => [`g${i}`, Object.fromEntries(Array.from({ length: 100 }, (_, j) => [`k${j}`, 0]))]),
      );
      const tooManyKeys = await request(t, practice.client.token, 'POST', '/dr/v1/appointment', bookingBody(practice, { partner_meta: spread }));
      assert.equal(tooManyKeys.statusCode, 400);
      assert.equal(
        tooManyKeys.json().error.message,
        `partner_meta: must have at most ${FREE_FORM_LIMITS['x-max-keys']} keys in all, nested ones included`,
      );

      const bytes = FREE_FORM_LIMITS['x-max-bytes'];
      const filler = (n: number) => ({ text: 'é'.repeat(n) }); // 2 bytes each in UTF-8
      const overhead = Buffer.byteLength(JSON.stringify(filler(0)));
      const exact = await request(
        t,
        practice.client.token,
        'POST',
        '/dr/v1/appointment',
        bookingBody(practice, { partner_meta: filler((bytes - overhead) / 2) }),
      );
      assert.equal(exact.statusCode, 201, exact.body);
      const over = await request(
        t,
        practice.client.token,
        'POST',
        '/dr/v1/appointment',
        bookingBody(practice, { partner_meta: filler((bytes - overhead) / 2 + 1) }),
      );
      assert.equal(over.statusCode, 400);
      assert.equal(over.json().error.message, `partner_meta: must be at most ${bytes} bytes as JSON (UTF-8)`);
    });

    it('states the bounds in the OpenAPI document for every free-form request object', async () => {
      const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      const found: string[] = [];
      for (const [path, operations] of Object.entries<Record<string, any>>(doc.paths)) {
        for (const [method, operation] of Object.entries<any>(operations)) {
          const schema = operation.requestBody?.content?.['application/json']?.schema;
          const walk = (node: any, where: string) => {
            if (!node || typeof node !== 'object') return;
            const open = (value: unknown) => value === true || (typeof value === 'object' && value !== null && Object.keys(value).length === 0);
            const freeForm =
              node.type === 'object' &&
              (open(node.additionalProperties) || (node.patternProperties && Object.values(node.patternProperties).every(open)));
            if (freeForm) {
              found.push(where);
              for (const [keyword, value] of Object.entries(FREE_FORM_LIMITS)) assert.equal(node[keyword], value, `${where} ${keyword}`);
            }
            for (const [key, child] of Object.entries(node.properties ?? {})) walk(child, `${where}.${key}`);
          };
          walk(schema, `${method.toUpperCase()} ${path}`);
        }
      }
      assert.deepEqual(found.sort(), [
        'PATCH /dr/v1/appointment/{appointment_id}.display_meta',
        'PATCH /dr/v1/appointment/{appointment_id}.partner_meta',
        'PATCH /dr/v1/patient/{patient_id}.partner_meta',
        'PATCH /dr/v2/appointment/{appointment_id}.display_meta',
        'PATCH /dr/v2/appointment/{appointment_id}.partner_meta',
        'PATCH /mr/api/v1/cases/{id}.partner_meta',
        'PATCH /profiles/v1/patient/{oid}.extras',
        'POST /dr/v1/appointment.display_meta',
        'POST /dr/v1/appointment.partner_meta',
        'POST /dr/v1/patient.partner_meta',
        'POST /mr/api/v1/cases.partner_meta',
        'POST /profiles/v1/patient/.extras',
      ]);
    });
  });

  describe('ids of the longest length a schema accepts', () => {
    // Astral characters: 200 code points are 400 UTF-16 units and 2,400 characters percent-encoded.
    const longest = '😀'.repeat(MAX_ID_LENGTH);

    it('fit the router limit', () => {
      assert.ok(MAX_PARAM_LENGTH >= longest.length);
    });

    it('create, read, update and delete a case by path', async () => {
      const api = casesApi(t.app, client.token, 'p'.repeat(MAX_ID_LENGTH));
      assert.equal((await api.create({ id: longest, display_name: 'Long', occurred_at: 1_700_000_000 })).statusCode, 201);
      const read = await api.get(longest);
      assert.equal(read.statusCode, 200, read.body);
      assert.equal(read.json().id, longest);
      assert.equal((await api.update(longest, { display_name: 'Longer' })).statusCode, 204);
      assert.equal((await api.remove(longest)).statusCode, 204);
      assert.equal((await api.get(longest)).statusCode, 404);
      const tooLong = await api.get('x'.repeat(MAX_ID_LENGTH + 1));
      assert.equal(tooLong.statusCode, 400);
      assert.deepEqual(tooLong.json(), { error: `id: must NOT have more than ${MAX_ID_LENGTH} characters`, code: 'INVALID_REQUEST' });
    });

    it('book, read and cancel an appointment by its partner id', async () => {
      const created = await request(
        t,
        practice.client.token,
        'POST',
        '/dr/v1/appointment',
        bookingBody(practice, { partner_appointment_id: longest }),
      );
      assert.equal(created.statusCode, 201, created.body);
      const url = `/dr/v1/appointment/${encodeURIComponent(longest)}`;
      const read = await request(t, practice.client.token, 'GET', `${url}?partner_id=1`);
      assert.equal(read.statusCode, 200, read.body);
      assert.equal(read.json().partner_appointment_id, longest);
      const cancelled = await request(t, practice.client.token, 'PUT', `${url}/cancel?partner_id=1`);
      assert.equal(cancelled.statusCode, 200);
      assert.equal(cancelled.json().status, 'CN');
    });
  });

  describe('numbers outside what the columns store', () => {
    const hostile: Array<[string, unknown]> = [
      ['1e308', 1e308],
      ['-1', -1],
      ['2^63', 2 ** 63],
      ['1.5', 1.5],
      ['-2^63', -(2 ** 63)],
    ];

    it('have a stated minimum and maximum, within what a BIGINT column and a JS number hold exactly, in every request schema', async () => {
      const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      const numeric: string[] = [];
      const walk = (node: any, where: string) => {
        if (!node || typeof node !== 'object') return;
        if (Array.isArray(node)) {
          for (const [i, child] of node.entries()) walk(child, `${where}[${i}]`);
          return;
        }
        const types = [node.type].flat();
        if (types.includes('integer') || types.includes('number')) {
          numeric.push(where);
          assert.ok(
            Number.isSafeInteger(node.minimum) && Number.isSafeInteger(node.maximum),
            `${where} has minimum and maximum: ${JSON.stringify(node)}`,
          );
        }
        for (const [key, child] of Object.entries(node)) if (key !== 'examples' && key !== 'default') walk(child, `${where}.${key}`);
      };
      for (const [path, operations] of Object.entries<Record<string, any>>(doc.paths)) {
        for (const [method, operation] of Object.entries<any>(operations)) {
          for (const parameter of operation.parameters ?? []) walk(parameter.schema, `${method} ${path} ${parameter.in} ${parameter.name}`);
          walk(operation.requestBody?.content, `${method} ${path} body`);
        }
      }
      assert.ok(numeric.length >= 10, `numeric request fields found: ${numeric.join(', ')}`);
    });

    it('are refused in bodies: epoch seconds and queue tokens', async () => {
      const before = await count('appointments');
      for (const [label, value] of hostile) {
        const start = await request(
          t,
          practice.client.token,
          'POST',
          '/dr/v1/appointment',
          bookingBody(practice, { appointment_details: { start_time: value, end_time: 1_900_000_900 } }),
        );
        assert.equal(start.statusCode, 400, `start_time ${label}`);
        assert.match(start.json().error.message, /^appointment_details\.start_time: must be/);
        const token = await request(t, practice.client.token, 'POST', '/dr/v1/appointment', bookingBody(practice, { token: value }));
        assert.equal(token.statusCode, 400, `token ${label}`);
        const occurred = await casesApi(t.app, client.token, 'pt-num').create({ id: `n-${label}`, display_name: 'N', occurred_at: value });
        assert.equal(occurred.statusCode, 400, `occurred_at ${label}`);
        assert.match(occurred.json().error, /^occurred_at: must be an integer epoch in seconds/);
      }
      const infinite = await appointmentPost(withRaw(bookingBody(practice, { token: '@raw@' }), '1e400'));
      assert.equal(infinite.statusCode, 400);
      assert.equal(await count('appointments'), before);
    });

    it('are refused in query strings: page numbers, limits and sync points', async () => {
      for (const value of ['1e308', '-1', '9223372036854775808', '1.5', '1e400']) {
        const urls: Array<[string, Record<string, string>]> = [
          [`/dr/v1/appointment?page_no=${value}`, { auth: practice.client.token }],
          [`/cdr/v1/clinic?page_no=${value}`, { auth: practice.client.token }],
          [`/reviews/v1?page_no=${value}`, bearer(practice.client.token)],
          [`/mr/api/v1/cases?u_at__gt=${value}`, { ...bearer(client.token), 'x-pt-id': 'pt-num' }],
          [`/medical-db/v1/drugs-and-labs?q=para&limit=${value}`, bearer(client.token)],
          [`/notification/v1/connect/webhook/subscriptions/whs_x/deliveries?page_no=${value}`, bearer(client.token)],
        ];
        for (const [url, headers] of urls) {
          const response = await t.app.inject({ method: 'GET', url, headers });
          assert.equal(response.statusCode, 400, `${url}: ${response.body}`);
        }
      }
    });
  });
});
