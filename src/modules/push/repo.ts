/** SQL of the push module; every statement is scoped by business_id. */
import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../../db/index.ts';
import type { PushCredentialsTable, PushDeliveriesTable, PushDeliveryStatus, PushDevicesTable, PushNotificationsTable } from '../../db/schema.ts';

export type CredentialsRow = Selectable<PushCredentialsTable>;
export type DeviceRow = Selectable<PushDevicesTable>;
export type NotificationRow = Selectable<PushNotificationsTable>;
export type DeliveryRow = Selectable<PushDeliveriesTable>;

// ---- Credentials -----------------------------------------------------------------------------

export async function upsertCredentials(db: Db, row: Insertable<PushCredentialsTable>): Promise<void> {
  await db
    .insertInto('push_credentials')
    .values(row)
    .onConflict((oc) =>
      oc.column('business_id').doUpdateSet({
        sealed: row.sealed,
        project_id: row.project_id,
        client_email: row.client_email,
        private_key_id: row.private_key_id,
        updated_at: row.updated_at,
      }),
    )
    .execute();
}

export async function getCredentials(db: Db, businessId: string): Promise<CredentialsRow | undefined> {
  return db.selectFrom('push_credentials').selectAll().where('business_id', '=', businessId).executeTakeFirst();
}

export async function deleteCredentials(db: Db, businessId: string): Promise<boolean> {
  const result = await db.deleteFrom('push_credentials').where('business_id', '=', businessId).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

// ---- Devices ---------------------------------------------------------------------------------

/** Insert, or replace every field of the business's device with the same `did`. */
export async function upsertDevice(db: Db, row: Insertable<PushDevicesTable>): Promise<void> {
  const { id: _id, business_id: _b, did: _d, created_at: _c, ...changes } = row;
  await db
    .insertInto('push_devices')
    .values(row)
    .onConflict((oc) => oc.columns(['business_id', 'did']).doUpdateSet(changes))
    .execute();
}

export async function deleteDevice(db: Db, businessId: string, did: string): Promise<boolean> {
  const result = await db.deleteFrom('push_devices').where('business_id', '=', businessId).where('did', '=', did).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Drops a device whose token FCM refused, unless it re-registered with a new token meanwhile. */
export async function dropDevice(db: Db, businessId: string, did: string, fcmToken: string): Promise<void> {
  await db.deleteFrom('push_devices').where('business_id', '=', businessId).where('did', '=', did).where('fcm_token', '=', fcmToken).execute();
}

export async function getDevice(db: Db, businessId: string, did: string): Promise<DeviceRow | undefined> {
  return db.selectFrom('push_devices').selectAll().where('business_id', '=', businessId).where('did', '=', did).executeTakeFirst();
}

export async function devicesByDid(db: Db, businessId: string, dids: string[]): Promise<string[]> {
  if (dids.length === 0) return [];
  const rows = await db.selectFrom('push_devices').select('did').where('business_id', '=', businessId).where('did', 'in', dids).execute();
  return rows.map((r) => r.did);
}

/** A patient's devices, the most recently registered `limit` of them (a merge may have joined more), by did. */
export async function devicesOfPatient(db: Db, businessId: string, patientRef: string, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('push_devices')
    .select('did')
    .where('business_id', '=', businessId)
    .where('patient_ref', '=', patientRef)
    .orderBy('updated_at', 'desc')
    .orderBy('did')
    .limit(limit)
    .execute();
  return rows.map((r) => r.did).sort();
}

/** Deletes a patient's devices beyond the `keep` most recently registered; answers how many. */
export async function dropDevicesBeyond(db: Db, businessId: string, patientRef: string, keep: number): Promise<number> {
  const kept = db
    .selectFrom('push_devices')
    .select('id')
    .where('business_id', '=', businessId)
    .where('patient_ref', '=', patientRef)
    .orderBy('updated_at', 'desc')
    .orderBy('did')
    .limit(keep);
  const result = await db
    .deleteFrom('push_devices')
    .where('business_id', '=', businessId)
    .where('patient_ref', '=', patientRef)
    .where('id', 'not in', kept)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

// ---- Notifications and deliveries ------------------------------------------------------------

export async function insertNotification(db: Db, row: Insertable<PushNotificationsTable>, dids: string[]): Promise<void> {
  await db.insertInto('push_notifications').values(row).execute();
  // Chunks keep every insert under SQLite's and PostgreSQL's bound-parameter limits.
  for (let i = 0; i < dids.length; i += 200) {
    await db
      .insertInto('push_deliveries')
      .values(
        dids.slice(i, i + 200).map((did) => ({
          notification_id: row.id,
          did,
          business_id: row.business_id,
          status: 'pending' as const,
          error: null,
          fcm_message: null,
          updated_at: row.created_at,
        })),
      )
      .execute();
  }
}

export async function getNotification(db: Db, businessId: string, id: string): Promise<NotificationRow | undefined> {
  return db.selectFrom('push_notifications').selectAll().where('business_id', '=', businessId).where('id', '=', id).executeTakeFirst();
}

export async function listDeliveries(db: Db, businessId: string, notificationId: string): Promise<DeliveryRow[]> {
  return db
    .selectFrom('push_deliveries')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('notification_id', '=', notificationId)
    .orderBy('did')
    .execute();
}

export async function getDelivery(db: Db, businessId: string, notificationId: string, did: string): Promise<DeliveryRow | undefined> {
  return db
    .selectFrom('push_deliveries')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('notification_id', '=', notificationId)
    .where('did', '=', did)
    .executeTakeFirst();
}

/** Records an attempt's outcome; only a pending delivery changes, so a repeated job cannot undo a result. */
export async function settleDelivery(
  db: Db,
  businessId: string,
  notificationId: string,
  did: string,
  change: { status: PushDeliveryStatus; error: string | null; fcmMessage?: string | null },
): Promise<boolean> {
  const result = await db
    .updateTable('push_deliveries')
    .set((eb) => ({
      status: change.status,
      error: change.error,
      fcm_message: change.fcmMessage ?? null,
      attempts: eb('attempts', '+', 1),
      updated_at: Date.now(),
    }))
    .where('business_id', '=', businessId)
    .where('notification_id', '=', notificationId)
    .where('did', '=', did)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** A transient failure: the delivery stays pending with the latest error. */
export async function noteRetry(db: Db, businessId: string, notificationId: string, did: string, error: string): Promise<void> {
  await db
    .updateTable('push_deliveries')
    .set((eb) => ({ error, attempts: eb('attempts', '+', 1), updated_at: Date.now() }))
    .where('business_id', '=', businessId)
    .where('notification_id', '=', notificationId)
    .where('did', '=', did)
    .where('status', '=', 'pending')
    .execute();
}

// ---- The patient compartment (src/compartment.ts) --------------------------------------------

/** Devices and notifications kept under the patient's key follow a change of key; answers how many devices moved. */
export async function moveToKey(db: Db, businessId: string, from: string, to: string): Promise<number> {
  const devices = await db
    .updateTable('push_devices')
    .set({ patient_ref: to })
    .where('business_id', '=', businessId)
    .where('patient_ref', '=', from)
    .executeTakeFirst();
  await db.updateTable('push_notifications').set({ patient_ref: to }).where('business_id', '=', businessId).where('patient_ref', '=', from).execute();
  return Number(devices.numUpdatedRows);
}

export async function devicesUnder(db: Db, businessId: string, refs: string[]): Promise<DeviceRow[]> {
  if (refs.length === 0) return [];
  return db
    .selectFrom('push_devices')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('patient_ref', 'in', refs)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export async function notificationsUnder(db: Db, businessId: string, refs: string[]): Promise<NotificationRow[]> {
  if (refs.length === 0) return [];
  return db
    .selectFrom('push_notifications')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('patient_ref', 'in', refs)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/**
 * The devices kept under the keys deleted, and the notifications sent to the patient: those kept under
 * the keys, and those sent by device id to the patient's devices alone, deleted with their delivery
 * rows. A notification sent by device id to other devices too loses only the patient's delivery rows
 * (it was not theirs alone).
 */
export async function deleteUnder(db: Db, businessId: string, refs: string[]): Promise<void> {
  if (refs.length === 0) return;
  const dids = (
    await db.selectFrom('push_devices').select('did').where('business_id', '=', businessId).where('patient_ref', 'in', refs).execute()
  ).map((row) => row.did);
  const byKey = await db
    .selectFrom('push_notifications')
    .select('id')
    .where('business_id', '=', businessId)
    .where('patient_ref', 'in', refs)
    .execute();
  const ids = new Set(byKey.map((row) => row.id));
  if (dids.length > 0) {
    const sentToDevices = await db
      .selectFrom('push_deliveries as mine')
      .select('mine.notification_id')
      .distinct()
      .where('mine.business_id', '=', businessId)
      .where('mine.did', 'in', dids)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('push_deliveries as other')
              .select('other.did')
              .where('other.business_id', '=', businessId)
              .whereRef('other.notification_id', '=', 'mine.notification_id')
              .where('other.did', 'not in', dids),
          ),
        ),
      )
      .execute();
    for (const row of sentToDevices) ids.add(row.notification_id);
    await db.deleteFrom('push_deliveries').where('business_id', '=', businessId).where('did', 'in', dids).execute();
  }
  for (let i = 0, list = [...ids]; i < list.length; i += 200) {
    const chunk = list.slice(i, i + 200);
    await db.deleteFrom('push_deliveries').where('business_id', '=', businessId).where('notification_id', 'in', chunk).execute();
    await db.deleteFrom('push_notifications').where('business_id', '=', businessId).where('id', 'in', chunk).execute();
  }
  await db.deleteFrom('push_devices').where('business_id', '=', businessId).where('patient_ref', 'in', refs).execute();
}
