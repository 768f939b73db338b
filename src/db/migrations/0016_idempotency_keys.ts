import type { Kysely } from 'kysely';

/**
 * Idempotency-Key records (src/modules/idempotency): one row per business and key, inserted by the
 * first request (the claim: the primary key lets one request of any process win), completed with its
 * response, deleted once expired.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id').onDelete('cascade'))
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    // A hash of the method, path, query, route-declared headers and body the key was first used with.
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    // The running request's claim (null once its response is stored) and how long it holds without renewal.
    .addColumn('claim', 'text')
    .addColumn('claimed_until', 'bigint')
    .addColumn('status', 'integer')
    .addColumn('content_type', 'text')
    // The response body, encrypted with the master key (it may hold a signing key or a patient's details).
    .addColumn('body', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['business_id', 'idempotency_key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_expires_idx').on('idempotency_keys').column('expires_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('idempotency_keys').execute();
}
