import type { Kysely } from 'kysely';

/**
 * A patient's rights (docs/4-operations.md "Export and erasure"): an erased patient keeps a row without personal
 * data (appointments still name it), marked by `erased_at`, with `erased_ref`, a keyed digest of the
 * partner's id it had, so that erasing it again by that id answers the same; and the exports of
 * patients' data, their documents encrypted at rest until they expire.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('patients').addColumn('erased_at', 'bigint').execute();
  await db.schema.alterTable('patients').addColumn('erased_ref', 'text').execute();
  await db.schema.createIndex('patients_erased_ref_idx').on('patients').columns(['business_id', 'erased_ref']).execute();
  await db.schema
    .createTable('privacy_exports')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id').onDelete('cascade'))
    .addColumn('patient_id', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('document', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('ready_at', 'bigint')
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('downloaded_at', 'bigint')
    .execute();
  await db.schema.createIndex('privacy_exports_patient_idx').on('privacy_exports').columns(['business_id', 'patient_id']).execute();
  await db.schema.createIndex('privacy_exports_expiry_idx').on('privacy_exports').columns(['expires_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('privacy_exports').execute();
  await db.schema.dropIndex('patients_erased_ref_idx').execute();
  await db.schema.alterTable('patients').dropColumn('erased_ref').execute();
  await db.schema.alterTable('patients').dropColumn('erased_at').execute();
}
