import type { Kysely } from 'kysely';

/** Reviews left on the hosted review page: one per appointment (the unique index decides races). */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('reviews')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id').onDelete('cascade'))
    .addColumn('appointment_id', 'text', (c) => c.notNull().unique().references('appointments.id').onDelete('cascade'))
    .addColumn('doctor_id', 'text', (c) => c.notNull())
    .addColumn('clinic_id', 'text', (c) => c.notNull())
    .addColumn('patient_id', 'text', (c) => c.notNull())
    .addColumn('rating', 'integer', (c) => c.notNull())
    .addColumn('comment', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  // The business's list, newest first, whole or by clinic or doctor.
  await db.schema.createIndex('reviews_business_idx').on('reviews').columns(['business_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('reviews_clinic_idx').on('reviews').columns(['business_id', 'clinic_id', 'created_at']).execute();
  await db.schema.createIndex('reviews_doctor_idx').on('reviews').columns(['business_id', 'doctor_id', 'created_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('reviews').execute();
}
