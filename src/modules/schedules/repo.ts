/** SQL for schedules and their session token counters; every query is scoped by business. */
import { sql } from 'kysely';
import { writeWithNext, type Db } from '../../db/index.ts';
import type { SchedulesTable } from '../../db/schema.ts';

export type ScheduleRow = SchedulesTable;

export async function find(db: Db, businessId: string, clinicId: string, doctorId: string): Promise<ScheduleRow | undefined> {
  return db
    .selectFrom('schedules')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('clinic_id', '=', clinicId)
    .where('doctor_id', '=', doctorId)
    .executeTakeFirst();
}

/** Creates or replaces the pair's schedule; two writers racing for one pair end with one row, the last write's. */
export async function upsert(db: Db, row: ScheduleRow): Promise<ScheduleRow> {
  const { id: _id, business_id: _b, clinic_id: _c, doctor_id: _d, created_at: _created, ...changes } = row;
  return db
    .insertInto('schedules')
    .values(row)
    .onConflict((oc) => oc.columns(['business_id', 'clinic_id', 'doctor_id']).doUpdateSet(changes))
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function remove(db: Db, businessId: string, id: string): Promise<void> {
  await db.deleteFrom('schedules').where('business_id', '=', businessId).where('id', '=', id).execute();
}

/**
 * Counts the session's OPD tokens on by one (from 1), its number read back by the statement that
 * places the booking (appointments' `placeWithNextToken`). The upsert locks the session's counter row
 * until the transaction ends (PostgreSQL: a concurrent upsert of the same row waits for the commit and
 * then counts on from it; SQLite runs one writer at a time), so the bookings of one session run their
 * capacity check one after another, and a rolled-back booking gives its number back. Sent with that
 * statement (writeWithNext): the lock is taken and used in one round trip.
 */
export async function countTokenOn(db: Db, businessId: string, clinicId: string, doctorId: string, sessionStart: number): Promise<void> {
  await writeWithNext(
    db,
    db
      .insertInto('schedule_tokens')
      .values({ business_id: businessId, clinic_id: clinicId, doctor_id: doctorId, session_start: sessionStart, last_token: 1 })
      .onConflict((oc) =>
        oc
          .columns(['business_id', 'clinic_id', 'doctor_id', 'session_start'])
          .doUpdateSet({ last_token: sql<number>`schedule_tokens.last_token + 1` }),
      ),
  );
}
