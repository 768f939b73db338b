/** SQL for clinics, doctors and their assignments; every query is scoped by business. */
import type { Db } from '../../db/index.ts';
import type { ClinicsTable, DoctorsTable } from '../../db/schema.ts';

export type ClinicRow = ClinicsTable;
export type DoctorRow = DoctorsTable;

export interface DoctorSummaryRow {
  clinic_id: string;
  id: string;
  firstname: string;
  lastname: string;
  partner_id: string | null;
}

export async function insertClinic(db: Db, clinic: ClinicRow): Promise<void> {
  await db.insertInto('clinics').values(clinic).execute();
}

export async function updateClinic(db: Db, businessId: string, id: string, changes: Partial<ClinicRow>): Promise<void> {
  await db.updateTable('clinics').set(changes).where('business_id', '=', businessId).where('id', '=', id).execute();
}

/** By the service's id, or by the partner's id when `byPartner`. */
export async function findClinic(db: Db, businessId: string, id: string, byPartner = false): Promise<ClinicRow | undefined> {
  return db.selectFrom('clinics').selectAll()
    .where('business_id', '=', businessId)
    .where(byPartner ? 'partner_id' : 'id', '=', id)
    .executeTakeFirst();
}

export async function listClinics(db: Db, businessId: string, limit: number, offset: number): Promise<ClinicRow[]> {
  return db.selectFrom('clinics').selectAll().where('business_id', '=', businessId)
    .orderBy('created_at').orderBy('id').limit(limit).offset(offset).execute();
}

export async function clinicsByIds(db: Db, businessId: string, ids: readonly string[], byPartner: boolean): Promise<Array<{ id: string; partner_id: string | null }>> {
  if (ids.length === 0) return [];
  return db.selectFrom('clinics').select(['id', 'partner_id'])
    .where('business_id', '=', businessId)
    .where(byPartner ? 'partner_id' : 'id', 'in', [...ids])
    .execute();
}

export async function clinicPartnerIdTaken(db: Db, businessId: string, partnerId: string, exceptId?: string): Promise<boolean> {
  let query = db.selectFrom('clinics').select('id').where('business_id', '=', businessId).where('partner_id', '=', partnerId);
  if (exceptId) query = query.where('id', '<>', exceptId);
  return (await query.executeTakeFirst()) !== undefined;
}

export async function doctorsOfClinics(db: Db, businessId: string, clinicIds: readonly string[]): Promise<DoctorSummaryRow[]> {
  if (clinicIds.length === 0) return [];
  return db.selectFrom('clinic_doctors')
    .innerJoin('doctors', 'doctors.id', 'clinic_doctors.doctor_id')
    .select(['clinic_doctors.clinic_id', 'doctors.id', 'doctors.firstname', 'doctors.lastname', 'doctors.partner_id'])
    .where('clinic_doctors.business_id', '=', businessId)
    .where('clinic_doctors.clinic_id', 'in', [...clinicIds])
    .orderBy('clinic_doctors.created_at').orderBy('doctors.id')
    .execute();
}

export async function insertDoctor(db: Db, doctor: DoctorRow): Promise<void> {
  await db.insertInto('doctors').values(doctor).execute();
}

export async function updateDoctor(db: Db, businessId: string, id: string, changes: Partial<DoctorRow>): Promise<void> {
  await db.updateTable('doctors').set(changes).where('business_id', '=', businessId).where('id', '=', id).execute();
}

export async function findDoctor(db: Db, businessId: string, id: string, byPartner = false): Promise<DoctorRow | undefined> {
  return db.selectFrom('doctors').selectAll()
    .where('business_id', '=', businessId)
    .where(byPartner ? 'partner_id' : 'id', '=', id)
    .executeTakeFirst();
}

export async function listDoctors(db: Db, businessId: string, limit: number, offset: number): Promise<DoctorRow[]> {
  return db.selectFrom('doctors').selectAll().where('business_id', '=', businessId)
    .orderBy('created_at').orderBy('id').limit(limit).offset(offset).execute();
}

export async function doctorsByIds(db: Db, businessId: string, ids: readonly string[], byPartner: boolean): Promise<Array<{ id: string; partner_id: string | null }>> {
  if (ids.length === 0) return [];
  return db.selectFrom('doctors').select(['id', 'partner_id'])
    .where('business_id', '=', businessId)
    .where(byPartner ? 'partner_id' : 'id', 'in', [...ids])
    .execute();
}

export async function doctorPartnerIdTaken(db: Db, businessId: string, partnerId: string, exceptId?: string): Promise<boolean> {
  let query = db.selectFrom('doctors').select('id').where('business_id', '=', businessId).where('partner_id', '=', partnerId);
  if (exceptId) query = query.where('id', '<>', exceptId);
  return (await query.executeTakeFirst()) !== undefined;
}

export async function clinicIdsOfDoctors(db: Db, businessId: string, doctorIds: readonly string[]): Promise<Array<{ doctor_id: string; clinic_id: string }>> {
  if (doctorIds.length === 0) return [];
  return db.selectFrom('clinic_doctors').select(['doctor_id', 'clinic_id'])
    .where('business_id', '=', businessId)
    .where('doctor_id', 'in', [...doctorIds])
    .orderBy('created_at').orderBy('clinic_id')
    .execute();
}

/** Adds assignments; ones that already exist are kept as they are. */
export async function assign(db: Db, businessId: string, pairs: ReadonlyArray<{ clinic_id: string; doctor_id: string }>): Promise<void> {
  if (pairs.length === 0) return;
  const now = Date.now();
  await db.insertInto('clinic_doctors')
    .values(pairs.map((pair) => ({ ...pair, business_id: businessId, created_at: now })))
    .onConflict((oc) => oc.columns(['clinic_id', 'doctor_id']).doNothing())
    .execute();
}

export async function isAssigned(db: Db, businessId: string, clinicId: string, doctorId: string): Promise<boolean> {
  const row = await db.selectFrom('clinic_doctors').select('clinic_id')
    .where('business_id', '=', businessId).where('clinic_id', '=', clinicId).where('doctor_id', '=', doctorId)
    .executeTakeFirst();
  return row !== undefined;
}
