/**
 * SQL for clinics, doctors and their assignments; every query is scoped by business. Clinics and
 * doctors are queried alike, so the queries take the table. A deleted record (`deleted_at` set) is
 * found by no query but the appointments' own reads; its assignments are removed with it.
 */
import { sql } from 'kysely';
import { isPostgres } from '../../db/dialect.ts';
import type { Db } from '../../db/index.ts';
import type { Database } from '../../db/schema.ts';

export type Table = 'clinics' | 'doctors';
export type ClinicRow = Database['clinics'];
export type DoctorRow = Database['doctors'];

export interface DoctorSummaryRow {
  clinic_id: string;
  id: string;
  firstname: string;
  lastname: string;
  partner_id: string | null;
}

export interface Assignment {
  clinic_id: string;
  doctor_id: string;
}

export async function insert<T extends Table>(db: Db, table: T, row: Database[T]): Promise<void> {
  await db
    .insertInto(table as Table)
    .values(row)
    .execute();
}

export async function update<T extends Table>(db: Db, table: T, businessId: string, id: string, changes: Partial<Database[T]>): Promise<void> {
  await db
    .updateTable(table as Table)
    .set(changes)
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .execute();
}

/**
 * By the service's id, or by the partner's id when `byPartner`; `lock` holds the row until the
 * transaction ends (PostgreSQL; SQLite runs one transaction at a time).
 */
export async function find<T extends Table>(
  db: Db,
  table: T,
  businessId: string,
  id: string,
  byPartner: boolean,
  lock = false,
): Promise<Database[T] | undefined> {
  return (await db
    .selectFrom(table as Table)
    .selectAll()
    .where('business_id', '=', businessId)
    .where(byPartner ? 'partner_id' : 'id', '=', id)
    .where('deleted_at', 'is', null)
    .$if(lock && isPostgres(db), (q) => q.forUpdate())
    .executeTakeFirst()) as Database[T] | undefined;
}

export async function softDelete(db: Db, table: Table, businessId: string, id: string, now: number): Promise<void> {
  await db.updateTable(table).set({ deleted_at: now, updated_at: now }).where('business_id', '=', businessId).where('id', '=', id).execute();
  await db
    .deleteFrom('clinic_doctors')
    .where('business_id', '=', businessId)
    .where(table === 'clinics' ? 'clinic_id' : 'doctor_id', '=', id)
    .execute();
}

/**
 * Whether an appointment not cancelled and not yet over names the clinic or doctor. Read here rather
 * than through the appointments service, which depends on this module.
 */
export async function hasUpcomingAppointment(db: Db, table: Table, businessId: string, id: string, now: number): Promise<boolean> {
  const row = await db
    .selectFrom('appointments')
    .select('id')
    .where('business_id', '=', businessId)
    .where(table === 'clinics' ? 'clinic_id' : 'doctor_id', '=', id)
    .where('status', '<>', 'CN')
    .where('end_time', '>', now)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

export async function businessAssignments(db: Db, businessId: string): Promise<Assignment[]> {
  return db
    .selectFrom('clinic_doctors')
    .select(['clinic_id', 'doctor_id'])
    .where('business_id', '=', businessId)
    .orderBy('created_at')
    .orderBy('doctor_id')
    .execute();
}

/** The business's records, oldest first: a page of them, or all without `page`. */
export async function list<T extends Table>(
  db: Db,
  table: T,
  businessId: string,
  page?: { limit: number; offset: number },
): Promise<Array<Database[T]>> {
  return (await db
    .selectFrom(table as Table)
    .selectAll()
    .where('business_id', '=', businessId)
    .where('deleted_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .$if(page !== undefined, (q) => q.limit(page!.limit).offset(page!.offset))
    .execute()) as Array<Database[T]>;
}

export async function byIds(
  db: Db,
  table: Table,
  businessId: string,
  ids: readonly string[],
  byPartner: boolean,
): Promise<Array<{ id: string; partner_id: string | null }>> {
  if (ids.length === 0) return [];
  return db
    .selectFrom(table)
    .select(['id', 'partner_id'])
    .where('business_id', '=', businessId)
    .where(byPartner ? 'partner_id' : 'id', 'in', [...ids])
    .where('deleted_at', 'is', null)
    .execute();
}

export async function clinicsByIds(db: Db, businessId: string, ids: readonly string[]): Promise<ClinicRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('clinics')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('id', 'in', [...ids])
    .where('deleted_at', 'is', null)
    .execute();
}

export async function partnerIdTaken(db: Db, table: Table, businessId: string, partnerId: string, exceptId?: string): Promise<boolean> {
  let query = db
    .selectFrom(table)
    .select('id')
    .where('business_id', '=', businessId)
    .where('partner_id', '=', partnerId)
    .where('deleted_at', 'is', null);
  if (exceptId) query = query.where('id', '<>', exceptId);
  return (await query.executeTakeFirst()) !== undefined;
}

export async function doctorsOfClinics(db: Db, businessId: string, clinicIds: readonly string[]): Promise<DoctorSummaryRow[]> {
  if (clinicIds.length === 0) return [];
  return db
    .selectFrom('clinic_doctors')
    .innerJoin('doctors', 'doctors.id', 'clinic_doctors.doctor_id')
    .select(['clinic_doctors.clinic_id', 'doctors.id', 'doctors.firstname', 'doctors.lastname', 'doctors.partner_id'])
    .where('clinic_doctors.business_id', '=', businessId)
    .where('clinic_doctors.clinic_id', 'in', [...clinicIds])
    .orderBy('clinic_doctors.created_at')
    .orderBy('doctors.id')
    .execute();
}

export async function clinicIdsOfDoctors(db: Db, businessId: string, doctorIds: readonly string[]): Promise<Assignment[]> {
  if (doctorIds.length === 0) return [];
  return db
    .selectFrom('clinic_doctors')
    .select(['doctor_id', 'clinic_id'])
    .where('business_id', '=', businessId)
    .where('doctor_id', 'in', [...doctorIds])
    .orderBy('created_at')
    .orderBy('clinic_id')
    .execute();
}

/** Adds assignments; ones that already exist are kept as they are. */
export async function assign(db: Db, businessId: string, pairs: readonly Assignment[]): Promise<void> {
  if (pairs.length === 0) return;
  const now = Date.now();
  await db
    .insertInto('clinic_doctors')
    .values(pairs.map((pair) => ({ ...pair, business_id: businessId, created_at: now })))
    .onConflict((oc) => oc.columns(['clinic_id', 'doctor_id']).doNothing())
    .execute();
}

/** What `placement` finds: the service id of each clinic and doctor named, and whether they are assigned. */
export interface PlacementRow {
  clinic_by_id: string | null;
  clinic_by_partner: string | null;
  doctor_by_id: string | null;
  doctor_by_partner: string | null;
  /** The partner ids of the clinic and doctor found (by id, else by partner id). */
  clinic_partner_id: string | null;
  doctor_partner_id: string | null;
  /** The clinic and doctor found (by id, else by partner id) are assigned; 0/1 on SQLite. */
  assigned: boolean | number;
}

/**
 * The clinic and the doctor by either id (null where not sent) and their assignment, in one statement.
 * On PostgreSQL the clinic and doctor found are locked (shared) until the transaction ends: a delete
 * (which locks them for update) waits for the booking and then sees its appointment, and a booking
 * that waited for a delete finds the record gone.
 */
export async function placement(
  db: Db,
  businessId: string,
  ids: { clinicId: string | null; partnerClinicId: string | null; doctorId: string | null; partnerDoctorId: string | null },
): Promise<PlacementRow> {
  const lock = isPostgres(db) ? sql` for share` : sql``;
  const alive = sql`deleted_at is null`;
  const query = sql<PlacementRow>`
    select c.by_id as clinic_by_id, c.by_partner as clinic_by_partner, d.by_id as doctor_by_id, d.by_partner as doctor_by_partner,
      (select partner_id from clinics where business_id = ${businessId} and id = coalesce(c.by_id, c.by_partner)) as clinic_partner_id,
      (select partner_id from doctors where business_id = ${businessId} and id = coalesce(d.by_id, d.by_partner)) as doctor_partner_id,
      exists (select 1 from clinic_doctors cd where cd.business_id = ${businessId}
        and cd.clinic_id = coalesce(c.by_id, c.by_partner) and cd.doctor_id = coalesce(d.by_id, d.by_partner)) as assigned
    from (select (select id from clinics where business_id = ${businessId} and id = ${ids.clinicId} and ${alive}${lock}) as by_id,
                 (select id from clinics where business_id = ${businessId} and partner_id = ${ids.partnerClinicId} and ${alive}${lock}) as by_partner) c,
         (select (select id from doctors where business_id = ${businessId} and id = ${ids.doctorId} and ${alive}${lock}) as by_id,
                 (select id from doctors where business_id = ${businessId} and partner_id = ${ids.partnerDoctorId} and ${alive}${lock}) as by_partner) d`;
  return (await query.execute(db)).rows[0]!;
}
