import type { Kysely } from 'kysely';

/**
 * A business's access log entries by time, with their status, for its usage per day (the admin API and the
 * console's operator page): without it the count read every entry the business ever had through the chain's
 * index and each entry's row for its time and status.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('access_log_business_at_idx').on('access_log').columns(['business_id', 'at', 'status']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('access_log_business_at_idx').execute();
}
