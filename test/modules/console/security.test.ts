/**
 * The console's sessions against what they stand in for: an operator's session is the admin token's, so a
 * changed or removed CPS_ADMIN_TOKEN ends it as it refuses the old token (docs/4-operations.md: "refused at
 * once (no grace)"; contract 1: without CPS_ADMIN_TOKEN the admin API answers 401).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ADMIN_TOKEN, createTestApp, DIALECT, type TestApp } from '../../support.ts';
import { signInOperator, withSession } from './support.ts';

describe(`console: security (${DIALECT})`, () => {
  let t: TestApp;

  before(async () => {
    t = await createTestApp();
  });
  after(() => t?.close());

  test("an operator's session ends when the admin token it was opened with is replaced or removed", async () => {
    const session = await signInOperator(t, ADMIN_TOKEN);
    assert.equal((await withSession(t, session, 'GET', '/admin/v1/businesses')).statusCode, 200, 'the session works');
    // The same database served by processes restarted with another admin token, and with none.
    for (const env of [{ CPS_ADMIN_TOKEN: 'rotated-admin-Zq7vX2mK9pW4rT8sL3yB6nH1' }, { CPS_ADMIN_TOKEN: '' }]) {
      const restarted = await createTestApp({ database: t.database, env });
      try {
        const old = await restarted.app.inject({ method: 'GET', url: '/admin/v1/businesses', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
        assert.equal(old.statusCode, 401, 'the old token itself is refused');
        const bySession = await withSession(restarted, session, 'GET', '/admin/v1/businesses');
        assert.equal(bySession.statusCode, 401, `a session opened with the old admin token is refused too (${JSON.stringify(env)})`);
        const change = await withSession(restarted, session, 'POST', '/admin/v1/businesses', { name: 'Made with a stale session' });
        assert.equal(change.statusCode, 401);
        const who = await restarted.app.inject({ method: 'GET', url: '/console/session', headers: { cookie: session.cookie } });
        assert.equal(who.statusCode, 401);
      } finally {
        await restarted.close();
      }
    }
  });
});
