import type { Kysely } from 'kysely';

/**
 * A document file's thumbnail (src/modules/documents/thumbnails.ts): a small JPEG made by a job once
 * the file is stored, kept by a file store as files are, under a key of its own.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('document_files').addColumn('thumbnail_store', 'text').execute();
  await db.schema.alterTable('document_files').addColumn('thumbnail_key', 'text').execute();
  await db.schema.alterTable('document_files').addColumn('thumbnail_size', 'bigint').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ['thumbnail_size', 'thumbnail_key', 'thumbnail_store'])
    await db.schema.alterTable('document_files').dropColumn(column).execute();
}
