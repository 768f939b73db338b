/** The search rate limit as clients see it: headers on every answer, its place among the checks. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECT } from '../../support.ts';
import { createSearchApp, type SearchApp } from './support.ts';

describe(`search rate limit headers (${DIALECT})`, () => {
  let t: SearchApp;
  before(async () => {
    t = await createSearchApp({ env: { CPS_SEARCH_RATE_LIMIT: '2', CPS_SEARCH_RATE_BURST: '3' } });
  });
  after(() => t.close());

  it('x-ratelimit-limit, -remaining and -reset on each answer; 429 with Retry-After once the burst is spent', async () => {
    const unauthenticated = await t.app.inject({ url: '/medical-db/v1/drugs-and-labs?q=dolo' });
    assert.equal(unauthenticated.statusCode, 401);
    assert.equal(unauthenticated.headers['x-ratelimit-limit'], undefined, 'authentication comes first and takes no token');

    const answers = [
      await t.search({ q: 'dolo' }),
      await t.search({ q: 'qqqzzz' }),
      await t.search({ q: 'dolo' }),
      await t.search({ q: 'dolo', limit: 0 }),
    ];
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 404, 200, 429],
      'the limit comes before input checks',
    );
    assert.deepEqual(
      answers.map((a) => a.headers['x-ratelimit-limit']),
      ['3', '3', '3', '3'],
    );
    assert.deepEqual(
      answers.map((a) => a.headers['x-ratelimit-remaining']),
      ['2', '1', '0', '0'],
    );
    for (const answer of answers) assert.ok(Number(answer.headers['x-ratelimit-reset']) >= 1);
    assert.equal(answers[0]!.headers['retry-after'], undefined);
    const refused = answers[3]!;
    assert.equal(refused.headers['retry-after'], '1', 'one token every 500 ms');
    assert.deepEqual(refused.body, { error: 'Too many requests: the search rate limit is 2 per second; retry in 1 s', code: 429, details: null });
    assert.equal(refused.headers['cache-control'], 'no-store');
  });
});
