/** SQL of a patient's rights: the exports' rows. The rest of a patient's data is reached through the patient compartment. */
import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../../db/index.ts';
import type { PrivacyExportsTable } from '../../db/schema.ts';

export type ExportRow = Selectable<PrivacyExportsTable>;

/* ---- exports ---- */

export async function insertExport(db: Db, row: Insertable<PrivacyExportsTable>): Promise<void> {
  await db.insertInto('privacy_exports').values(row).execute();
}

export async function findExport(db: Db, businessId: string, id: string): Promise<ExportRow | undefined> {
  return db.selectFrom('privacy_exports').selectAll().where('business_id', '=', businessId).where('id', '=', id).executeTakeFirst();
}

export async function findExportById(db: Db, id: string): Promise<ExportRow | undefined> {
  return db.selectFrom('privacy_exports').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The patient's export still pending or ready and not expired, newest first. */
export async function findLiveExport(db: Db, businessId: string, patientId: string, now: number): Promise<ExportRow | undefined> {
  return db
    .selectFrom('privacy_exports')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('patient_id', '=', patientId)
    .where('status', 'in', ['pending', 'ready'])
    .where('expires_at', '>', now)
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** Stores a pending export's document; false when the export is gone or no longer pending (erased meanwhile). */
export async function completeExport(db: Db, id: string, document: string, readyAt: number, expiresAt: number): Promise<boolean> {
  const result = await db
    .updateTable('privacy_exports')
    .set({ status: 'ready', document, ready_at: readyAt, expires_at: expiresAt })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function failExport(db: Db, id: string): Promise<void> {
  await db.updateTable('privacy_exports').set({ status: 'failed' }).where('id', '=', id).where('status', '=', 'pending').execute();
}

export async function markDownloaded(db: Db, id: string, at: number): Promise<void> {
  await db.updateTable('privacy_exports').set({ downloaded_at: at }).where('id', '=', id).where('downloaded_at', 'is', null).execute();
}

/* ---- the patient compartment (src/compartment.ts) ---- */

export async function deleteExportsOf(db: Db, businessId: string, patientIds: string[]): Promise<void> {
  if (patientIds.length === 0) return;
  await db.deleteFrom('privacy_exports').where('business_id', '=', businessId).where('patient_id', 'in', patientIds).execute();
}

/** The service ids of a business's patients not erased (merged duplicates too): the erasure record is matched against them. */
export async function unerasedPatientIds(db: Db, businessId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('patients')
    .select('id')
    .where('business_id', '=', businessId)
    .where('erased_at', 'is', null)
    .orderBy('id')
    .execute();
  return rows.map((row) => row.id);
}
