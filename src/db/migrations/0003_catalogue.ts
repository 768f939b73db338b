/**
 * The reference catalogue behind drug and lab search. It is global (not per business): every business
 * searches the same medicines and tests. `catalogue_meta.version` is bumped by every import batch and
 * each changed row records the version that changed it (`seq`), so every server process can poll one
 * cheap row and fetch only what changed.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('drugs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('name_key', 'text', (c) => c.notNull())
    .addColumn('maker_key', 'text', (c) => c.notNull())
    .addColumn('pack_key', 'text', (c) => c.notNull())
    .addColumn('manufacturer_name', 'text', (c) => c.notNull())
    .addColumn('product_type', 'text', (c) => c.notNull())
    .addColumn('product_sku', 'text')
    /** JSON [{salt, strength}] */
    .addColumn('composition', 'text', (c) => c.notNull())
    .addColumn('generic_name', 'text', (c) => c.notNull())
    .addColumn('generic_id', 'text', (c) => c.notNull())
    .addColumn('common_name', 'text', (c) => c.notNull())
    /** JSON object or null */
    .addColumn('action_class', 'text')
    .addColumn('is_otc', 'integer')
    .addColumn('discontinued', 'integer')
    .addColumn('soa', 'integer')
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('drugs_identity_idx').on('drugs').columns(['name_key', 'maker_key']).execute();
  await db.schema.createIndex('drugs_seq_idx').on('drugs').column('seq').execute();

  await db.schema
    .createTable('lab_tests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('name_key', 'text', (c) => c.notNull().unique())
    /** JSON string[] */
    .addColumn('abbreviations', 'text', (c) => c.notNull())
    .addColumn('category', 'text')
    .addColumn('description', 'text')
    .addColumn('preparation', 'text')
    .addColumn('specimen', 'text')
    .addColumn('loinc', 'text')
    .addColumn('price', 'double precision')
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('lab_tests_seq_idx').on('lab_tests').column('seq').execute();

  await db.schema
    .createTable('catalogue_meta')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('version', 'bigint', (c) => c.notNull())
    /** Hash of the built-in catalogue files last imported, so a start imports them only when they change. */
    .addColumn('builtin_hash', 'text')
    .execute();
  await db.insertInto('catalogue_meta').values({ id: 1, version: 0, builtin_hash: null }).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('catalogue_meta').execute();
  await db.schema.dropTable('lab_tests').execute();
  await db.schema.dropTable('drugs').execute();
}
