import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../dialect.ts';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('events_business_idx').on('events').columns(['business_id', 'created_at']).execute();

  // Background jobs (src/jobs/queue.ts). status: pending, running, succeeded, failed.
  await db.schema
    .createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('business_id', 'text', (c) => c.references('businesses.id').onDelete('cascade'))
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('due_at', 'bigint', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    // null: the kind's default (its retry schedule's length + 1), so a changed schedule applies.
    .addColumn('max_attempts', 'integer')
    .addColumn('lease_until', 'bigint')
    .addColumn('locked_by', 'text')
    .addColumn('last_error', 'text')
    .addColumn('dedupe_key', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('finished_at', 'bigint')
    .execute();
  // Serves the claim (pending, kind, due_at), the expired-lease sweep (running, ...) and the depth gauge.
  await db.schema.createIndex('jobs_status_kind_due_idx').on('jobs').columns(['status', 'kind', 'due_at']).execute();
  // NULL keys never collide, so only jobs that ask for deduplication are deduplicated.
  await db.schema.createIndex('jobs_dedupe_idx').on('jobs').columns(['kind', 'dedupe_key']).unique().execute();
  await db.schema.createIndex('jobs_business_idx').on('jobs').columns(['business_id', 'created_at']).execute();

  // On SQLite one process runs the workers: the one holding this row's lease.
  await db.schema
    .createTable('job_locks')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();

  if (isPostgres(db)) {
    // Wakes the workers of every process when jobs due now are added; the notification is sent at
    // commit, so a rolled-back enqueue wakes nobody. Once per statement, so a batch costs one.
    // Jobs due later are found by the poll (the second of slack covers clock skew between the app
    // and the database); retryJob notifies for itself.
    await sql`
      CREATE FUNCTION cps_jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('cps_jobs', kind) FROM (
          SELECT DISTINCT kind FROM new_jobs
          WHERE status = 'pending' AND due_at <= (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 1000
        ) AS due;
        RETURN NULL;
      END $$`.execute(db);
    await sql`
      CREATE TRIGGER jobs_notify AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_jobs
      FOR EACH STATEMENT EXECUTE FUNCTION cps_jobs_notify()`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) await sql`DROP FUNCTION IF EXISTS cps_jobs_notify() CASCADE`.execute(db);
  await db.schema.dropTable('job_locks').execute();
  await db.schema.dropTable('jobs').execute();
  await db.schema.dropTable('events').execute();
}
