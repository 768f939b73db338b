/**
 * Table types for Kysely. Each module adds its tables here; times are epoch milliseconds,
 * booleans 0/1, JSON as text (see db/index.ts).
 */
import type { Generated } from 'kysely';

export interface BusinessesTable {
  id: string;
  name: string;
  created_at: number;
}

export interface ApiClientsTable {
  id: string;
  business_id: string;
  secret_hash: string;
  /** Space-separated scopes. */
  scopes: string;
  created_at: number;
  disabled_at: number | null;
}

export interface RefreshTokensTable {
  id: string;
  token_hash: string;
  /** Every token descended from one login shares the family; reuse revokes the family. */
  family_id: string;
  client_id: string;
  business_id: string;
  expires_at: number;
  used_at: number | null;
  revoked_at: number | null;
  created_at: number;
}

export interface EventsTable {
  id: string;
  business_id: string;
  type: string;
  /** JSON */
  payload: string;
  created_at: number;
}

export interface ClinicsTable {
  id: string;
  business_id: string;
  partner_id: string | null;
  name: string;
  address: string;
  pincode: string | null;
  contact: string | null;
  city: string | null;
  state: string | null;
  review_link: string | null;
  created_at: number;
  updated_at: number;
}

export interface DoctorsTable {
  id: string;
  business_id: string;
  partner_id: string | null;
  firstname: string;
  lastname: string;
  gender: string | null;
  mobile: string | null;
  email: string | null;
  /** JSON array of strings */
  specialisations: string;
  review_link: string | null;
  created_at: number;
  updated_at: number;
}

export interface ClinicDoctorsTable {
  clinic_id: string;
  doctor_id: string;
  business_id: string;
  created_at: number;
}

export interface PatientsTable {
  id: string;
  business_id: string;
  partner_patient_id: string | null;
  /** JSON: the patient_details fields (interface 2.7, plus age) */
  details: string;
  created_at: number;
  updated_at: number;
}

export interface AppointmentsTable {
  id: string;
  business_id: string;
  partner_appointment_id: string | null;
  clinic_id: string;
  doctor_id: string;
  patient_id: string;
  /** BK, NS, CM or CN */
  status: string;
  /** INCLINIC, VIDEO or PHONE, as booked */
  mode: string;
  start_time: number;
  end_time: number;
  token: number | null;
  /** JSON objects */
  patient_details: string;
  custom_attributes: string;
  video_connect: string | null;
  display_meta: string;
  partner_meta: string;
  notes: string | null;
  /** Unguessable; the review page finds the appointment by it. */
  review_token: string;
  /** Set by the first completion, which alone emits external_review.request. */
  completed_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface ReviewsTable {
  id: string;
  business_id: string;
  /** Unique: one review per appointment. */
  appointment_id: string;
  doctor_id: string;
  clinic_id: string;
  patient_id: string;
  /** 1 to 5 */
  rating: number;
  comment: string | null;
  created_at: number;
}

export interface Database {
  businesses: BusinessesTable;
  api_clients: ApiClientsTable;
  refresh_tokens: RefreshTokensTable;
  events: EventsTable;
  clinics: ClinicsTable;
  doctors: DoctorsTable;
  clinic_doctors: ClinicDoctorsTable;
  patients: PatientsTable;
  appointments: AppointmentsTable;
  reviews: ReviewsTable;
}

export type { Generated };
