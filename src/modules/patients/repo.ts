/**
 * SQL of patients, one record per person per business, matched by the partner's `partner_patient_id`.
 * Other modules reach patients through service.ts. Every write of a patient goes through
 * `insertPatient`, `upsertByPartnerId` or `updatePatient`.
 */
import { sql } from 'kysely';
import { isPostgres } from '../../db/dialect.ts';
import { writeWithNext, type Db } from '../../db/index.ts';
import type { PatientsTable } from '../../db/schema.ts';

export type PatientRow = PatientsTable;

/** The columns a change may set. */
export type PatientChanges = Partial<Omit<PatientRow, 'id' | 'business_id' | 'created_at'>>;

/** The patient whose service id or partner id is `id`; the service id wins if both match. */
export async function findPatientByAnyId(db: Db, businessId: string, id: string): Promise<PatientRow | undefined> {
  const rows = await db
    .selectFrom('patients')
    .selectAll()
    .where('business_id', '=', businessId)
    .where((eb) => eb.or([eb('id', '=', id), eb('partner_patient_id', '=', id)]))
    .where('erased_at', 'is', null)
    .limit(2)
    .execute();
  return rows.find((row) => row.id === id) ?? rows[0];
}

export async function findById(db: Db, businessId: string, id: string): Promise<PatientRow | undefined> {
  return db.selectFrom('patients').selectAll().where('business_id', '=', businessId).where('id', '=', id).executeTakeFirst();
}

export async function findByIds(db: Db, businessId: string, ids: string[]): Promise<PatientRow[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('patients').selectAll().where('business_id', '=', businessId).where('id', 'in', ids).where('erased_at', 'is', null).execute();
}

export async function findByPartnerId(db: Db, businessId: string, partnerPatientId: string): Promise<PatientRow | undefined> {
  return db
    .selectFrom('patients')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('partner_patient_id', '=', partnerPatientId)
    .executeTakeFirst();
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

/**
 * Sent with the transaction's next statement (writeWithNext); when the business already has a patient
 * with the row's partner id, the unique index fails that statement.
 */
export function insertPatient(db: Db, row: PatientRow): Promise<void> {
  return writeWithNext(db, db.insertInto('patients').values(row));
}

export async function updatePatient(db: Db, businessId: string, id: string, changes: PatientChanges): Promise<void> {
  await db.updateTable('patients').set(changes).where('business_id', '=', businessId).where('id', '=', id).execute();
}

export interface ListQuery {
  /** Created at or after (ms). */
  createdFrom?: number;
  includeArchived: boolean;
  limit: number;
  offset: number;
}

/** The business's patients by creation (the listing index), merged ones left out. */
export async function listPatients(db: Db, businessId: string, query: ListQuery): Promise<PatientRow[]> {
  let select = db
    .selectFrom('patients')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('merged_into', 'is', null)
    .where('erased_at', 'is', null);
  if (query.createdFrom !== undefined) select = select.where('created_at', '>=', query.createdFrom);
  if (!query.includeArchived) select = select.where('archived_at', 'is', null);
  return select.orderBy('created_at').orderBy('id').limit(query.limit).offset(query.offset).execute();
}

/** Every patient of the business on `column` = `value` (a family shares a mobile number), oldest first. */
export async function findAllBy(
  db: Db,
  businessId: string,
  column: 'mobile' | 'abha_number' | 'abha_address',
  value: string,
  includeArchived: boolean,
): Promise<PatientRow[]> {
  return db
    .selectFrom('patients')
    .selectAll()
    .where('business_id', '=', businessId)
    .where(column, '=', value)
    .where('merged_into', 'is', null)
    .$if(!includeArchived, (q) => q.where('archived_at', 'is', null))
    .orderBy('created_at')
    .orderBy('id')
    .limit(200)
    .execute();
}

/**
 * The lock of the records kept under a patient's key (cases and push devices name a patient by its
 * key, see PatientService.canonicalRef). PostgreSQL: an advisory lock held to the end of the
 * transaction, exclusive for writes and shared for the cases' listings. Being advisory, it takes no
 * transaction id, so a listing stays a read-only transaction (no WAL flush at commit). Two hashed keys
 * make unrelated patients collide rarely, and a collision only makes one wait for the other. SQLite:
 * one transaction at a time already.
 */
export async function lockRecords(trx: Db, businessId: string, patientRef: string, mode: 'write' | 'listing'): Promise<void> {
  if (!isPostgres(trx)) return;
  const keys = sql`hashtext(${`cases:${businessId}`}), hashtext(${patientRef})`;
  await (mode === 'write' ? sql`select pg_advisory_xact_lock(${keys})` : sql`select pg_advisory_xact_lock_shared(${keys})`).execute(trx);
}

/** Patients merged into `from` are merged into `to` from now on. */
export async function repointMerged(db: Db, businessId: string, from: string, to: string, now: number): Promise<void> {
  await db
    .updateTable('patients')
    .set({ merged_into: to, updated_at: now })
    .where('business_id', '=', businessId)
    .where('merged_into', '=', from)
    .execute();
}

/** The patients merged into `survivorId` (their records moved to it; their rows keep what they held). */
export async function findMergedInto(db: Db, businessId: string, survivorId: string): Promise<PatientRow[]> {
  return db.selectFrom('patients').selectAll().where('business_id', '=', businessId).where('merged_into', '=', survivorId).orderBy('id').execute();
}

/** An erased patient by its service id, or (`erasedRef`) by the digest of the partner id it had. */
export async function findErased(db: Db, businessId: string, id: string | null, erasedRef: string | null): Promise<PatientRow | undefined> {
  if (id === null && erasedRef === null) return undefined;
  return db
    .selectFrom('patients')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('erased_at', 'is not', null)
    .where((eb) => eb.or([...(id === null ? [] : [eb('id', '=', id)]), ...(erasedRef === null ? [] : [eb('erased_ref', '=', erasedRef)])]))
    .orderBy('erased_at', 'desc')
    .limit(1)
    .executeTakeFirst();
}
