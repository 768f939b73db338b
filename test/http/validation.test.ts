import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Type } from 'typebox';
import { MAX_UNKNOWN_KEY_ERRORS } from '../../src/http/validation.ts';
import { bearer, createTestApp, createTestClient, type TestApp } from '../support.ts';

describe('validation messages', () => {
  let t: TestApp;
  let token: string;
  before(async () => {
    t = await createTestApp({
      setup: (app) => {
        const schema = {
          body: Type.Object({
            name: Type.String({ minLength: 1 }),
            count: Type.Integer({ minimum: 0 }),
            kind: Type.Union([Type.Literal('a'), Type.Literal('b')]),
            meta: Type.Optional(Type.Record(Type.String(), Type.Union([Type.String({ maxLength: 50 }), Type.Number()]))),
            contact: Type.Optional(Type.String({ pattern: '^\\d{10,11}$', 'x-message': 'Ensure this value has 10 or 11 digits.' })),
            tags: Type.Optional(Type.Array(Type.Object({ label: Type.String() }), { maxItems: 3 })),
          }),
          querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })) }),
        };
        app.post('/probe/standard', { config: { family: 'standard', auth: { anyOf: [] } }, schema }, async (request) => ({
          limit: request.query.limit ?? null,
        }));
        app.post('/probe/clinics', { config: { family: 'clinics', auth: { anyOf: [] } }, schema }, async () => ({}));
        const strict = Type.Object(
          { a: Type.Optional(Type.String()), meta: Type.Optional(Type.Record(Type.String(), Type.String(), { maxProperties: 3 })) },
          { additionalProperties: false },
        );
        app.post('/probe/strict', { config: { family: 'standard', auth: { anyOf: [] } }, schema: { body: strict } }, async () => ({}));
      },
    });
    token = (await createTestClient(t.ctx)).token;
  });
  after(async () => t.close());

  const post = (url: string, payload: unknown) =>
    t.app.inject({ method: 'POST', url, headers: { ...bearer(token), 'content-type': 'application/json' }, payload: JSON.stringify(payload) });

  it('names every field once, with unions summarised', async () => {
    const response = await post('/probe/standard', { count: '5', kind: 'c', meta: { k: true } });
    assert.equal(response.statusCode, 400);
    assert.equal(
      response.json().error.message,
      'name: This field is required.; count: must be an integer; kind: must be one of "a", "b"; meta.k: must be a string or a number',
    );
  });

  it('renders the clinics family as field → messages, with x-message wording', async () => {
    const response = await post('/probe/clinics', { count: 1, kind: 'a', contact: '12345' });
    assert.equal(response.statusCode, 400);
    assert.deepEqual(response.json(), { name: ['This field is required.'], contact: ['Ensure this value has 10 or 11 digits.'] });
  });

  it('says so when the body is not an object, or missing', async () => {
    for (const payload of [null, [1], 'text']) {
      const response = await post('/probe/standard', payload);
      assert.equal(response.json().error.message, 'The request body must be an object.');
    }
    const none = await t.app.inject({ method: 'POST', url: '/probe/standard', headers: bearer(token) });
    assert.equal(none.statusCode, 400);
    assert.equal(none.json().error.message, 'The request body must be an object.');
  });

  it('refuses a list longer than its maxItems whole, without a problem per item (300,000 bad items: seconds and tens of MB)', async () => {
    const body = { name: 'x', count: 1, kind: 'a', tags: Array.from({ length: 300_000 }, () => 1) };
    for (const url of ['/probe/standard', '/probe/clinics']) {
      const response = await post(url, body);
      assert.equal(response.statusCode, 400);
      assert.ok(response.body.length < 200, response.body.slice(0, 300));
    }
    assert.equal((await post('/probe/standard', body)).json().error.message, 'tags: must NOT have more than 3 items');
    // Within its bounds, each item's problems are named.
    const within = await post('/probe/clinics', { ...body, tags: [1, { label: 2 }, {}] });
    assert.deepEqual(within.json(), {
      'tags.0': ['must be an object'],
      'tags.1.label': ['must be a string'],
      'tags.2.label': ['This field is required.'],
    });
  });

  it('names at most MAX_UNKNOWN_KEY_ERRORS unknown keys, and refuses an object past its maxProperties whole', async () => {
    const keys = (n: number, value: unknown) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, value]));
    const unknown = await post('/probe/strict', keys(60_000, 1));
    assert.equal(unknown.statusCode, 400);
    assert.equal(unknown.json().error.message.split('has an unknown key').length - 1, MAX_UNKNOWN_KEY_ERRORS);
    const wide = await post('/probe/strict', { meta: keys(60_000, 1) });
    assert.equal(wide.statusCode, 400);
    assert.equal(wide.json().error.message, 'meta: must NOT have more than 3 properties');
  });

  it('coerces integers in the query string but not in the body', async () => {
    const ok = await t.app.inject({
      method: 'POST',
      url: '/probe/standard?limit=5',
      headers: bearer(token),
      payload: { name: 'x', count: 0, kind: 'a' },
    });
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.json().limit, 5);
    const bad = await t.app.inject({
      method: 'POST',
      url: '/probe/standard?limit=five',
      headers: bearer(token),
      payload: { name: 'x', count: 0, kind: 'a' },
    });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.json().error.message, /^limit: must be an integer/);
  });
});
