import { sql, type Kysely } from 'kysely';

/**
 * The access log (docs/4-operations.md "Audit log"): one row per operation on patient data. A row is chained
 * (seq, prev_hash, hash set) after it is written, in order per business; access_log_heads holds each
 * chain's last link, so that deleting the newest rows is detected too, and its row is the lock that
 * orders the chain across processes.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('access_log')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('business_id', 'text', (c) => c.notNull())
    .addColumn('seq', 'bigint')
    .addColumn('prev_hash', 'text')
    .addColumn('hash', 'text')
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('client_id', 'text')
    .addColumn('operation', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('resource_type', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text')
    .addColumn('patient_ref', 'text')
    .addColumn('status', 'integer')
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('source_address', 'text')
    .addColumn('filter', 'text')
    .addColumn('result_count', 'integer')
    .addColumn('with_change', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('access_log_chain_idx').on('access_log').columns(['business_id', 'seq']).unique().execute();
  await sql`create index access_log_unchained_idx on access_log (business_id, at) where seq is null`.execute(db);
  await db.schema.createIndex('access_log_patient_idx').on('access_log').columns(['business_id', 'patient_ref', 'seq']).execute();
  // Filters by client, resource or time read the business's chain in order (a request for a patient's
  // accesses is the one the law names; each index more is a write more per entry).
  await db.schema
    .createTable('access_log_heads')
    .addColumn('business_id', 'text', (c) => c.primaryKey())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('access_log_heads').execute();
  await db.schema.dropTable('access_log').execute();
}
