/**
 * SQL of the reviews module. The business's list is scoped by business_id; the token lookup is
 * global by design, because the review page has no login and the token is the capability.
 * Appointments, clinics and doctors belong to other modules: read here with small queries of our own.
 */
import type { Db } from '../../db/index.ts';
import type { ReviewsTable } from '../../db/schema.ts';

/** What the review page shows and stores, found by the appointment's review token. */
export interface ReviewTarget {
  appointment_id: string;
  business_id: string;
  clinic_id: string;
  doctor_id: string;
  patient_id: string;
  start_time: number;
  clinic_name: string;
  doctor_firstname: string;
  doctor_lastname: string;
  /** Set when a review of this appointment is stored already. */
  review_id: string | null;
  review_rating: number | null;
}

export async function findTargetByToken(db: Db, token: string): Promise<ReviewTarget | undefined> {
  return (
    db
      .selectFrom('appointments as a')
      // The clinic and doctor of the appointment's own business, however they were joined.
      .innerJoin('clinics as c', (join) => join.onRef('c.id', '=', 'a.clinic_id').onRef('c.business_id', '=', 'a.business_id'))
      .innerJoin('doctors as d', (join) => join.onRef('d.id', '=', 'a.doctor_id').onRef('d.business_id', '=', 'a.business_id'))
      .leftJoin('reviews as r', 'r.appointment_id', 'a.id')
      .select([
        'a.id as appointment_id',
        'a.business_id',
        'a.clinic_id',
        'a.doctor_id',
        'a.patient_id',
        'a.start_time',
        'c.name as clinic_name',
        'd.firstname as doctor_firstname',
        'd.lastname as doctor_lastname',
        'r.id as review_id',
        'r.rating as review_rating',
      ])
      .where('a.review_token', '=', token)
      .executeTakeFirst()
  );
}

export async function insertReview(db: Db, review: ReviewsTable): Promise<void> {
  await db.insertInto('reviews').values(review).execute();
}

export interface ReviewFilter {
  clinicId?: string | undefined;
  doctorId?: string | undefined;
}

/** The business's reviews, newest first (ties by id, so pages never overlap). */
export async function listReviews(db: Db, businessId: string, filter: ReviewFilter, offset: number, limit: number): Promise<ReviewsTable[]> {
  let query = db.selectFrom('reviews').selectAll().where('business_id', '=', businessId);
  if (filter.clinicId !== undefined) query = query.where('clinic_id', '=', filter.clinicId);
  if (filter.doctorId !== undefined) query = query.where('doctor_id', '=', filter.doctorId);
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').offset(offset).limit(limit).execute();
}

/* ---- the patient compartment (src/compartment.ts) ---- */

/** A merge moves the duplicate's reviews to the survivor; answers how many moved. */
export async function moveReviews(db: Db, businessId: string, from: string, to: string): Promise<number> {
  const result = await db
    .updateTable('reviews')
    .set({ patient_id: to })
    .where('business_id', '=', businessId)
    .where('patient_id', '=', from)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

export async function reviewsOfPatients(db: Db, businessId: string, patientIds: string[]): Promise<ReviewsTable[]> {
  if (patientIds.length === 0) return [];
  return db
    .selectFrom('reviews')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('patient_id', 'in', patientIds)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Reviews keep their rating (the practice's figures); the comment goes. */
export async function anonymiseReviewsOfPatients(db: Db, businessId: string, patientIds: string[]): Promise<void> {
  if (patientIds.length === 0) return;
  await db.updateTable('reviews').set({ comment: null }).where('business_id', '=', businessId).where('patient_id', 'in', patientIds).execute();
}
