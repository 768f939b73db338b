import type { Kysely } from 'kysely';

/**
 * Doctors' schedules per clinic (weekly sessions, slot length, places per slot, buffers, exceptions),
 * the OPD token counter of each session held (its row is also the lock that serialises the bookings of
 * that session), and the lineage of a rescheduled appointment.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('schedules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id').onDelete('cascade'))
    .addColumn('clinic_id', 'text', (c) => c.notNull().references('clinics.id'))
    .addColumn('doctor_id', 'text', (c) => c.notNull().references('doctors.id'))
    .addColumn('timezone', 'text', (c) => c.notNull())
    .addColumn('slot_minutes', 'integer', (c) => c.notNull())
    .addColumn('capacity', 'integer', (c) => c.notNull())
    .addColumn('buffer_minutes', 'integer', (c) => c.notNull())
    .addColumn('sessions', 'text', (c) => c.notNull())
    .addColumn('exceptions', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('schedules_pair_idx').on('schedules').columns(['business_id', 'clinic_id', 'doctor_id']).unique().execute();

  await db.schema
    .createTable('schedule_tokens')
    .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id').onDelete('cascade'))
    .addColumn('clinic_id', 'text', (c) => c.notNull())
    .addColumn('doctor_id', 'text', (c) => c.notNull())
    .addColumn('session_start', 'bigint', (c) => c.notNull())
    .addColumn('last_token', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('schedule_tokens_pk', ['business_id', 'clinic_id', 'doctor_id', 'session_start'])
    .execute();

  await db.schema.alterTable('appointments').addColumn('prev_aids', 'text').execute();
  await db.schema.alterTable('appointments').addColumn('next_aid', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('appointments').dropColumn('next_aid').execute();
  await db.schema.alterTable('appointments').dropColumn('prev_aids').execute();
  await db.schema.dropTable('schedule_tokens').execute();
  await db.schema.dropTable('schedules').execute();
}
