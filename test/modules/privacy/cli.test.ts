/** A patient's rights from the cps command: export to a file, erasure, each with its access log entry. */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { runCli } from '../../process.ts';
import { createTestApp, createTestClient, DIALECT } from '../../support.ts';
import { call, findPerson, person, seedPerson } from './support.ts';

describe(`cps patient export and erase (${DIALECT})`, () => {
  it('exports a patient to a new 0600 file, erases it, and logs both under client cli', async () => {
    const t = await createTestApp();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cps-patient-cli-'));
    try {
      const client = await createTestClient(t.ctx);
      const who = person();
      const { patientId } = await seedPerson(t, client, who);
      const env = {
        CPS_DATA_DIR: t.database.dataDir,
        CPS_MASTER_KEY: t.ctx.keys.masterKey.toString('base64'),
        ...(t.database.databaseUrl ? { DATABASE_URL: t.database.databaseUrl } : {}),
      };
      const file = path.join(dir, 'export.json');

      const usage = await runCli(['patient', 'export', '--business', client.businessId, '--patient', patientId], env);
      assert.equal(usage.code, 2, usage.stderr);
      const exported = await runCli(
        ['patient', 'export', '--business', client.businessId, '--patient', who.partnerId, '--partner', '--file', file],
        env,
      );
      assert.equal(exported.code, 0, exported.stderr);
      assert.deepEqual(JSON.parse(exported.stdout), { business_id: client.businessId, patient_id: who.partnerId, file });
      assert.equal(statSync(file).mode & 0o777, 0o600);
      const document = readFileSync(file, 'utf8');
      assert.ok(document.includes(patientId) && document.includes(who.mobile.slice(-10)), 'the document holds the patient');
      const refused = await runCli(['patient', 'export', '--business', client.businessId, '--patient', patientId, '--file', file], env);
      assert.notEqual(refused.code, 0, 'never over an existing file');
      assert.equal(readFileSync(file, 'utf8'), document);
      const unknownFile = path.join(dir, 'unknown.json');
      const unknown = await runCli(['patient', 'export', '--business', client.businessId, '--patient', 'pt_nope', '--file', unknownFile], env);
      assert.equal(unknown.code, 1, unknown.stderr);
      assert.ok(!existsSync(unknownFile), 'no file for an unknown patient');

      const erased = await runCli(['patient', 'erase', '--business', client.businessId, '--patient', patientId], env);
      assert.equal(erased.code, 0, erased.stderr);
      assert.equal(JSON.parse(erased.stdout).status, 'erased');
      assert.deepEqual(await findPerson(t, who), [], 'nothing findable after the erasure');
      const read = await call(t, client.token, 'GET', `/profiles/v1/patient/${patientId}`);
      assert.equal(read.statusCode, 404, read.body);

      await t.ctx.audit.flush();
      const entries = await t.ctx.storage.db
        .selectFrom('access_log')
        .select(['operation', 'action', 'resource_type', 'resource_id', 'patient_ref', 'status', 'with_change'])
        .where('business_id', '=', client.businessId)
        .where('client_id', '=', 'cli')
        .orderBy('at')
        .orderBy('id')
        .execute();
      assert.deepEqual(entries, [
        {
          operation: 'cps patient export',
          action: 'export',
          resource_type: 'patient',
          resource_id: who.partnerId,
          patient_ref: who.partnerId,
          status: 200,
          with_change: 1,
        },
        {
          operation: 'cps patient erase',
          action: 'erase',
          resource_type: 'patient',
          resource_id: patientId,
          patient_ref: patientId,
          status: 200,
          with_change: 1,
        },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await t.close();
    }
  });
});
