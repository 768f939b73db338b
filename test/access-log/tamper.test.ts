/**
 * Tampering that keeps every link intact: deleting the oldest entries behind a matching anchor,
 * deleting the newest behind a head moved back, deleting a whole chain with its head. Each is found
 * by verify, since the head and the anchor carry seals only the master key makes; the seals move to a
 * new master key with `cps keys rotate`.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ChainSeal } from '../../src/access-log/seal.ts';
import { appendChained, resealChains, sealWhatMigrationsLeft } from '../../src/access-log/store.ts';
import { verifyChain, verifyChains } from '../../src/access-log/verify.ts';
import { runCli } from '../process.ts';
import { createTestApp, createTestClient, DIALECT, type TestApp } from '../support.ts';
import { chainCheck, entry, masterKeyEnv } from './support.ts';

describe(`access log tampering (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => (t = await createTestApp()));
  after(async () => t.close());

  const db = () => t.ctx.storage.db;
  const seal = () => new ChainSeal(t.ctx.keys.masterKey);
  /** A business whose chain holds `count` entries of the last minutes. */
  async function chain(count: number): Promise<string> {
    const { businessId } = await createTestClient(t.ctx);
    const now = Date.now();
    await appendChained(
      db(),
      seal(),
      businessId,
      Array.from({ length: count }, (_, i) => entry(businessId, now - 60_000 + i)),
    );
    assert.equal((await verifyChain(db(), chainCheck(t), businessId)).ok, true);
    return businessId;
  }

  const row = (businessId: string, seq: number) =>
    db().selectFrom('access_log').selectAll().where('business_id', '=', businessId).where('seq', '=', seq).executeTakeFirstOrThrow();

  it('deleting the oldest entries behind a matching anchor is found: the anchor is not sealed', async () => {
    const business = await chain(6);
    const third = await row(business, 3);
    await db().deleteFrom('access_log').where('business_id', '=', business).where('seq', '<=', 3).execute();
    await db()
      .insertInto('access_log_pruned')
      .values({ business_id: business, seq: 3, hash: third.hash!, pruned_at: Date.now(), through_at: 0, mac: null })
      .execute();
    const report = await verifyChain(db(), chainCheck(t), business);
    assert.equal(report.ok, false);
    assert.match(report.broken!.reason, /seal/);
    const cli = await runCli(['audit', 'verify', '--business', business], env());
    assert.equal(cli.code, 1, cli.stderr);
    assert.match(JSON.parse(cli.stdout).chains[0].broken.reason, /seal/);
  });

  it('an anchor through entries younger than the retention period is refused, sealed or not', async () => {
    const business = await chain(4);
    const second = await row(business, 2);
    await db().deleteFrom('access_log').where('business_id', '=', business).where('seq', '<=', 2).execute();
    const anchor = { business_id: business, seq: 2, hash: second.hash!, through_at: Number(second.at) };
    await db()
      .insertInto('access_log_pruned')
      .values({ ...anchor, pruned_at: Date.now(), mac: seal().anchor(anchor) })
      .execute();
    const report = await verifyChain(db(), chainCheck(t), business);
    assert.equal(report.ok, false);
    assert.match(report.broken!.reason, /not yet due/);
  });

  it('deleting the newest entries and moving the head back is found, and stays found once the chain grows', async () => {
    const business = await chain(6);
    const fourth = await row(business, 4);
    await db().deleteFrom('access_log').where('business_id', '=', business).where('seq', '>', 4).execute();
    await db().updateTable('access_log_heads').set({ seq: 4, hash: fourth.hash! }).where('business_id', '=', business).execute();
    const report = await verifyChain(db(), chainCheck(t), business);
    assert.equal(report.ok, false);
    assert.match(report.broken!.reason, /seal/);

    // The writer extends the chain from the moved head but does not seal over it.
    await appendChained(db(), seal(), business, [entry(business, Date.now())]);
    const grown = await verifyChain(db(), chainCheck(t), business);
    assert.equal(grown.ok, false);
    assert.match(grown.broken!.reason, /seal/);
  });

  it('a business whose chain and head were deleted fails verify; one that recorded nothing yet holds', async () => {
    const business = await chain(3);
    const { businessId: silent } = await createTestClient(t.ctx);
    await db().deleteFrom('access_log').where('business_id', '=', business).execute();
    await db().deleteFrom('access_log_heads').where('business_id', '=', business).execute();
    const reports = await verifyChains(db(), chainCheck(t));
    const deleted = reports.find((r) => r.business_id === business);
    assert.equal(deleted?.ok, false);
    assert.match(deleted!.broken!.reason, /no head record/);
    assert.deepEqual(
      reports.find((r) => r.business_id === silent),
      { business_id: silent, entries: 0, ok: true },
    );
  });

  it('a head whose seal was emptied stays a forgery: only the process applying the sealing migrations seals empty seals', async () => {
    const business = await chain(4);
    const second = await row(business, 2);
    await db().deleteFrom('access_log').where('business_id', '=', business).where('seq', '>', 2).execute();
    await db().updateTable('access_log_heads').set({ seq: 2, hash: second.hash!, mac: null }).where('business_id', '=', business).execute();
    assert.equal(await sealWhatMigrationsLeft(db(), [], async () => t.ctx.keys.masterKey), 0);
    const cli = await runCli(['migrate'], env());
    assert.equal(cli.code, 0, cli.stderr);
    assert.deepEqual(JSON.parse(cli.stdout).applied, []);
    const report = await verifyChain(db(), chainCheck(t), business);
    assert.equal(report.ok, false);
    assert.match(report.broken!.reason, /seal/);
  });

  it('the process applying migrations 0030 and 0032 seals the rows from before, and opens a chain for each business from before', async () => {
    const legacy = await chain(2);
    const { businessId: quiet } = await createTestClient(t.ctx);
    await db().updateTable('access_log_heads').set({ mac: null }).where('business_id', '=', legacy).execute();
    await db().deleteFrom('access_log_heads').where('business_id', '=', quiet).execute();
    const { up } = await import('../../src/db/migrations/0032_access_log_heads_for_every_business.ts');
    await up(db());
    assert.ok((await sealWhatMigrationsLeft(db(), ['0032_access_log_heads_for_every_business'], async () => t.ctx.keys.masterKey)) >= 2);
    assert.equal((await verifyChain(db(), chainCheck(t), legacy)).ok, true);
    assert.deepEqual(await verifyChain(db(), chainCheck(t), quiet), { business_id: quiet, entries: 0, ok: true });
  });

  it('`cps keys rotate` seals the heads and anchors again under the new key; a forged one stays unmatched', async () => {
    const sound = await chain(2);
    const moved = await chain(3);
    const second = await row(moved, 2);
    await db().deleteFrom('access_log').where('business_id', '=', moved).where('seq', '=', 3).execute();
    await db().updateTable('access_log_heads').set({ seq: 2, hash: second.hash! }).where('business_id', '=', moved).execute();
    const next = randomBytes(32);
    await db()
      .transaction()
      .execute((trx) => resealChains(trx, seal(), new ChainSeal(next)));
    const check = { seal: new ChainSeal(next), accessLogDays: t.ctx.config.retention.accessLogDays };
    assert.equal((await verifyChain(db(), check, sound)).ok, true);
    assert.match((await verifyChain(db(), check, moved)).broken!.reason, /seal/);
    assert.equal((await verifyChain(db(), chainCheck(t), sound)).ok, false);
    await db()
      .transaction()
      .execute((trx) => resealChains(trx, new ChainSeal(next), seal()));
    assert.equal((await verifyChain(db(), chainCheck(t), sound)).ok, true);
  });

  const env = () => ({
    CPS_DATA_DIR: t.database.dataDir,
    ...masterKeyEnv(t),
    ...(t.database.databaseUrl ? { DATABASE_URL: t.database.databaseUrl } : {}),
  });
});
