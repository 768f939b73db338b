/**
 * The access log under what callers can send: entries of refused requests built from strings a
 * database cannot store as sent (a lone surrogate, NUL) are stored as hashed and keep the log going,
 * even across a restart; a refused admin request names no business; and a verification running while
 * entries are chained reports the chain as it was when it began.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { verifyChain } from '../../src/access-log/verify.ts';
import { createTestApp, createTestDatabase, DIALECT, type TestApp } from '../support.ts';
import { call, chainCheck, entryOf, seed } from './support.ts';

describe(`access log: what callers send (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => (t = await createTestApp()));
  after(async () => t.close());

  it('a lone surrogate in a refused request is stored as U+FFFD, as hashed: the chain verifies', async () => {
    const s = await seed(t);
    const body = JSON.parse('{"clinic_id":"x","patient_details":{"partner_patient_id":"a\\ud800b"}}');
    const refused = await call(t, s.client.token, 'POST', '/dr/v1/appointment', body);
    assert.equal(refused.statusCode, 400);
    const entry = await entryOf(t, refused.headers['x-request-id'] as string);
    assert.equal(entry?.patient_ref, 'a\uFFFDb');
    assert.equal((await verifyChain(t.ctx.storage.db, chainCheck(t), s.client.businessId)).ok, true);
  });

  it('a NUL in a refused request neither stops the log nor the next start', async () => {
    const database = await createTestDatabase();
    const own = await createTestApp({ database });
    try {
      const s = await seed(own);
      assert.equal((await call(own, s.client.token, 'GET', '/dr/v1/appointment?patient_id=%00')).statusCode, 400);
      const read = await call(own, s.client.token, 'GET', `/dr/v1/appointment/${s.appointmentId}`);
      assert.equal(read.statusCode, 200);
      const entry = await entryOf(own, read.headers['x-request-id'] as string);
      assert.ok(entry && entry.seq !== null, 'the next entry is stored and chained');
      assert.equal((await verifyChain(own.ctx.storage.db, chainCheck(own), s.client.businessId)).ok, true);
    } finally {
      await own.close();
    }
    // A process on the same database and data directory starts (it replays what the first left).
    const again = await createTestApp({ database });
    await again.close();
    await database.drop();
  });

  it('an admin request refused for its token writes no entry, in no business', async () => {
    const s = await seed(t);
    const missing = await t.app.inject({ method: 'GET', url: `/admin/v1/audit/events?business_id=${s.client.businessId}` });
    const wrong = await t.app.inject({
      method: 'GET',
      url: '/admin/v1/audit/events?business_id=biz_made_up',
      headers: { authorization: 'Bearer wrong' },
    });
    assert.deepEqual([missing.statusCode, wrong.statusCode], [401, 401]);
    assert.equal(await entryOf(t, missing.headers['x-request-id'] as string), undefined);
    assert.equal(await entryOf(t, wrong.headers['x-request-id'] as string), undefined);
    const head = await t.ctx.storage.db.selectFrom('access_log_heads').select('seq').where('business_id', '=', 'biz_made_up').executeTakeFirst();
    assert.equal(head, undefined, 'no chain for a business named by a caller without the token');
  });

  it('a verification while entries are chained reports the chain up to the head it read', async () => {
    const s = await seed(t);
    await t.ctx.audit.flush();
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 3; i++) await call(t, s.client.token, 'GET', `/dr/v1/appointment/${s.appointmentId}`);
      const [report] = await Promise.all([verifyChain(t.ctx.storage.db, chainCheck(t), s.client.businessId), t.ctx.audit.flush()]);
      assert.equal(report.ok, true, JSON.stringify(report));
    }
  });
});
