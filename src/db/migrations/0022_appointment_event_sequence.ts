import { sql, type Kysely } from 'kysely';

/**
 * An appointment keeps the number of its last event: a change that records the next one writes it in
 * its own update of the locked row, instead of reading the key's last number from the events table
 * while holding the lock. Filled from the events recorded so far.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('appointments')
    .addColumn('event_sequence', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`update appointments set event_sequence = coalesce(
      (select max(e.sequence) from events e
        where e.business_id = appointments.business_id and e.ordering_key = 'appointment:' || appointments.id),
      0)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('appointments').dropColumn('event_sequence').execute();
}
