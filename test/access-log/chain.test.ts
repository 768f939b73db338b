/** The chain: verify holds, a changed or deleted row breaks it (in process and through `cps audit verify`), and the merge's entry commits with it. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { verifyChain, verifyChains } from '../../src/access-log/verify.ts';
import { runCli } from '../process.ts';
import { createTestApp, DIALECT, type TestApp } from '../support.ts';
import { call, chainCheck, masterKeyEnv, rows, seed } from './support.ts';

describe(`access log chain (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => (t = await createTestApp()));
  after(async () => t.close());

  const env = () => ({
    CPS_DATA_DIR: t.database.dataDir,
    ...masterKeyEnv(t),
    ...(t.database.databaseUrl ? { DATABASE_URL: t.database.databaseUrl } : {}),
  });

  it('links every entry of a business to the previous one, and verify holds', async () => {
    const s = await seed(t);
    await Promise.all(Array.from({ length: 20 }, () => call(t, s.client.token, 'GET', `/dr/v1/appointment/${s.appointmentId}`)));
    const chain = await rows(t, s.client.businessId);
    assert.deepEqual(
      chain.map((row) => row.seq),
      chain.map((_, i) => i + 1),
    );
    for (let i = 1; i < chain.length; i++) assert.equal(chain[i]!.prev_hash, chain[i - 1]!.hash);
    assert.deepEqual(await verifyChain(t.ctx.storage.db, chainCheck(t), s.client.businessId), {
      business_id: s.client.businessId,
      entries: chain.length,
      ok: true,
    });
    const cli = await runCli(['audit', 'verify', '--business', s.client.businessId], env());
    assert.equal(cli.code, 0, cli.stderr);
    assert.equal(JSON.parse(cli.stdout).ok, true);
  });

  it('a changed row, a deleted row and deleted newest rows each break the chain at that link', async () => {
    const db = t.ctx.storage.db;
    const s = await seed(t);
    for (let i = 0; i < 5; i++) await call(t, s.client.token, 'GET', `/dr/v1/appointment/${s.appointmentId}`);
    const chain = await rows(t, s.client.businessId);
    const third = chain[2]!;

    await db.updateTable('access_log').set({ client_id: 'someone-else' }).where('id', '=', third.id).execute();
    const changed = await verifyChain(db, chainCheck(t), s.client.businessId);
    assert.equal(changed.ok, false);
    assert.equal(changed.broken?.seq, 3);
    assert.equal(changed.broken?.entry_id, third.id);
    const cli = await runCli(['audit', 'verify', '--business', s.client.businessId], env());
    assert.equal(cli.code, 1);
    assert.equal(JSON.parse(cli.stdout).chains[0].broken.seq, 3);
    await db.updateTable('access_log').set({ client_id: third.client_id }).where('id', '=', third.id).execute();
    assert.equal((await verifyChain(db, chainCheck(t), s.client.businessId)).ok, true);

    await db.deleteFrom('access_log').where('id', '=', third.id).execute();
    const gap = await verifyChain(db, chainCheck(t), s.client.businessId);
    assert.equal(gap.ok, false);
    assert.equal(gap.broken?.seq, 3);
    await db.insertInto('access_log').values(third).execute();

    const last = chain.at(-1)!;
    await db.deleteFrom('access_log').where('id', '=', last.id).execute();
    const short = await verifyChain(db, chainCheck(t), s.client.businessId);
    assert.equal(short.ok, false);
    assert.match(short.broken!.reason, /deleted/);
    await db.insertInto('access_log').values(last).execute();

    // A row recomputed with a fresh hash (no key needed) still breaks the next link.
    await db.updateTable('access_log').set({ status: 404 }).where('id', '=', third.id).execute();
    const all = await verifyChains(db, chainCheck(t));
    assert.equal(all.find((c) => c.business_id === s.client.businessId)?.ok, false);
    await db.updateTable('access_log').set({ status: third.status }).where('id', '=', third.id).execute();
  });

  it('concurrent flushes keep one chain per business', async () => {
    const s = await seed(t);
    await Promise.all(Array.from({ length: 30 }, () => call(t, s.client.token, 'GET', `/dr/v1/appointment/${s.appointmentId}`)));
    await Promise.all([t.ctx.audit.flush(), t.ctx.audit.flush(), t.ctx.audit.flush()]);
    assert.equal((await verifyChain(t.ctx.storage.db, chainCheck(t), s.client.businessId)).ok, true);
  });

  it('a change entry is chained with its answer, among reads, and the chain verifies', async () => {
    const s = await seed(t);
    await t.ctx.audit.flush();
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        i % 3 === 0
          ? call(t, s.client.token, 'PATCH', `/dr/v1/appointment/${s.appointmentId}`, { notes: `note ${i}` })
          : call(t, s.client.token, 'GET', `/dr/v1/appointment/${s.appointmentId}`),
      ),
    );
    for (const answer of answers) assert.equal(answer.statusCode, 200, answer.body);
    await t.ctx.audit.flush();
    const changes = (await rows(t, s.client.businessId)).filter((row) => row.with_change === 1 && row.operation.startsWith('PATCH'));
    assert.equal(changes.length, 4);
    for (const row of changes) {
      assert.equal(row.status, 200, 'the answer applied');
      assert.equal(row.resource_id, s.appointmentId);
      assert.ok(row.seq !== null && row.hash !== null, 'chained');
    }
    assert.equal((await verifyChain(t.ctx.storage.db, chainCheck(t), s.client.businessId)).ok, true);
  });

  it("a patient merge leaves its entry in the merge's transaction: no entry, no merge", async () => {
    const db = t.ctx.storage.db;
    const s = await seed(t);
    const make = async () =>
      (await call(t, s.client.token, 'POST', '/dr/v1/patient', { first_name: 'Ravi', gender: 'M', age: 35 })).json().patient_id;
    const duplicate = await make();
    const merged = await call(t, s.client.token, 'POST', `/dr/v1/patient/${s.patientId}/merge`, { duplicate_patient_id: duplicate });
    assert.equal(merged.statusCode, 200, merged.body);
    const entry = (await rows(t, s.client.businessId)).find((row) => row.request_id === merged.headers['x-request-id']);
    assert.equal(entry?.with_change, 1);
    assert.equal(entry?.action, 'merge');
    assert.equal(entry?.resource_id, duplicate);
    assert.equal(entry?.patient_ref, s.patientId);

    // When the entry cannot be written, the merge does not happen either.
    const other = await make();
    await sql`alter table access_log rename to access_log_away`.execute(db);
    try {
      const refused = await call(t, s.client.token, 'POST', `/dr/v1/patient/${s.patientId}/merge`, { duplicate_patient_id: other });
      assert.ok(refused.statusCode >= 500, refused.body);
    } finally {
      await sql`alter table access_log_away rename to access_log`.execute(db);
    }
    const still = await db.selectFrom('patients').select(['merged_into']).where('id', '=', other).executeTakeFirstOrThrow();
    assert.equal(still.merged_into, null);
  });
});
