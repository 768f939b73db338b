import type { Kysely } from 'kysely';

/**
 * The token issuers (CPS_PUBLIC_URL) of the processes sharing this database, each with the last time a
 * process announced it (auth/issuers.ts): a start that sees another issuer in use warns at once.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('token_issuers')
    .addColumn('issuer', 'text', (c) => c.primaryKey())
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('seen_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('token_issuers').execute();
}
