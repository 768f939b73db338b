import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../dialect.ts';

/**
 * Documents on patient records (src/modules/documents/). `documents` is keyed by (business, id) and
 * listed through `documents_sync_idx` on (business, patient_ref, updated_at, id), as cases are.
 * `document_files` holds each file's upload form, state and storage key; `document_file_chunks` holds
 * the bytes of the embedded store, encrypted, in chunks (one row each), so that every server process
 * on the database reads them without a shared disk.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const byteOrder = isPostgres(db) ? sql`collate "C"` : sql``;
  const bytes = isPostgres(db) ? 'bytea' : 'blob';

  await db.schema
    .createTable('documents')
    .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id').onDelete('cascade'))
    .addColumn('id', 'text', (c) => c.notNull().modifyFront(byteOrder))
    .addColumn('patient_ref', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('dt', 'text')
    .addColumn('document_date', 'bigint')
    .addColumn('tags', 'text')
    .addColumn('title', 'text')
    .addColumn('cases', 'text')
    .addColumn('task', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('upload_until', 'bigint')
    .addPrimaryKeyConstraint('documents_pk', ['business_id', 'id'])
    .execute();
  await db.schema.createIndex('documents_sync_idx').on('documents').columns(['business_id', 'patient_ref', 'updated_at', 'id']).execute();
  await db.schema.createIndex('documents_pending_idx').on('documents').columns(['upload_until']).execute();

  await db.schema
    .createTable('document_files')
    .addColumn('business_id', 'text', (c) => c.notNull())
    .addColumn('document_id', 'text', (c) => c.notNull())
    .addColumn('idx', 'integer', (c) => c.notNull())
    .addColumn('form_id', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('declared_size', 'bigint')
    .addColumn('size', 'bigint')
    .addColumn('file_name', 'text')
    .addColumn('store', 'text')
    .addColumn('storage_key', 'text')
    .addColumn('claimed_at', 'bigint')
    .addColumn('stored_at', 'bigint')
    .addPrimaryKeyConstraint('document_files_pk', ['business_id', 'document_id', 'idx'])
    .addForeignKeyConstraint('document_files_document_fk', ['business_id', 'document_id'], 'documents', ['business_id', 'id'], (c) =>
      c.onDelete('cascade'),
    )
    .execute();
  await db.schema.createIndex('document_files_state_idx').on('document_files').columns(['state', 'claimed_at']).execute();

  await db.schema
    .createTable('document_file_chunks')
    .addColumn('storage_key', 'text', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('data', bytes, (c) => c.notNull())
    .addPrimaryKeyConstraint('document_file_chunks_pk', ['storage_key', 'seq'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('document_file_chunks').execute();
  await db.schema.dropTable('document_files').execute();
  await db.schema.dropTable('documents').execute();
}
