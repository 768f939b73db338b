import type { Kysely } from 'kysely';

/**
 * A client secret's rotation: the secret replaced keeps working until a time the operator chose
 * (`cps client rotate --grace`, the admin API), so the client's systems can move to the new one.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_clients').addColumn('previous_secret_hash', 'text').execute();
  await db.schema.alterTable('api_clients').addColumn('previous_secret_expires_at', 'bigint').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ['previous_secret_expires_at', 'previous_secret_hash']) await db.schema.alterTable('api_clients').dropColumn(column).execute();
}
