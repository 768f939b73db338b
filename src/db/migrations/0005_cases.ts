import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../dialect.ts';

/**
 * Patient case records (contract 6). `cases` is keyed by (business, patient_ref, id); listing walks
 * `cases_sync_idx` on (business, patient_ref, updated_at, id), which serves the keyset page, the
 * `u_at__gt` filter and the ordering in one index range scan, and finds a patient's latest
 * updated_at for the next write (see src/modules/cases/service.ts).
 */
export async function up(db: Kysely<any>): Promise<void> {
  // Case ids are compared in the keyset; byte order ("C") keeps paging identical on both dialects.
  const byteOrder = isPostgres(db) ? sql`collate "C"` : sql``;

  await db.schema
    .createTable('cases')
    .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id').onDelete('cascade'))
    .addColumn('patient_ref', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull().modifyFront(byteOrder))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('display_name', 'text')
    .addColumn('type', 'text')
    .addColumn('hi_type', 'text')
    .addColumn('partner_meta', 'text')
    .addColumn('occurred_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('cases_pk', ['business_id', 'patient_ref', 'id'])
    .execute();
  await db.schema.createIndex('cases_sync_idx').on('cases').columns(['business_id', 'patient_ref', 'updated_at', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('cases').execute();
}
