import { sql, type Kysely } from 'kysely';

/**
 * Patients as a resource: the `details` JSON becomes columns (names, gender, dob or age, contact, ABHA,
 * archive and merge marks), backfilled in batches, with indexes for the front desk's look-ups and the
 * listing by creation. Cases and push devices stored under a patient's service id while the patient has
 * a partner id are rewritten to the partner id, the one key PatientService.canonicalRef answers, so
 * both ids reach them.
 */
const COLUMNS: Array<[string, 'text' | 'integer' | 'bigint']> = [
  ['designation', 'text'],
  ['first_name', 'text'],
  ['middle_name', 'text'],
  ['last_name', 'text'],
  ['gender', 'text'],
  ['dob', 'text'],
  ['age', 'integer'],
  ['age_recorded_at', 'bigint'],
  ['mobile', 'text'],
  ['email', 'text'],
  ['blood_group', 'text'],
  ['address', 'text'],
  ['abha_number', 'text'],
  ['abha_address', 'text'],
  ['extras', 'text'],
  ['archived_at', 'bigint'],
  ['merged_into', 'text'],
];

const BATCH = 1000;

interface OldDetails {
  designation?: string;
  first_name?: string;
  middle_name?: string;
  last_name?: string;
  mobile?: string;
  gender?: string;
  dob?: string;
  age?: number;
  address?: Record<string, unknown>;
}

export async function up(db: Kysely<any>): Promise<void> {
  for (const [name, type] of COLUMNS) await db.schema.alterTable('patients').addColumn(name, type).execute();

  let after = '';
  for (;;) {
    const rows: Array<{ id: string; details: string; updated_at: number | string }> = await db
      .selectFrom('patients')
      .select(['id', 'details', 'updated_at'])
      .where('id', '>', after)
      .orderBy('id')
      .limit(BATCH)
      .execute();
    if (rows.length === 0) break;
    for (const row of rows) {
      const details = JSON.parse(row.details) as OldDetails;
      const address = details.address && Object.keys(details.address).length > 0 ? JSON.stringify(details.address) : null;
      await db
        .updateTable('patients')
        .set({
          designation: details.designation ?? null,
          first_name: details.first_name ?? null,
          middle_name: details.middle_name ?? null,
          last_name: details.last_name ?? null,
          gender: details.gender ?? null,
          dob: details.dob ?? null,
          age: details.age ?? null,
          // The age was last given no later than the row's last change.
          age_recorded_at: details.age === undefined ? null : Number(row.updated_at),
          mobile: details.mobile ?? null,
          address,
        })
        .where('id', '=', row.id)
        .execute();
    }
    after = rows.at(-1)!.id;
  }
  await db.schema.alterTable('patients').dropColumn('details').execute();

  await db.schema.createIndex('patients_mobile_idx').on('patients').columns(['business_id', 'mobile']).execute();
  await db.schema.createIndex('patients_abha_number_idx').on('patients').columns(['business_id', 'abha_number']).execute();
  await db.schema.createIndex('patients_abha_address_idx').on('patients').columns(['business_id', 'abha_address']).execute();
  await db.schema.createIndex('patients_created_idx').on('patients').columns(['business_id', 'created_at', 'id']).execute();

  // One key per patient: records kept under the service id of a patient that has a partner id move to
  // the partner id. A case whose id is already kept under the partner id stays where it is (not lost).
  await sql`
    update cases set patient_ref = (
      select p.partner_patient_id from patients p where p.business_id = cases.business_id and p.id = cases.patient_ref
    )
    where exists (
      select 1 from patients p
      where p.business_id = cases.business_id and p.id = cases.patient_ref and p.partner_patient_id is not null
        and not exists (
          select 1 from cases c2 where c2.business_id = cases.business_id and c2.patient_ref = p.partner_patient_id and c2.id = cases.id
        )
    )`.execute(db);
  await sql`
    update push_devices set patient_ref = (
      select p.partner_patient_id from patients p where p.business_id = push_devices.business_id and p.id = push_devices.patient_ref
    )
    where exists (
      select 1 from patients p
      where p.business_id = push_devices.business_id and p.id = push_devices.patient_ref and p.partner_patient_id is not null
    )`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('patients')
    .addColumn('details', 'text', (c) => c.notNull().defaultTo('{}'))
    .execute();
  const rows: Array<Record<string, unknown>> = await db.selectFrom('patients').selectAll().execute();
  for (const row of rows) {
    const details: Record<string, unknown> = {};
    for (const key of ['designation', 'first_name', 'middle_name', 'last_name', 'mobile', 'gender', 'dob', 'age'] as const) {
      if (row[key] !== null) details[key] = key === 'age' ? Number(row[key]) : row[key];
    }
    if (row.address !== null) details.address = JSON.parse(String(row.address));
    if (row.partner_patient_id !== null) details.partner_patient_id = row.partner_patient_id;
    await db
      .updateTable('patients')
      .set({ details: JSON.stringify(details) })
      .where('id', '=', row.id as string)
      .execute();
  }
  for (const index of ['patients_mobile_idx', 'patients_abha_number_idx', 'patients_abha_address_idx', 'patients_created_idx']) {
    await db.schema.dropIndex(index).execute();
  }
  for (const [name] of COLUMNS) await db.schema.alterTable('patients').dropColumn(name).execute();
}
