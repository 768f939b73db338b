import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../../src/logger.ts';
import { createTestApp, createTestClient, type TestApp } from '../../support.ts';
import { createPractice } from '../appointments/support.ts';
import { bookOne, listReviews, postForm } from './support.ts';

function hashOf(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

describe('review page: security', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test('everything shown is escaped: names, and a comment shown again with the form', async () => {
    const { token } = await bookOne(t, {
      clinic: { name: 'Tom & Jerry\'s "Clinic" <b>bold</b>' },
      doctor: { firstname: '<img src=x onerror=alert(1)>', lastname: '</title><script>alert(2)</script>' },
    });
    const page = (await t.app.inject({ url: `/reviews/${token}` })).body;
    assert.ok(page.includes('Tom &amp; Jerry&#39;s &quot;Clinic&quot; &lt;b&gt;bold&lt;/b&gt;'));
    assert.ok(page.includes('&lt;img src=x onerror=alert(1)&gt;'));
    assert.ok(page.includes('&lt;/title&gt;&lt;script&gt;alert(2)&lt;/script&gt;'));
    assert.doesNotMatch(page, /<img|<b>bold|alert\(2\)<\/script>/);

    const comment = '</textarea><script>alert(3)</script>';
    const again = await postForm(t, token, { rating: '9', comment });
    assert.equal(again.statusCode, 400);
    assert.ok(again.body.includes('&lt;/textarea&gt;&lt;script&gt;alert(3)&lt;/script&gt;</textarea>'));
    assert.equal(again.body.match(/<script>/g)?.length, 1, "only the page's own script");

    // Stored and listed as written: escaping is the page's business, not the data's.
    const thanks = await postForm(t, token, { rating: '3', comment });
    assert.equal(thanks.statusCode, 201);
    assert.doesNotMatch(thanks.body, /alert\(3\)/);
    assert.ok(thanks.body.includes('&lt;img src=x onerror=alert(1)&gt;'));
  });

  test('every outcome carries a strict CSP, nosniff, no-referrer and no-store; nothing loads from elsewhere', async () => {
    const { token } = await bookOne(t);
    const { token: other } = await bookOne(t);
    await postForm(t, other, { rating: '5' });
    const outcomes = [
      await t.app.inject({ url: `/reviews/${token}` }),
      await postForm(t, token, { rating: 'x' }),
      await t.app.inject({ url: '/reviews/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }),
      await t.app.inject({ url: `/reviews/${other}` }),
      await postForm(t, other, { rating: '5' }),
      await t.app.inject({ method: 'POST', url: `/reviews/${token}`, headers: { 'content-type': 'text/plain' }, payload: 'rating=5' }),
      await postForm(t, token, { rating: '5' }),
    ];
    assert.deepEqual(
      outcomes.map((r) => r.statusCode),
      [200, 400, 404, 200, 409, 415, 201],
    );
    for (const response of outcomes) {
      const csp = String(response.headers['content-security-policy']);
      const directives = new Map(
        csp
          .split(';')
          .map((d) => d.trim().split(/\s+/))
          .map(([name, ...values]) => [name!, values]),
      );
      assert.deepEqual(directives.get('default-src'), ["'none'"]);
      assert.deepEqual(directives.get('form-action'), ["'self'"]);
      assert.deepEqual(directives.get('frame-ancestors'), ["'none'"]);
      assert.deepEqual(directives.get('base-uri'), ["'none'"]);
      assert.doesNotMatch(csp, /unsafe|\*|https?:|data:/);
      // The inline style and script run because their hashes are allowed, and only they do.
      const style = /<style>([\s\S]*?)<\/style>/.exec(response.body)![1]!;
      assert.deepEqual(directives.get('style-src'), [hashOf(style)]);
      const script = /<script>([\s\S]*?)<\/script>/.exec(response.body)?.[1];
      if (script !== undefined) assert.deepEqual(directives.get('script-src'), [hashOf(script)]);
      assert.equal(response.headers['x-content-type-options'], 'nosniff');
      assert.equal(response.headers['referrer-policy'], 'no-referrer');
      assert.equal(response.headers['cache-control'], 'no-store');
      assert.equal(response.headers['x-frame-options'], 'DENY');
      assert.doesNotMatch(response.body, /<link|<img|<iframe|\ssrc=|https?:\/\//);
      // The address is the capability: the page never repeats it.
      assert.ok(!response.body.includes(token) && !response.body.includes(other));
    }
  });

  test('another business sees none of the reviews: its list, even filtered by their ids, is empty', async () => {
    const { practice, token } = await bookOne(t);
    assert.equal((await postForm(t, token, { rating: '4', comment: 'private' })).statusCode, 201);
    const stranger = await createTestClient(t.ctx, { scopes: ['appointment:write', 'clinic:write'] });
    await bookOne(t, { practice: await createPractice(t, { client: stranger }) });
    for (const query of [
      '',
      `?clinic_id=${practice.clinicId}`,
      `?doctor_id=${practice.doctorId}`,
      `?clinic_id=${practice.clinicId}&doctor_id=${practice.doctorId}`,
    ]) {
      const response = await listReviews(t, stranger.token, query);
      assert.equal(response.statusCode, 200);
      // Exactly as for ids that do not exist.
      assert.deepEqual(response.json(), { reviews: [] }, query);
      assert.deepEqual(response.json(), (await listReviews(t, stranger.token, query.replace(/=[^&]+/g, '=unknown'))).json());
    }
    assert.equal((await listReviews(t, practice.client.token)).json().reviews.length, 1);
  });

  test('review tokens are long random strings', async () => {
    const { token } = await bookOne(t);
    assert.match(token, /^[A-Za-z0-9_-]{32,}$/);
  });
});

describe('review page: the token stays out of the logs', () => {
  test('request logs show the route pattern, never the link', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const t = await createTestApp({ logger: createLogger('info', sink) });
    const { app } = t;
    try {
      const { token } = await bookOne(t);
      await app.inject({ url: `/reviews/${token}` });
      await app.inject({ url: `/reviews/${token}/?utm=1` });
      await postForm(t, token, { rating: 'bad' });
      await postForm(t, token, { rating: '5', comment: 'fine' });
      await postForm(t, token, { rating: '5' });
      await app.inject({ method: 'POST', url: `/reviews/${token}`, headers: { 'content-type': 'text/plain' }, payload: 'x' });
      const log = lines.join('');
      assert.ok(!log.includes(token), 'the token is not in the log');
      const requests = lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request completed' && entry.url === '/reviews/:token');
      assert.equal(requests.length, 6, 'the requests are still logged');
      assert.ok(requests.every((entry) => entry.method === 'GET' || entry.method === 'POST'));
    } finally {
      await t.close();
    }
  });
});
