/**
 * SQL of patients, one record per person per business, matched by the partner's `partner_patient_id`.
 * Other modules reach patients through service.ts. Every write of a patient goes through
 * `insertPatient`, `upsertByPartnerId` or `updatePatient`.
 */
import type { Db } from '../../db/index.ts';
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
    .limit(2)
    .execute();
  return rows.find((row) => row.id === id) ?? rows[0];
}

export async function findById(db: Db, businessId: string, id: string): Promise<PatientRow | undefined> {
  return db.selectFrom('patients').selectAll().where('business_id', '=', businessId).where('id', '=', id).executeTakeFirst();
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

/** Fails on the unique index when the business already has a patient with the row's partner id. */
export async function insertPatient(db: Db, row: PatientRow): Promise<void> {
  await db.insertInto('patients').values(row).execute();
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
  let select = db.selectFrom('patients').selectAll().where('business_id', '=', businessId).where('merged_into', 'is', null);
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
 * Records that name the patient by its key (cases' and push devices' X-Pt-Id) follow a change of key.
 * A case whose id is already kept under the new key stays under the old one (kept, not overwritten).
 * Moved cases take the current second as updated_at (never less than they had), so that a sync of
 * the new key lists them.
 */
export async function moveRefs(db: Db, businessId: string, from: string, to: string): Promise<void> {
  const second = Math.floor(Date.now() / 1000) * 1000;
  await db
    .updateTable('cases')
    .set((eb) => ({
      patient_ref: to,
      updated_at: eb.case().when('cases.updated_at', '>', second).then(eb.ref('cases.updated_at')).else(second).end(),
    }))
    .where('cases.business_id', '=', businessId)
    .where('cases.patient_ref', '=', from)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('cases as taken')
            .select('taken.id')
            .where('taken.business_id', '=', businessId)
            .where('taken.patient_ref', '=', to)
            .whereRef('taken.id', '=', 'cases.id'),
        ),
      ),
    )
    .execute();
  await db.updateTable('push_devices').set({ patient_ref: to }).where('business_id', '=', businessId).where('patient_ref', '=', from).execute();
}
