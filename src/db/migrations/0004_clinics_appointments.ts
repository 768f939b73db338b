import type { Kysely } from 'kysely';

/** Clinics, doctors and their assignments; patients kept per business; appointments. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('clinics')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id').onDelete('cascade'))
    .addColumn('partner_id', 'text')
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('pincode', 'text')
    .addColumn('contact', 'text')
    .addColumn('city', 'text')
    .addColumn('state', 'text')
    .addColumn('review_link', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // NULL partner ids are distinct on both dialects, so clinics without one never collide.
  await db.schema.createIndex('clinics_partner_idx').on('clinics').columns(['business_id', 'partner_id']).unique().execute();
  await db.schema.createIndex('clinics_business_idx').on('clinics').columns(['business_id', 'created_at']).execute();

  await db.schema
    .createTable('doctors')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id').onDelete('cascade'))
    .addColumn('partner_id', 'text')
    .addColumn('firstname', 'text', (c) => c.notNull())
    .addColumn('lastname', 'text', (c) => c.notNull())
    .addColumn('gender', 'text')
    .addColumn('mobile', 'text')
    .addColumn('email', 'text')
    .addColumn('specialisations', 'text', (c) => c.notNull())
    .addColumn('review_link', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('doctors_partner_idx').on('doctors').columns(['business_id', 'partner_id']).unique().execute();
  await db.schema.createIndex('doctors_business_idx').on('doctors').columns(['business_id', 'created_at']).execute();

  await db.schema
    .createTable('clinic_doctors')
    .addColumn('clinic_id', 'text', (c) => c.notNull().references('clinics.id').onDelete('cascade'))
    .addColumn('doctor_id', 'text', (c) => c.notNull().references('doctors.id').onDelete('cascade'))
    .addColumn('business_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('clinic_doctors_pk', ['clinic_id', 'doctor_id'])
    .execute();
  await db.schema.createIndex('clinic_doctors_doctor_idx').on('clinic_doctors').column('doctor_id').execute();

  await db.schema
    .createTable('patients')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id').onDelete('cascade'))
    .addColumn('partner_patient_id', 'text')
    .addColumn('details', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('patients_partner_idx').on('patients').columns(['business_id', 'partner_patient_id']).unique().execute();

  await db.schema
    .createTable('appointments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id').onDelete('cascade'))
    .addColumn('partner_appointment_id', 'text')
    .addColumn('clinic_id', 'text', (c) => c.notNull().references('clinics.id'))
    .addColumn('doctor_id', 'text', (c) => c.notNull().references('doctors.id'))
    .addColumn('patient_id', 'text', (c) => c.notNull().references('patients.id'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('start_time', 'bigint', (c) => c.notNull())
    .addColumn('end_time', 'bigint', (c) => c.notNull())
    .addColumn('token', 'integer')
    .addColumn('patient_details', 'text', (c) => c.notNull())
    .addColumn('custom_attributes', 'text', (c) => c.notNull())
    .addColumn('video_connect', 'text')
    .addColumn('display_meta', 'text', (c) => c.notNull())
    .addColumn('partner_meta', 'text', (c) => c.notNull())
    .addColumn('notes', 'text')
    .addColumn('review_token', 'text', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('appointments_partner_idx').on('appointments').columns(['business_id', 'partner_appointment_id']).unique().execute();
  await db.schema.createIndex('appointments_review_token_idx').on('appointments').column('review_token').unique().execute();
  await db.schema.createIndex('appointments_start_idx').on('appointments').columns(['business_id', 'start_time']).execute();
  await db.schema.createIndex('appointments_clinic_idx').on('appointments').columns(['business_id', 'clinic_id', 'start_time']).execute();
  await db.schema.createIndex('appointments_doctor_idx').on('appointments').columns(['business_id', 'doctor_id', 'start_time']).execute();
  await db.schema.createIndex('appointments_patient_idx').on('appointments').columns(['business_id', 'patient_id', 'start_time']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('appointments').execute();
  await db.schema.dropTable('patients').execute();
  await db.schema.dropTable('clinic_doctors').execute();
  await db.schema.dropTable('doctors').execute();
  await db.schema.dropTable('clinics').execute();
}
