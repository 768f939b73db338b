import type { Kysely } from 'kysely';

/**
 * A key of its own per stored document file, sealed under the master key (security/encryption.ts):
 * the chunks are encrypted with it, so rotating the master key re-seals one short value per file
 * (security/stored-secrets.ts), never the files' bytes.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('document_file_keys')
    .addColumn('storage_key', 'text', (c) => c.primaryKey())
    .addColumn('sealed_key', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('document_file_keys').execute();
}
