import type { Kysely } from 'kysely';

/**
 * A business's delivery attempts by time, for its usage per day (the admin API and the console's
 * operator page): without it the count read every attempt of every business.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('webhook_delivery_attempts_business_idx')
    .on('webhook_delivery_attempts')
    .columns(['business_id', 'started_at'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('webhook_delivery_attempts_business_idx').execute();
}
