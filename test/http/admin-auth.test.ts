/** The admin token: wrong tokens spend a budget per source address, checked before the token (429). */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ADMIN_TOKEN, createTestApp, DIALECT, type TestApp } from '../support.ts';

describe(`admin token throttling (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { CPS_ADMIN_FAILURES: '3', CPS_LOGIN_FAILURE_WINDOW_SECONDS: '60' } });
  });
  after(() => t.close());

  const list = (token: string, remoteAddress: string) =>
    t.app.inject({ method: 'GET', url: '/admin/v1/audit/events', headers: { authorization: `Bearer ${token}` }, remoteAddress });

  it('answers 429 with Retry-After once an address sent its budget of wrong tokens, before comparing the token', async () => {
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await list(`wrong-token-${i}`, '10.3.0.1')).statusCode);
    assert.deepEqual(statuses, [401, 401, 401]);
    const refused = await list('wrong-token-x', '10.3.0.1');
    assert.equal(refused.statusCode, 429);
    assert.deepEqual(refused.json().error, { code: 'RATE_LIMITED', message: 'Too many wrong admin tokens from this address; retry in 20 s' });
    assert.equal(refused.headers['retry-after'], '20');
    assert.equal((await list(ADMIN_TOKEN, '10.3.0.1')).statusCode, 429, 'the right token too: guesses get no answer');
    assert.equal((await list(ADMIN_TOKEN, '10.3.0.2')).statusCode, 200, 'other addresses are not affected');
  });

  it('spends nothing on the right token', async () => {
    for (let i = 0; i < 10; i++) assert.equal((await list(ADMIN_TOKEN, '10.3.1.1')).statusCode, 200);
    assert.equal((await list('wrong-token', '10.3.1.1')).statusCode, 401);
  });

  it('bounds a fast flood of guesses from one address', async () => {
    const statuses = await Promise.all(Array.from({ length: 200 }, (_, i) => list(`guess-${i}`, '10.3.2.1').then((r) => r.statusCode)));
    assert.equal(statuses.filter((status) => status === 401).length, 3);
    assert.equal(statuses.filter((status) => status === 429).length, 197);
  });
});
