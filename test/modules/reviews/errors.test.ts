import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { bearer, createTestApp, createTestClient, type TestApp } from '../../support.ts';
import { bookOne, listReviews, postForm, textOf } from './support.ts';

describe('review page: errors', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  const UNKNOWN = 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';

  test('an unknown link answers a 404 page, for GET and POST, whatever its shape', async () => {
    for (const token of [UNKNOWN, 'short', 'not%20a%20token', '..%2F..%2Fetc']) {
      for (const response of [await t.app.inject({ url: `/reviews/${token}` }), await postForm(t, token, { rating: '5' })]) {
        assert.equal(response.statusCode, 404, token);
        assert.equal(response.headers['content-type'], 'text/html; charset=utf-8');
        assert.match(textOf(response.body), /This review link is not valid/);
        assert.doesNotMatch(response.body, /<form/);
      }
    }
  });

  test('a bad or missing rating answers 400 with the form again, keeping the comment', async () => {
    const { practice, token } = await bookOne(t);
    const cases: Array<[Record<string, string | string[]>, RegExp]> = [
      [{ comment: 'no rating' }, /Choose a rating from 1 to 5/],
      [{ rating: '', comment: 'empty' }, /Choose a rating from 1 to 5/],
      [{ rating: '0', comment: 'zero' }, /whole number from 1 to 5/],
      [{ rating: '6', comment: 'six' }, /whole number from 1 to 5/],
      [{ rating: '4.5', comment: 'half' }, /whole number from 1 to 5/],
      [{ rating: 'five', comment: 'word' }, /whole number from 1 to 5/],
      [{ rating: ['4', '5'], comment: 'twice' }, /whole number from 1 to 5/],
    ];
    for (const [fields, message] of cases) {
      const response = await postForm(t, token, fields);
      assert.equal(response.statusCode, 400, JSON.stringify(fields));
      assert.equal(response.headers['content-type'], 'text/html; charset=utf-8');
      assert.match(textOf(response.body), message);
      assert.match(response.body, /<form method="post"/);
      assert.match(response.body, new RegExp(`<textarea[^>]*>${fields.comment}</textarea>`));
      assert.doesNotMatch(response.body, / checked>/, 'no rating is preselected');
    }
    // An empty body is a missing rating too.
    const empty = await t.app.inject({
      method: 'POST',
      url: `/reviews/${token}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: '',
    });
    assert.equal(empty.statusCode, 400);
    assert.match(textOf(empty.body), /Choose a rating/);
    assert.deepEqual((await listReviews(t, practice.client.token)).json(), { reviews: [] });
  });

  test('a comment over 1000 characters answers 400 with the form, the rating still chosen', async () => {
    const { practice, token } = await bookOne(t);
    const response = await postForm(t, token, { rating: '2', comment: 'x'.repeat(1001) });
    assert.equal(response.statusCode, 400);
    assert.match(textOf(response.body), /1001 characters; please shorten it to 1000 or fewer/);
    assert.match(response.body, /value="2" checked>/);
    assert.deepEqual((await listReviews(t, practice.client.token)).json(), { reviews: [] });
  });

  test('a second submission answers 409 with a page saying it was already received, and keeps the first', async () => {
    const { practice, token } = await bookOne(t);
    assert.equal((await postForm(t, token, { rating: '5', comment: 'first' })).statusCode, 201);
    for (const fields of [{ rating: '1', comment: 'second' }, { rating: 'bad' }] as Array<Record<string, string>>) {
      const again = await postForm(t, token, fields);
      assert.equal(again.statusCode, 409);
      assert.equal(again.headers['content-type'], 'text/html; charset=utf-8');
      assert.match(textOf(again.body), /Your review was already received/);
    }
    const { reviews } = (await listReviews(t, practice.client.token)).json();
    assert.equal(reviews.length, 1);
    assert.equal(reviews[0].comment, 'first');
  });

  test('submissions racing for one appointment store one review: one 201, the rest 409', async () => {
    const { practice, token } = await bookOne(t);
    const responses = await Promise.all([1, 2, 3, 4, 5].map((rating) => postForm(t, token, { rating: String(rating) })));
    assert.deepEqual(responses.map((r) => r.statusCode).sort(), [201, 409, 409, 409, 409]);
    assert.equal((await listReviews(t, practice.client.token)).json().reviews.length, 1);
  });

  test('a body the form cannot have still answers an HTML page (415), and the API keeps refusing forms', async () => {
    const { practice, token } = await bookOne(t);
    const multipart = await t.app.inject({
      method: 'POST',
      url: `/reviews/${token}`,
      headers: { 'content-type': 'multipart/form-data; boundary=x' },
      payload: '--x\r\nContent-Disposition: form-data; name="rating"\r\n\r\n5\r\n--x--\r\n',
    });
    assert.equal(multipart.statusCode, 415);
    assert.equal(multipart.headers['content-type'], 'text/html; charset=utf-8');
    assert.match(textOf(multipart.body), /The form could not be read/);
    // The form parser is registered for the review pages only.
    const booking = await t.app.inject({
      method: 'POST',
      url: '/dr/v1/appointment',
      headers: { auth: practice.client.token, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'clinic_id=x',
    });
    assert.equal(booking.statusCode, 415);
    assert.equal(booking.json().error.code, 'INVALID_REQUEST');
  });

  test('GET /reviews/v1: 401 without a token, 403 without appointment:write, 400 for a bad page_no', async () => {
    const missing = await t.app.inject({ url: '/reviews/v1' });
    assert.equal(missing.statusCode, 401);
    assert.equal(missing.json().error.code, 'UNAUTHORIZED');
    const invalid = await t.app.inject({ url: '/reviews/v1', headers: bearer('not-a-jwt') });
    assert.equal(invalid.statusCode, 401);
    for (const scopes of [['search'], ['appointment:complete'], ['clinic:write']]) {
      const client = await createTestClient(t.ctx, { scopes });
      const forbidden = await listReviews(t, client.token);
      assert.equal(forbidden.statusCode, 403, scopes[0]);
      assert.equal(forbidden.json().error.code, 'ACCESS_DENIED');
    }
    const writer = await createTestClient(t.ctx, { scopes: ['appointment:write'] });
    for (const query of ['?page_no=-1', '?page_no=abc', '?page_no=1.5']) {
      const bad = await listReviews(t, writer.token, query);
      assert.equal(bad.statusCode, 400, query);
      assert.equal(bad.json().error.code, 'INVALID_REQUEST');
      assert.match(bad.json().error.message, /page_no/);
    }
    // Scope is checked before input.
    const client = await createTestClient(t.ctx, { scopes: ['search'] });
    assert.equal((await listReviews(t, client.token, '?page_no=-1')).statusCode, 403);
  });
});
