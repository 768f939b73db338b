import { sql, type Kysely } from 'kysely';

/**
 * Retention (src/modules/retention/): an index for each rule's look for old rows, so that a batch reads
 * the rows it deletes and no others, and the anchor of each access log chain whose oldest entries were
 * pruned (the last pruned entry's seq and hash), from which `cps audit verify` starts. The prune job of
 * the idempotency module is gone (the retention job prunes expired keys): its queued jobs go with it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('access_log_pruned')
    .addColumn('business_id', 'text', (c) => c.primaryKey())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .addColumn('pruned_at', 'bigint', (c) => c.notNull())
    .execute();
  // Partial where only some rows can ever be pruned, so rows that stay cost no index entry.
  await sql`create index jobs_finished_idx on jobs (status, finished_at) where finished_at is not null`.execute(db);
  await db.schema.createIndex('events_created_idx').on('events').column('created_at').execute();
  await sql`create index webhook_deliveries_settled_idx on webhook_deliveries (updated_at) where status <> 'pending'`.execute(db);
  await sql`create index push_deliveries_settled_idx on push_deliveries (updated_at) where status <> 'pending'`.execute(db);
  await db.schema.createIndex('push_notifications_created_idx').on('push_notifications').column('created_at').execute();
  await db.schema.createIndex('refresh_tokens_expires_idx').on('refresh_tokens').column('expires_at').execute();
  await sql`create index refresh_tokens_revoked_idx on refresh_tokens (revoked_at) where revoked_at is not null`.execute(db);
  await sql`create index cases_tombstones_idx on cases (updated_at) where status = 'D'`.execute(db);
  await db.schema.createIndex('schedule_tokens_session_idx').on('schedule_tokens').column('session_start').execute();
  await db.deleteFrom('jobs').where('kind', '=', 'idempotency.prune').where('status', '=', 'pending').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const index of [
    'schedule_tokens_session_idx',
    'cases_tombstones_idx',
    'refresh_tokens_revoked_idx',
    'refresh_tokens_expires_idx',
    'push_notifications_created_idx',
    'push_deliveries_settled_idx',
    'webhook_deliveries_settled_idx',
    'events_created_idx',
    'jobs_finished_idx',
  ]) {
    await db.schema.dropIndex(index).execute();
  }
  await db.schema.dropTable('access_log_pruned').execute();
}
