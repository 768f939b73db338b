/**
 * SQL of patients, kept per business and matched by the partner's `partner_patient_id`. Other modules
 * reach patients through service.ts.
 */
import type { Db, DialectName } from '../../db/index.ts';
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
  const rows = await db.selectFrom('patients').selectAll()
    .where('business_id', '=', businessId)
    .where((eb) => eb.or([eb('id', '=', id), eb('partner_patient_id', '=', id)]))
    .limit(2)
    .execute();
  return rows.find((row) => row.id === id) ?? rows[0];
}

/**
 * The business's patient with this partner id, created (with empty details) when there is none.
 * Concurrent callers get the same row: the unique index makes the second insert a no-op.
 */
export async function findOrCreateByPartnerId(db: Db, dialect: DialectName, businessId: string, partnerPatientId: string, newId: string): Promise<PatientRow> {
  const now = Date.now();
  await db.insertInto('patients')
    .values({ id: newId, business_id: businessId, partner_patient_id: partnerPatientId, details: '{}', created_at: now, updated_at: now })
    .onConflict((oc) => oc.columns(['business_id', 'partner_patient_id']).doNothing())
    .execute();
  const row = await db.selectFrom('patients').selectAll()
    .where('business_id', '=', businessId).where('partner_patient_id', '=', partnerPatientId)
    .$if(dialect === 'postgres', (q) => q.forUpdate())
    .executeTakeFirstOrThrow();
  return row;
}

export async function findByPartnerId(db: Db, businessId: string, partnerPatientId: string): Promise<PatientRow | undefined> {
  return db.selectFrom('patients').selectAll()
    .where('business_id', '=', businessId).where('partner_patient_id', '=', partnerPatientId)
    .executeTakeFirst();
}

export async function setPartnerId(db: Db, businessId: string, id: string, partnerPatientId: string): Promise<void> {
  await db.updateTable('patients').set({ partner_patient_id: partnerPatientId, updated_at: Date.now() })
    .where('business_id', '=', businessId).where('id', '=', id).execute();
}

export async function insertPatient(db: Db, row: PatientRow): Promise<void> {
  await db.insertInto('patients').values(row).execute();
}

export async function updatePatientDetails(db: Db, businessId: string, id: string, details: PatientDetails): Promise<void> {
  await db.updateTable('patients').set({ details: JSON.stringify(details), updated_at: Date.now() })
    .where('business_id', '=', businessId).where('id', '=', id).execute();
}
