/**
 * Every error family's 401, 403, 400, 413, 415, malformed-JSON and 500 bodies, through probe routes
 * declared like the modules' routes, plus the request id and cache headers every response carries.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Type } from 'typebox';
import { ERROR_FAMILIES, type ErrorFamily } from '../../src/http/errors.ts';
import { bearer, createTestApp, createTestClient, DIALECT, type TestApp } from '../support.ts';

const EXPECTED: Record<ErrorFamily, (status: number) => (body: any) => void> = {
  search: (status) => (body) => {
    assert.deepEqual(Object.keys(body).sort(), ['code', 'details', 'error']);
    assert.equal(body.code, status);
    assert.equal(typeof body.error, 'string');
  },
  auth: (status) => (body) => {
    assert.deepEqual(Object.keys(body).sort(), ['code', 'error']);
    assert.equal(body.code, status);
  },
  notifications: (status) => (body) => {
    assert.deepEqual(Object.keys(body).sort(), ['error_code', 'message']);
    assert.equal(body.error_code, status);
  },
  cases: (status) => (body) => {
    assert.deepEqual(Object.keys(body).sort(), ['code', 'error']);
    const codes: Record<number, string> = {
      400: 'INVALID_REQUEST',
      401: 'UNAUTHORIZED',
      403: 'FORBIDDEN',
      413: 'INVALID_REQUEST',
      415: 'INVALID_REQUEST',
      500: 'SERVER_ERROR',
    };
    assert.equal(body.code, codes[status]);
  },
  appointments: (status) => (body) => {
    assert.deepEqual(Object.keys(body), ['error']);
    const codes: Record<number, string> = {
      400: 'INVALID_REQUEST',
      401: 'UNAUTHORIZED',
      403: 'ACCESS_DENIED',
      413: 'INVALID_REQUEST',
      415: 'INVALID_REQUEST',
      500: 'SERVER_ERROR',
    };
    assert.equal(body.error.code, codes[status]);
    assert.equal(typeof body.error.message, 'string');
  },
  standard: (status) => (body) => {
    assert.deepEqual(Object.keys(body), ['error']);
    const codes: Record<number, string> = {
      400: 'INVALID_REQUEST',
      401: 'UNAUTHORIZED',
      403: 'ACCESS_DENIED',
      413: 'INVALID_REQUEST',
      415: 'INVALID_REQUEST',
      500: 'SERVER_ERROR',
    };
    assert.equal(body.error.code, codes[status]);
  },
  profiles: (status) => (body) => {
    assert.deepEqual(Object.keys(body), ['error']);
    const codes: Record<number, string> = {
      400: 'invalid_request',
      401: 'unauthorized',
      403: 'access_denied',
      413: 'invalid_request',
      415: 'invalid_request',
      500: 'server_error',
    };
    assert.equal(body.error.code, codes[status]);
    assert.equal(typeof body.error.message, 'string');
  },
  clinics: () => (body) => {
    for (const value of Object.values(body)) assert.ok(Array.isArray(value) && value.every((m) => typeof m === 'string'));
  },
};

describe(`error families (${DIALECT})`, () => {
  let t: TestApp;
  let token: string;
  let otherScopeToken: string;
  before(async () => {
    t = await createTestApp({
      setup: (app) => {
        for (const family of ERROR_FAMILIES) {
          app.post(
            `/probe/${family}`,
            {
              config: { family, auth: { anyOf: ['search'] } },
              schema: { body: Type.Object({ name: Type.String({ minLength: 1 }), count: Type.Integer({ minimum: 0 }) }) },
            },
            async (request) => ({ ok: true, body: request.body }),
          );
          app.post(`/probe/${family}/crash`, { config: { family, auth: { anyOf: ['search'] } } }, async () => {
            throw new Error('secret internal detail');
          });
          app.post(`/probe/${family}/nobody`, { config: { family, auth: { anyOf: ['search'] } } }, async () => ({ ok: true }));
        }
      },
    });
    token = (await createTestClient(t.ctx)).token;
    otherScopeToken = (await createTestClient(t.ctx, { scopes: ['cases:read'] })).token;
  });
  after(async () => t.close());

  for (const family of ERROR_FAMILIES) {
    describe(family, () => {
      const url = `/probe/${family}`;
      it('401 without a token and with a bad one', async () => {
        for (const headers of [{}, bearer('not-a-jwt'), { auth: 'not-a-jwt' }]) {
          const response = await t.app.inject({ method: 'POST', url, headers, payload: { name: 'x', count: 1 } });
          assert.equal(response.statusCode, 401);
          EXPECTED[family](401)(response.json());
        }
      });

      it('403 with a token lacking the scope, before validating input', async () => {
        const response = await t.app.inject({ method: 'POST', url, headers: bearer(otherScopeToken), payload: { bad: true } });
        assert.equal(response.statusCode, 403);
        EXPECTED[family](403)(response.json());
      });

      it('400 for invalid input, every field named, no coercion', async () => {
        const response = await t.app.inject({ method: 'POST', url, headers: bearer(token), payload: { count: '5' } });
        assert.equal(response.statusCode, 400);
        const body = response.json();
        EXPECTED[family](400)(body);
        const text = JSON.stringify(body);
        assert.match(text, /name/);
        assert.match(text, /count/);
        if (family === 'clinics') {
          assert.deepEqual(body.name, ['This field is required.']);
          assert.ok(Array.isArray(body.count));
        }
      });

      it('400 for malformed JSON', async () => {
        const response = await t.app.inject({
          method: 'POST',
          url,
          headers: { ...bearer(token), 'content-type': 'application/json' },
          payload: '{"name": ',
        });
        assert.equal(response.statusCode, 400);
        EXPECTED[family](400)(response.json());
      });

      it('413 over 1 MiB', async () => {
        const payload = JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10), count: 1 });
        const response = await t.app.inject({ method: 'POST', url, headers: { ...bearer(token), 'content-type': 'application/json' }, payload });
        assert.equal(response.statusCode, 413);
        EXPECTED[family](413)(response.json());
      });

      it('415 for another content type', async () => {
        const response = await t.app.inject({ method: 'POST', url, headers: { ...bearer(token), 'content-type': 'text/plain' }, payload: 'name=x' });
        assert.equal(response.statusCode, 415);
        EXPECTED[family](415)(response.json());
      });

      it('500 names only the request id', async () => {
        const response = await t.app.inject({ method: 'POST', url: `${url}/crash`, headers: bearer(token) });
        assert.equal(response.statusCode, 500);
        EXPECTED[family](500)(response.json());
        const text = response.body;
        assert.ok(!text.includes('secret internal detail'));
        assert.ok(!text.includes('at '), 'no stack trace');
        assert.ok(text.includes(String(response.headers['x-request-id'])));
      });

      it('accepts an empty body on an operation without one, with or without the JSON content type', async () => {
        for (const headers of [bearer(token), { ...bearer(token), 'content-type': 'application/json' }]) {
          const response = await t.app.inject({ method: 'POST', url: `${url}/nobody`, headers, payload: '' });
          assert.equal(response.statusCode, 200, response.body);
        }
      });
    });
  }

  it('every response carries x-request-id and API responses Cache-Control: no-store', async () => {
    const responses = await Promise.all([
      t.app.inject({ method: 'GET', url: '/health' }),
      t.app.inject({ method: 'GET', url: '/nowhere' }),
      t.app.inject({ method: 'POST', url: '/probe/search', headers: bearer(token), payload: { name: 'a', count: 1 } }),
    ]);
    for (const response of responses) {
      assert.match(String(response.headers['x-request-id']), /^req_/);
      assert.equal(response.headers['cache-control'], 'no-store');
    }
    assert.notEqual(responses[0]!.headers['x-request-id'], responses[1]!.headers['x-request-id']);
  });

  it('unknown routes answer 404 in the family of their path', async () => {
    const search = await t.app.inject({ method: 'GET', url: '/medical-db/v1/nothing' });
    assert.equal(search.statusCode, 404);
    assert.equal(search.json().code, 404);
    const appointments = await t.app.inject({ method: 'GET', url: '/dr/v1/nothing/here/at/all' });
    assert.equal(appointments.statusCode, 404);
    assert.ok(appointments.json().error.code);
    const profiles = await t.app.inject({ method: 'GET', url: '/profiles/v1/nothing/here/at/all' });
    assert.equal(profiles.statusCode, 404);
    assert.equal(profiles.json().error.code, 'not_found');
  });

  it('answers with and without a trailing slash', async () => {
    const a = await t.app.inject({ method: 'POST', url: '/probe/search/', headers: bearer(token), payload: { name: 'a', count: 1 } });
    assert.equal(a.statusCode, 200);
  });

  it('ignores unknown request fields', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/probe/standard',
      headers: bearer(token),
      payload: { name: 'a', count: 1, extra: { x: 1 } },
    });
    assert.equal(response.statusCode, 200);
  });
});
