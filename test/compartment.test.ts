/**
 * The patient compartment (src/compartment.ts) cannot be fooled: every column of the live schema that
 * refers to a patient belongs to a registered holder, and erasing a patient after filling every
 * registered table leaves nothing of the person in any table of the database, nor in the documents'
 * files store (the data directory's documents folder).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { isPostgres } from '../src/db/dialect.ts';
import { documentsApi, filesOnDisk, sampleFile, storedOf } from './modules/documents/support.ts';
import { call, findPerson, person, seedPerson } from './modules/privacy/support.ts';
import { createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from './support.ts';

/** A column that names a patient: `patient_id`, `patient_ref`, `partner_patient_id`. */
const REFERS_TO_PATIENT = /(^|_)patient_(id|ref)$/;

async function liveColumns(t: TestApp): Promise<Array<{ table: string; column: string }>> {
  const db = t.ctx.storage.db;
  if (isPostgres(db)) {
    const { rows } = await sql<{ table: string; column: string }>`select table_name as "table", column_name as "column"
      from information_schema.columns where table_schema = current_schema()`.execute(db);
    return rows;
  }
  const tables = (await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(db)).rows;
  const columns: Array<{ table: string; column: string }> = [];
  for (const { name } of tables) {
    for (const { name: column } of (await sql<{ name: string }>`select name from pragma_table_info(${name})`.execute(db)).rows) {
      columns.push({ table: name, column });
    }
  }
  return columns;
}

describe(`the patient compartment (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;

  before(async () => {
    t = await createTestApp();
    client = await createTestClient(t.ctx);
  });
  after(async () => t.close());

  it('every column of the live schema that refers to a patient has a registered holder, and every declared column exists', async () => {
    const live = await liveColumns(t);
    assert.ok(live.length > 100, `${live.length} columns`);
    const declared = t.ctx.compartment.holders.flatMap((holder) => holder.tables.map((held) => ({ ...held, holder: holder.name })));
    const heldTables = new Set<string>(declared.map((held) => held.table));
    const unheld = live.filter(({ table, column }) => REFERS_TO_PATIENT.test(column) && !heldTables.has(table)).map((c) => `${c.table}.${c.column}`);
    assert.deepEqual(unheld, [], 'tables naming a patient that no module registered in the compartment');
    const missing = declared.filter((held) => !live.some((c) => c.table === held.table && c.column === held.column));
    assert.deepEqual(missing, [], 'declared columns the schema does not have');
    for (const holder of t.ctx.compartment.holders) {
      assert.ok(typeof holder.erase === 'function' || holder.erase.kept.length > 20, `${holder.name} says why its rows are kept`);
    }
  });

  it('an erasure of a patient with rows in every registered table leaves no row or string of theirs in any table', async () => {
    const who = person();
    const { patientId } = await seedPerson(t, client, who);
    const db = t.ctx.storage.db;
    // A notification sent by device id: it names no patient, only the patient's device.
    const did = `dev-${who.partnerId}`;
    await db
      .insertInto('push_notifications')
      .values({
        id: `ntf-did-${who.partnerId}`,
        business_id: client.businessId,
        title: `Reminder for ${who.first}`,
        body: `${who.last}, your appointment is tomorrow`,
        data: JSON.stringify({ phone: who.local }),
        patient_ref: null,
        created_by: client.clientId,
        created_at: Date.now(),
      })
      .execute();
    await db
      .insertInto('push_deliveries')
      .values({
        notification_id: `ntf-did-${who.partnerId}`,
        did,
        business_id: client.businessId,
        status: 'sent',
        error: null,
        fcm_message: null,
        updated_at: Date.now(),
      })
      .execute();
    // One sent by device id to the patient's device and another's: it was not theirs alone.
    await db
      .insertInto('push_notifications')
      .values({
        id: `ntf-all-${who.partnerId}`,
        business_id: client.businessId,
        title: 'The clinic is closed on Monday',
        body: 'Holiday',
        data: null,
        patient_ref: null,
        created_by: client.clientId,
        created_at: Date.now(),
      })
      .execute();
    for (const to of [did, `other-${did}`]) {
      await db
        .insertInto('push_deliveries')
        .values({
          notification_id: `ntf-all-${who.partnerId}`,
          did: to,
          business_id: client.businessId,
          status: 'sent',
          error: null,
          fcm_message: null,
          updated_at: 0,
        })
        .execute();
    }
    const png = sampleFile('png');
    const uploaded = await documentsApi(t.app, client.token, who.partnerId).uploadV2(png, { fileName: `${who.last}-report.png` });
    assert.equal(uploaded.statusCode < 300, true, uploaded.body);
    const stored = await storedOf(t, uploaded.json().document_id);
    assert.equal(stored.length, 1, 'the file is stored');
    // Its details name the person too, in the document and in its document.updated event.
    const described = await documentsApi(t.app, client.token, who.partnerId).update(uploaded.json().document_id, {
      title: `MRI of ${who.first} ${who.last}`,
      tg: [who.first],
    });
    assert.equal(described.statusCode, 200, described.body);
    const exported = await call(t, client.token, 'POST', `/privacy/v1/patients/${patientId}/export`);
    assert.equal(exported.statusCode, 202, exported.body);

    // Every registered table holds the person before the erasure: the fill covers the whole compartment.
    const refs = [patientId, who.partnerId];
    for (const holder of t.ctx.compartment.holders) {
      for (const held of holder.tables) {
        const { rows } = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(held.table)}
          where ${sql.ref(held.column)} in (${sql.join(refs)})`.execute(db);
        assert.ok(Number(rows[0]!.n) > 0, `the fill left ${held.table}.${held.column} (${holder.name}) empty`);
      }
    }
    assert.ok((await findPerson(t, who)).length > 10, 'the seed put the person in many places');

    const erased = await call(t, client.token, 'POST', `/privacy/v1/patients/${patientId}/erase`);
    assert.equal(erased.statusCode, 200, erased.body);
    await t.ctx.jobs.runDue();
    await t.ctx.audit.flush();
    assert.deepEqual(await findPerson(t, who), [], 'what the erasure left of the person');
    // The files store's folder too: no file of the patient's, and no name or byte of theirs in any file's name or content.
    assert.deepEqual(await storedOf(t, uploaded.json().document_id), [], 'what the erasure left of the file');
    const needles = [who.first, who.last, who.local, who.partnerId, patientId].map((needle) => needle.toLowerCase());
    for (const file of filesOnDisk(t.ctx.config.dataDir)) {
      const bytes = readFileSync(file);
      const text = `${file}\n${bytes.toString('latin1')}`.toLowerCase();
      for (const needle of needles) assert.equal(text.includes(needle), false, `${file} holds ${needle}`);
      assert.equal(bytes.includes(png.subarray(-64)), false, `${file} holds the file's bytes`);
    }
    const shared = await db.selectFrom('push_deliveries').select('did').where('notification_id', '=', `ntf-all-${who.partnerId}`).execute();
    assert.deepEqual(shared, [{ did: `other-${did}` }], "a notification sent to others too keeps their delivery rows, not the patient's");
  });
});
