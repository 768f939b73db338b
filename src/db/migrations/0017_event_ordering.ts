import { sql, type Kysely } from 'kysely';

/**
 * Ordered events and their deliveries. An event of one appointment (or one patient's cases) carries
 * an ordering key and a sequence number, unique per key; the jobs that dispatch and deliver it carry
 * the key (per subscription for deliveries) and the number, and a job is claimed only once no earlier
 * job of its key is pending or running. A subscription remembers since when its attempts fail, so
 * one failing for too long is disabled.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('events').addColumn('ordering_key', 'text').execute();
  await db.schema.alterTable('events').addColumn('sequence', 'bigint').execute();
  // The next number of a key is read from here; NULL keys never collide.
  await db.schema.createIndex('events_ordering_idx').on('events').columns(['business_id', 'ordering_key', 'sequence']).unique().execute();

  await db.schema.alterTable('jobs').addColumn('ordering_key', 'text').execute();
  await db.schema.alterTable('jobs').addColumn('ordering_seq', 'bigint').execute();
  // The claim's look for an earlier unsettled job of the same key: only those are indexed, so the
  // look costs one probe however many settled jobs the key has.
  await sql`create index jobs_ordering_idx on jobs (kind, ordering_key, ordering_seq)
    where ordering_key is not null and status in ('pending', 'running')`.execute(db);

  await db.schema.alterTable('webhook_subscriptions').addColumn('failing_since', 'bigint').execute();
  // An event's deliveries, for GET .../events/{event_id}.
  await db.schema.createIndex('webhook_deliveries_by_event_idx').on('webhook_deliveries').column('event_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_by_event_idx').execute();
  await db.schema.alterTable('webhook_subscriptions').dropColumn('failing_since').execute();
  await db.schema.dropIndex('jobs_ordering_idx').execute();
  await db.schema.alterTable('jobs').dropColumn('ordering_seq').execute();
  await db.schema.alterTable('jobs').dropColumn('ordering_key').execute();
  await db.schema.dropIndex('events_ordering_idx').execute();
  await db.schema.alterTable('events').dropColumn('sequence').execute();
  await db.schema.alterTable('events').dropColumn('ordering_key').execute();
}
