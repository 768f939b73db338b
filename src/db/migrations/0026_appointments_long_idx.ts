import { sql, type Kysely } from 'kysely';

/**
 * The appointments longer than a day, by doctor and end: a slot's capacity check finds the ones that
 * began more than a day before it here (appointments' repo `holding`); the condition is written exactly
 * as the queries write it, so that both databases use the index.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index appointments_long_idx on appointments (business_id, doctor_id, end_time) where end_time - start_time > 86400000`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('appointments_long_idx').execute();
}
