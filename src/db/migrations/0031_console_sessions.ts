import type { Kysely } from 'kysely';

/**
 * The browser console's sessions (modules/console): a row per signed-in browser, keyed by the SHA-256 of
 * the cookie's random token (the token itself is never stored). An operator's session names no client;
 * a business client's names its API client, whose business and scopes are read at each request.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('console_sessions')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('console_sessions_last_seen_idx').on('console_sessions').column('last_seen_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('console_sessions').execute();
}
