/**
 * Retention of the access log: entries older than the period go, a prefix of each chain at a time, and
 * the chain still verifies from the last pruned entry (in process and through `cps audit verify`); a
 * row deleted after pruning still breaks it, and pruning stops at a broken link rather than erase it.
 */
import assert from 'node:assert/strict';
import { chainCheck, entry, masterKeyEnv } from './support.ts';
import { after, before, describe, it } from 'node:test';
import { ChainSeal } from '../../src/access-log/seal.ts';
import { appendChained } from '../../src/access-log/store.ts';
import { verifyChain } from '../../src/access-log/verify.ts';
import { runCli } from '../process.ts';
import { createTestApp, createTestClient, DIALECT, type TestApp } from '../support.ts';

const DAY = 86_400_000;
const BATCH = 10;
/** Entries this far either side of the cutoff: those of earlier tests stay young in the later tests' runs. */
const MARGIN = 10 * 60_000;

describe(`access log retention (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => (t = await createTestApp({ env: { CPS_RETENTION_BATCH: String(BATCH) } })));
  after(async () => t.close());

  const db = () => t.ctx.storage.db;
  const env = () => ({
    CPS_DATA_DIR: t.database.dataDir,
    CPS_RETENTION_BATCH: String(BATCH),
    LOG_LEVEL: 'silent',
    ...masterKeyEnv(t),
    ...(t.database.databaseUrl ? { DATABASE_URL: t.database.databaseUrl } : {}),
  });

  /** A business whose chain holds `old` entries just older than the period, then `young` just younger. */
  async function chain(old: number, young: number, now: number): Promise<string> {
    const { businessId } = await createTestClient(t.ctx);
    const cutoff = now - t.ctx.config.retention.accessLogDays * DAY;
    const entries = [
      ...Array.from({ length: old }, (_, i) => entry(businessId, cutoff - MARGIN - (old - i))),
      ...Array.from({ length: young }, (_, i) => entry(businessId, cutoff + MARGIN + i)),
    ];
    await appendChained(db(), new ChainSeal(t.ctx.keys.masterKey), businessId, entries);
    return businessId;
  }

  const seqs = async (businessId: string) =>
    (await db().selectFrom('access_log').select('seq').where('business_id', '=', businessId).orderBy('seq').execute()).map((row) => Number(row.seq));

  it('keeps a year by default (config refuses less: test/config.test.ts)', () => {
    assert.equal(t.ctx.config.retention.accessLogDays, 365);
  });

  it('prunes the entries older than the period in batches, and the chain verifies from the last pruned one', async () => {
    const now = Date.now();
    const old = BATCH * 2 + 5;
    const business = await chain(old, 3, now);
    const untouched = await chain(0, 4, now);
    const report = await t.modules.retention.service.run(undefined, now);
    assert.equal(report.pruned.access_log, old);
    assert.deepEqual(await seqs(business), [old + 1, old + 2, old + 3]);
    assert.deepEqual(await verifyChain(db(), chainCheck(t), business), { business_id: business, entries: 3, ok: true, pruned_through: old });
    assert.deepEqual(await verifyChain(db(), chainCheck(t), untouched), { business_id: untouched, entries: 4, ok: true });
    const anchor = await db().selectFrom('access_log_pruned').selectAll().where('business_id', '=', business).executeTakeFirstOrThrow();
    assert.equal(Number(anchor.seq), old);

    const cli = await runCli(['audit', 'verify'], env());
    assert.equal(cli.code, 0, cli.stdout + cli.stderr);
    assert.equal(JSON.parse(cli.stdout).ok, true);

    // Nothing more is old: a second run deletes nothing and moves nothing.
    assert.equal((await t.modules.retention.service.run(undefined, now)).pruned.access_log, 0);
    assert.equal((await verifyChain(db(), chainCheck(t), business)).ok, true);
  });

  it('a chain pruned of every entry still verifies against its head', async () => {
    const now = Date.now();
    const business = await chain(4, 0, now);
    await t.modules.retention.service.run(undefined, now);
    assert.deepEqual(await seqs(business), []);
    assert.deepEqual(await verifyChain(db(), chainCheck(t), business), { business_id: business, entries: 0, ok: true, pruned_through: 4 });
  });

  it('after pruning, deleting the first entry left, one in the middle or the newest still breaks the chain', async () => {
    const now = Date.now();
    const business = await chain(5, 4, now);
    await t.modules.retention.service.run(undefined, now);
    const left = await db().selectFrom('access_log').selectAll().where('business_id', '=', business).orderBy('seq').execute();
    assert.deepEqual(
      left.map((row) => Number(row.seq)),
      [6, 7, 8, 9],
    );
    for (const [index, reason] of [
      [0, /missing/],
      [2, /missing/],
      [3, /deleted/],
    ] as const) {
      const row = left[index]!;
      await db().deleteFrom('access_log').where('id', '=', row.id).execute();
      const report = await verifyChain(db(), chainCheck(t), business);
      assert.equal(report.ok, false, `deleting seq ${row.seq}`);
      assert.equal(report.broken?.seq, Number(row.seq));
      assert.match(report.broken!.reason, reason);
      await db().insertInto('access_log').values(row).execute();
      assert.equal((await verifyChain(db(), chainCheck(t), business)).ok, true);
    }
    const cli = await runCli(['audit', 'verify', '--business', business], env());
    assert.equal(cli.code, 0, cli.stderr);

    // A changed anchor no longer matches its seal.
    const anchor = await db().selectFrom('access_log_pruned').select('hash').where('business_id', '=', business).executeTakeFirstOrThrow();
    await db()
      .updateTable('access_log_pruned')
      .set({ hash: '1'.repeat(64) })
      .where('business_id', '=', business)
      .execute();
    const changed = await verifyChain(db(), chainCheck(t), business);
    assert.equal(changed.broken?.seq, 5);
    assert.match(changed.broken!.reason, /seal/);
    await db().updateTable('access_log_pruned').set({ hash: anchor.hash }).where('business_id', '=', business).execute();
  });

  it('stops at a broken link among the old entries, so that the break stays visible', async () => {
    const now = Date.now();
    const business = await chain(8, 2, now);
    const fourth = await db()
      .selectFrom('access_log')
      .select('id')
      .where('business_id', '=', business)
      .where('seq', '=', 4)
      .executeTakeFirstOrThrow();
    await db().updateTable('access_log').set({ client_id: 'someone-else' }).where('id', '=', fourth.id).execute();
    const report = await t.modules.retention.service.run(undefined, now);
    assert.equal(report.pruned.access_log, 3);
    assert.deepEqual(await seqs(business), [4, 5, 6, 7, 8, 9, 10]);
    const verified = await verifyChain(db(), chainCheck(t), business);
    assert.equal(verified.ok, false);
    assert.equal(verified.broken?.seq, 4);
  });

  it('`cps retention run` prunes once and prints the rows deleted per rule', async () => {
    const business = await chain(3, 1, Date.now());
    const cli = await runCli(['retention', 'run'], env());
    assert.equal(cli.code, 0, cli.stderr);
    const report = JSON.parse(cli.stdout);
    assert.equal(report.pruned.access_log, 3);
    assert.equal(typeof report.pruned['jobs.succeeded'], 'number');
    assert.deepEqual(await seqs(business), [4]);
    assert.equal((await verifyChain(db(), chainCheck(t), business)).ok, true);
  });
});
