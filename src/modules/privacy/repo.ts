/**
 * SQL of a patient's rights: the exports' rows, and the reads and writes of an export and an erasure
 * across the tables that hold a patient's data. Those tables belong to other modules; the patient
 * record and its search keys are changed through PatientService, the rest with small statements of
 * our own, all scoped by business.
 */
import { sql, type Insertable, type Selectable } from 'kysely';
import type { Db } from '../../db/index.ts';
import type { AccessLogTable, Database, EventsTable, PrivacyExportsTable } from '../../db/schema.ts';

export type ExportRow = Selectable<PrivacyExportsTable>;

/** Where a patient's records are: its service ids (a survivor's and its merged duplicates') and the keys cases and devices name it by. */
export interface Holder {
  businessId: string;
  patientIds: string[];
  /** Every id the patients went by (service and partner ids): cases, devices, notifications and the access log name them so. */
  refs: string[];
}

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

/* ---- what the business holds about a patient ---- */

/** The tables that hold a patient's rows, by the column that names the patient and the order they are listed in. */
const HELD = {
  appointments: { by: 'patient_id', order: 'start_time' },
  reviews: { by: 'patient_id', order: 'created_at' },
  cases: { by: 'patient_ref', order: 'created_at' },
  push_devices: { by: 'patient_ref', order: 'created_at' },
  push_notifications: { by: 'patient_ref', order: 'created_at' },
} as const;

/** The rows of `table` that name the holder's patients (by service id, or by any id it went by), in their order. */
export async function heldIn<T extends keyof typeof HELD>(db: Db, table: T, holder: Holder): Promise<Selectable<Database[T]>[]> {
  const { by, order } = HELD[table];
  const ids = by === 'patient_id' ? holder.patientIds : holder.refs;
  const { rows } = await sql<Selectable<Database[T]>>`select * from ${sql.table(table)} where business_id = ${holder.businessId}
    and ${sql.ref(by)} in (${sql.join(ids)}) order by ${sql.ref(order)}, id`.execute(db);
  return rows;
}

/** `value` matched literally by LIKE ... ESCAPE '!'. */
function likeEscaped(value: string): string {
  return value.replace(/[!%_]/g, (c) => `!${c}`);
}

/** The ordering keys of the events about the patient: its cases' (by key) and its appointments'. */
function eventKeys(holder: Holder, appointmentIds: string[]): string[] {
  return [...holder.refs.map((ref) => `patient:${ref}`), ...appointmentIds.map((id) => `appointment:${id}`)];
}

/**
 * The events about the patient: those of its cases and appointments (by ordering key), and the
 * unordered ones naming one of its ids (a review request, a merge).
 */
export async function eventsOf(db: Db, holder: Holder, appointmentIds: string[]): Promise<Selectable<EventsTable>[]> {
  const keys = eventKeys(holder, appointmentIds);
  return db
    .selectFrom('events')
    .selectAll()
    .where('business_id', '=', holder.businessId)
    .where((eb) =>
      eb.or([
        eb('ordering_key', 'in', keys),
        eb.and([
          eb('ordering_key', 'is', null),
          eb.or(holder.refs.map((ref) => sql<boolean>`payload like ${`%${likeEscaped(JSON.stringify(ref))}%`} escape '!'`)),
        ]),
      ]),
    )
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** The access log's entries naming the patient, as patient or as the patient record acted on, in chain order. */
export async function accessLogOf(db: Db, holder: Holder): Promise<Selectable<AccessLogTable>[]> {
  return db
    .selectFrom('access_log')
    .selectAll()
    .where('business_id', '=', holder.businessId)
    .where((eb) => eb.or([eb('patient_ref', 'in', holder.refs), eb.and([eb('resource_type', '=', 'patient'), eb('resource_id', 'in', holder.refs)])]))
    .orderBy('seq')
    .orderBy('at')
    .execute();
}

/* ---- erasure ---- */

/** Appointments keep their ids, clinic, doctor, times, status, mode and token; what they said of the person goes. */
export async function anonymiseAppointments(db: Db, holder: Holder, now: number): Promise<number> {
  const result = await db
    .updateTable('appointments')
    .set({
      patient_details: '{}',
      custom_attributes: '{}',
      display_meta: '{}',
      partner_meta: '{}',
      video_connect: null,
      notes: null,
      updated_at: now,
    })
    .where('business_id', '=', holder.businessId)
    .where('patient_id', 'in', holder.patientIds)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Reviews keep their rating (the practice's figures); the comment goes. */
export async function anonymiseReviews(db: Db, holder: Holder): Promise<number> {
  const result = await db
    .updateTable('reviews')
    .set({ comment: null })
    .where('business_id', '=', holder.businessId)
    .where('patient_id', 'in', holder.patientIds)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Cases, tombstones included, deleted. */
export async function deleteCases(db: Db, holder: Holder): Promise<number> {
  const result = await db.deleteFrom('cases').where('business_id', '=', holder.businessId).where('patient_ref', 'in', holder.refs).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Devices deleted; notifications sent to the patient deleted with their delivery rows. */
export async function deleteDevices(db: Db, holder: Holder): Promise<{ devices: number; notifications: number }> {
  const notifications = await db
    .selectFrom('push_notifications')
    .select('id')
    .where('business_id', '=', holder.businessId)
    .where('patient_ref', 'in', holder.refs)
    .execute();
  const ids = notifications.map((row) => row.id);
  if (ids.length > 0) {
    await db.deleteFrom('push_deliveries').where('business_id', '=', holder.businessId).where('notification_id', 'in', ids).execute();
    await db.deleteFrom('push_notifications').where('business_id', '=', holder.businessId).where('id', 'in', ids).execute();
  }
  const devices = await db
    .deleteFrom('push_devices')
    .where('business_id', '=', holder.businessId)
    .where('patient_ref', 'in', holder.refs)
    .executeTakeFirst();
  return { devices: Number(devices.numDeletedRows), notifications: ids.length };
}

export async function setEventPayload(db: Db, id: string, payload: string): Promise<void> {
  await db.updateTable('events').set({ payload }).where('id', '=', id).execute();
}

export async function deleteExportsOf(db: Db, holder: Holder): Promise<number> {
  const result = await db
    .deleteFrom('privacy_exports')
    .where('business_id', '=', holder.businessId)
    .where('patient_id', 'in', holder.patientIds)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
