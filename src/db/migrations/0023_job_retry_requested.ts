import type { Kysely } from 'kysely';

/** When a retry was asked while the job's attempt was running: it takes effect as that attempt ends. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('retry_requested_at', 'bigint').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('jobs').dropColumn('retry_requested_at').execute();
}
