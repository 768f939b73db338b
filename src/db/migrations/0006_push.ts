import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // One set of FCM service-account credentials per business. `sealed` is the whole sa_key,
  // AES-256-GCM under CPS_MASTER_KEY with the business id as associated data; the clear columns
  // are the metadata GET /notification/push-creds shows, so reading them needs no decryption.
  await db.schema
    .createTable('push_credentials')
    .addColumn('business_id', 'text', (c) => c.primaryKey().references('businesses.id').onDelete('cascade'))
    .addColumn('sealed', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('client_email', 'text', (c) => c.notNull())
    .addColumn('private_key_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('push_devices')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id').onDelete('cascade'))
    .addColumn('did', 'text', (c) => c.notNull())
    .addColumn('fcm_token', 'text', (c) => c.notNull())
    .addColumn('app_version', 'text', (c) => c.notNull())
    .addColumn('app_id', 'text')
    .addColumn('app_platform', 'text')
    .addColumn('lang', 'text')
    .addColumn('os_version', 'text')
    .addColumn('user_hash', 'text')
    // X-Pt-Id as the partner sent it: the patient reference within the business.
    .addColumn('patient_ref', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('push_devices_business_did_key', ['business_id', 'did'])
    .execute();
  await db.schema.createIndex('push_devices_patient_idx').on('push_devices').columns(['business_id', 'patient_ref']).execute();

  await db.schema
    .createTable('push_notifications')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id').onDelete('cascade'))
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('data', 'text')
    .addColumn('patient_ref', 'text')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  // One row per target device: its outcome (pending, sent, failed, dropped).
  await db.schema
    .createTable('push_deliveries')
    .addColumn('notification_id', 'text', (c) => c.notNull().references('push_notifications.id').onDelete('cascade'))
    .addColumn('did', 'text', (c) => c.notNull())
    .addColumn('business_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('fcm_message', 'text')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('push_deliveries_pk', ['notification_id', 'did'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('push_deliveries').execute();
  await db.schema.dropTable('push_notifications').execute();
  await db.schema.dropTable('push_devices').execute();
  await db.schema.dropTable('push_credentials').execute();
}
