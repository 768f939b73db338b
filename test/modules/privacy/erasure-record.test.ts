/**
 * The erasure record (docs/4-operations.md "Backups"): written before an erasure commits, naming no
 * one, and re-applied by `cps privacy reapply-erasures` (here after an erasure that never committed: the
 * database holds the patient unerased, as a restored older copy does).
 */
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ERASURE_RECORD_FILE } from '../../../src/modules/privacy/erasure-record.ts';
import { runCli, type CliResult } from '../../process.ts';
import { ADMIN_TOKEN, createTestApp, createTestClient, DIALECT, testKeys, type TestApp, type TestClient } from '../../support.ts';
import { createDr } from '../patients/support.ts';
import { call, person } from './support.ts';

function json(result: CliResult): any {
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout);
}

describe(`privacy: the erasure record (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  /** While set, an erasure fails after its record line is written and before it commits: a crash between the two. */
  let crash = false;

  before(async () => {
    t = await createTestApp();
    t.ctx.compartment.register({
      name: 'crash-before-commit',
      tables: [],
      erase: async () => {
        if (crash) throw new Error('crash before commit');
      },
    });
    client = await createTestClient(t.ctx);
  });
  after(() => t.close());

  async function reapply(): Promise<any> {
    const env: Record<string, string> = {
      CPS_DATA_DIR: t.database.dataDir,
      CPS_MASTER_KEY: (await testKeys()).masterKey.toString('base64'),
      CPS_ADMIN_TOKEN: ADMIN_TOKEN,
      LOG_LEVEL: 'silent',
      DATABASE_URL: t.database.databaseUrl ?? '',
    };
    return json(await runCli(['privacy', 'reapply-erasures'], env));
  }

  it('an erasure writes a line (0600) holding no name, number, service id or partner id', async () => {
    const who = person();
    const id = await createDr(t, client.token, { first_name: who.first, last_name: who.last, mobile: who.mobile, partner_patient_id: who.partnerId });
    const erased = await call(t, client.token, 'POST', `/privacy/v1/patients/${id}/erase`);
    assert.equal(erased.statusCode, 200, erased.body);
    const file = path.join(t.database.dataDir, ERASURE_RECORD_FILE);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const bytes = readFileSync(file, 'latin1');
    const lines = bytes
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    const line = lines.at(-1);
    assert.equal(line.business_id, client.businessId);
    assert.equal(line.patient_refs.length, 1);
    assert.equal(line.partner_refs.length, 1);
    for (const needle of [who.first, who.last, who.mobile, who.local, who.partnerId, id]) {
      assert.ok(!bytes.toLowerCase().includes(needle.toLowerCase()), `the record holds ${needle}`);
    }
    // The partner id's digest is the marker the database keeps.
    const row = await t.ctx.storage.db.selectFrom('patients').select('erased_ref').where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(row.erased_ref, line.partner_refs[0]);
  });

  it('cps privacy reapply-erasures erases a recorded patient the database holds unerased, once', async () => {
    const who = person();
    const id = await createDr(t, client.token, { first_name: who.first, last_name: who.last, mobile: who.mobile });
    const kept = await createDr(t, client.token, { first_name: 'Kept', last_name: 'Alive' });
    crash = true;
    try {
      const failed = await call(t, client.token, 'POST', `/privacy/v1/patients/${id}/erase`);
      assert.equal(failed.statusCode, 500);
    } finally {
      crash = false;
    }
    const before = await t.ctx.storage.db.selectFrom('patients').select(['first_name', 'erased_at']).where('id', '=', id).executeTakeFirstOrThrow();
    assert.deepEqual(before, { first_name: who.first, erased_at: null }, 'the erasure did not commit');

    const report = await reapply();
    assert.equal(report.other_key, 0);
    assert.deepEqual(
      report.re_erased.map((entry: any) => [entry.business_id, entry.patient_id]),
      [[client.businessId, id]],
    );
    const after = await t.ctx.storage.db
      .selectFrom('patients')
      .select(['first_name', 'mobile', 'erased_at'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    assert.equal(after.first_name, null);
    assert.equal(after.mobile, null);
    assert.notEqual(after.erased_at, null);
    assert.equal((await call(t, client.token, 'GET', `/dr/v1/patient/${id}`)).statusCode, 404);
    assert.equal((await call(t, client.token, 'GET', `/dr/v1/patient/${kept}`)).statusCode, 200, 'an unrecorded patient is untouched');

    const again = await reapply();
    assert.deepEqual(again.re_erased, [], 'nothing left to erase');
    assert.equal(again.records, report.records, 'a re-applied erasure adds no line');
  });

  it('a line written under another master key is counted, not matched', async () => {
    const id = await createDr(t, client.token, { first_name: 'Other', last_name: 'Key' });
    const file = path.join(t.database.dataDir, ERASURE_RECORD_FILE);
    appendFileSync(
      file,
      `${JSON.stringify({ business_id: client.businessId, client_id: 'c', erased_at: 1, patient_refs: ['x'], partner_refs: [], key_check: 'another' })}\n{"torn`,
    );
    const report = await reapply();
    assert.equal(report.other_key, 1);
    assert.deepEqual(report.re_erased, []);
    assert.equal((await call(t, client.token, 'GET', `/dr/v1/patient/${id}`)).statusCode, 200);
  });
});
