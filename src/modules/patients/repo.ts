/**
 * SQL of patients, kept per business and matched by the partner's `partner_patient_id`. Other modules
 * reach patients through service.ts.
 */
import type { Db } from '../../db/index.ts';
import type { PatientsTable } from '../../db/schema.ts';

export type PatientRow = PatientsTable;

/** interface 2.7, with `age` as the other side of the DOB/AGE choice. */
export interface PatientDetails {
  designation?: string;
  first_name?: string;
  middle_name?: string;
  last_name?: string;
  mobile?: string;
  gender?: 'M' | 'F' | 'O';
  dob?: string;
  age?: number;
  address?: { city?: string; pincode?: number };
  partner_patient_id?: string;
}

/** The patient whose service id or partner id is `id`; the service id wins if both match. */
export async function findPatientByAnyId(db: Db, businessId: string, id: string): Promise<PatientRow | undefined> {
  const rows = await db
    .selectFrom('patients')
    .selectAll()
    .where('business_id', '=', businessId)
    .where((eb) => eb.or([eb('id', '=', id), eb('partner_patient_id', '=', id)]))
    .limit(2)
    .execute();
  return rows.find((row) => row.id === id) ?? rows[0];
}

/**
 * The business's patient with `row`'s partner id, locked until the transaction ends on PostgreSQL;
 * `row` is inserted when there is none, and then it is the answer (its id tells). Concurrent callers
 * get the same row: the unique index turns the second insert into an update of the first's row.
 */
export async function upsertByPartnerId(db: Db, row: PatientRow): Promise<PatientRow> {
  return db
    .insertInto('patients')
    .values(row)
    .onConflict((oc) => oc.columns(['business_id', 'partner_patient_id']).doUpdateSet({ updated_at: row.updated_at }))
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findByPartnerId(db: Db, businessId: string, partnerPatientId: string): Promise<PatientRow | undefined> {
  return db
    .selectFrom('patients')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('partner_patient_id', '=', partnerPatientId)
    .executeTakeFirst();
}

export async function setPartnerId(db: Db, businessId: string, id: string, partnerPatientId: string): Promise<void> {
  await db
    .updateTable('patients')
    .set({ partner_patient_id: partnerPatientId, updated_at: Date.now() })
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .execute();
}

export async function insertPatient(db: Db, row: PatientRow): Promise<void> {
  await db.insertInto('patients').values(row).execute();
}

export async function updatePatientDetails(db: Db, businessId: string, id: string, details: PatientDetails): Promise<void> {
  await db
    .updateTable('patients')
    .set({ details: JSON.stringify(details), updated_at: Date.now() })
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .execute();
}
