/** The patient compartment (src/compartment.ts) cannot be fooled: every column of the live schema that refers to a patient belongs to a registered holder. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { isPostgres } from '../src/db/dialect.ts';
import { createTestApp, DIALECT, type TestApp } from './support.ts';

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

  before(async () => {
    t = await createTestApp();
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
});
