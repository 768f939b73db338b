import { sql, type Kysely } from 'kysely';

/**
 * The row a doctor-clinic pair's bookings and schedule changes lock: it outlives every version of the
 * pair's schedule (deleted and created again, the schedule gets a new row and id), so a booking that
 * read an older version waits for the bookings of the newer one.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('schedule_locks')
    .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id').onDelete('cascade'))
    .addColumn('clinic_id', 'text', (c) => c.notNull())
    .addColumn('doctor_id', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('schedule_locks_pk', ['business_id', 'clinic_id', 'doctor_id'])
    .execute();
  await sql`insert into schedule_locks (business_id, clinic_id, doctor_id) select business_id, clinic_id, doctor_id from schedules`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('schedule_locks').execute();
}
