/**
 * SQL for schedules, the lock bookings take on them, and their session token counters; every query is
 * scoped by business.
 */
import { sql } from 'kysely';
import { isPostgres } from '../../db/dialect.ts';
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

/** The doctor's schedules across the business's clinics, oldest first. */
export async function listOfDoctor(db: Db, businessId: string, doctorId: string): Promise<ScheduleRow[]> {
  return db
    .selectFrom('schedules')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('doctor_id', '=', doctorId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
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

type PairKey = { businessId: string; clinicId: string; doctorId: string };

/**
 * Locks the pair's lock row until the transaction ends, creating it the first time: a schedule change
 * takes it before writing, so it waits for the pair's bookings in flight and they for it.
 */
export async function lockPair(db: Db, pair: PairKey): Promise<void> {
  await db
    .insertInto('schedule_locks')
    .values({ business_id: pair.businessId, clinic_id: pair.clinicId, doctor_id: pair.doctorId })
    .onConflict((oc) => oc.columns(['business_id', 'clinic_id', 'doctor_id']).doUpdateSet((eb) => ({ business_id: eb.ref('excluded.business_id') })))
    .execute();
}

/**
 * Locks the pair's lock row until the transaction ends (PostgreSQL; SQLite runs one writer at a time),
 * so the bookings of a pair run their capacity checks one after another, whichever of its sessions
 * (overlapping ones included) or whichever version of its schedule each one read: the row outlives the
 * schedule's rows (a schedule deleted and created again is a new row), and exists for every pair that
 * has had a schedule, written with it (`lockPair`). Sent with the statement that places the booking
 * (writeWithNext): the lock is taken and used in one round trip.
 */
export async function lockForBooking(db: Db, pair: PairKey): Promise<void> {
  if (!isPostgres(db)) return;
  await writeWithNext(
    db,
    db
      .selectFrom('schedule_locks')
      .select('business_id')
      .where('business_id', '=', pair.businessId)
      .where('clinic_id', '=', pair.clinicId)
      .where('doctor_id', '=', pair.doctorId)
      .forUpdate(),
  );
}

/**
 * Counts the session's OPD tokens on by one, its number read back by the statement that places the
 * booking (appointments' `placeWithNextToken`); taken under `lockForBooking`, and a rolled-back booking
 * gives its number back. A session's counter starts after the highest token among the pair's
 * appointments in the session (other than `appointmentId`), so the numbers go on where a counter kept
 * under another start (the schedule's session moved), or one pruned by retention, left them.
 */
export async function countTokenOn(
  db: Db,
  pair: { businessId: string; clinicId: string; doctorId: string },
  session: { start: number; end: number },
  appointmentId: string,
): Promise<void> {
  await writeWithNext(
    db,
    db
      .insertInto('schedule_tokens')
      .values((eb) => ({
        business_id: pair.businessId,
        clinic_id: pair.clinicId,
        doctor_id: pair.doctorId,
        session_start: session.start,
        last_token: eb
          .selectFrom('appointments')
          .select(sql<number>`coalesce(max(token), 0) + 1`.as('next'))
          .where('business_id', '=', pair.businessId)
          .where('clinic_id', '=', pair.clinicId)
          .where('doctor_id', '=', pair.doctorId)
          .where('start_time', '>=', session.start)
          .where('start_time', '<', session.end)
          .where('id', '<>', appointmentId),
      }))
      .onConflict((oc) =>
        oc
          .columns(['business_id', 'clinic_id', 'doctor_id', 'session_start'])
          .doUpdateSet({ last_token: sql<number>`schedule_tokens.last_token + 1` }),
      ),
  );
}
