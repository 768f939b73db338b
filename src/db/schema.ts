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
  /** The secret a rotation replaced, accepted until previous_secret_expires_at (epoch ms). */
  previous_secret_hash: string | null;
  previous_secret_expires_at: number | null;
}

/** A browser console session (modules/console); the cookie's token is stored as its SHA-256 only. */
export interface ConsoleSessionsTable {
  token_hash: string;
  /** 'operator' (the admin token) or 'client' (an API client's id and secret). */
  kind: 'operator' | 'client';
  /** The API client of a 'client' session; null for an operator. */
  client_id: string | null;
  created_at: number;
  /** Moved forward (at most once a minute) by each request; idle sessions end. */
  last_seen_at: number;
}

/** A run of cps backup or cps restore, recorded by the command (modules/ops/backup-runs.ts). */
export interface BackupRunsTable {
  id: string;
  command: 'backup' | 'restore';
  started_at: number;
  finished_at: number;
  outcome: 'succeeded' | 'failed';
  /** The size of the copy written (backup) or put in place (restore); null when it failed. */
  bytes: number | null;
  /** The file's name, without its directory. */
  file: string | null;
  /** Why it failed, with every path cut to its file name. */
  error: string | null;
}

/** A token issuer (CPS_PUBLIC_URL) a process sharing this database announced (auth/issuers.ts). */
export interface TokenIssuersTable {
  issuer: string;
  /** The signing key's id: processes that share a key but not an issuer refuse each other's tokens. */
  key_id: string;
  seen_at: number;
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
  /** Events of one appointment (`appointment:<id>`) or one patient's cases (`patient:<ref>`) share a key. */
  ordering_key: string | null;
  /** 1, 2, ... per (business, ordering_key), in the order the changes committed. */
  sequence: number | null;
}

/** Reference catalogue (global, not per business): see migrations/0003_catalogue.ts. */
export interface DrugsTable {
  id: string;
  name: string;
  name_key: string;
  maker_key: string;
  pack_key: string;
  manufacturer_name: string;
  product_type: string;
  product_sku: string | null;
  /** JSON [{salt, strength}] */
  composition: string;
  generic_name: string;
  generic_id: string;
  common_name: string;
  /** JSON object */
  action_class: string | null;
  is_otc: number | null;
  discontinued: number | null;
  soa: number | null;
  seq: number;
  updated_at: number;
}

export interface LabTestsTable {
  id: string;
  name: string;
  name_key: string;
  /** JSON string[] */
  abbreviations: string;
  category: string | null;
  description: string | null;
  preparation: string | null;
  specimen: string | null;
  loinc: string | null;
  price: number | null;
  seq: number;
  updated_at: number;
}

export interface CatalogueMetaTable {
  id: number;
  version: number;
  builtin_hash: string | null;
}

/** One part of a stored search index snapshot (migration 0010). */
export interface SearchSnapshotsTable {
  source: string;
  part: number;
  version: number;
  written_at: number;
  data: Buffer;
}

export type WebhookSubscriptionStatus = 'active' | 'disabled';

export interface WebhookSubscriptionsTable {
  id: string;
  business_id: string;
  /** Normalised absolute URL, unique per business. */
  endpoint: string;
  protocol: 'https' | 'http';
  /** JSON array of event names. */
  event_names: string;
  status: WebhookSubscriptionStatus;
  /** Encrypted (security/encryption.ts, AD `webhook:<id>`). */
  signing_key: string;
  /** Encrypted; valid for signing until previous_key_expires_at (a rotation's overlap). */
  previous_signing_key: string | null;
  previous_key_expires_at: number | null;
  disabled_reason: string | null;
  /** Since when every attempt failed (epoch ms); null after a success. */
  failing_since: number | null;
  created_at: number;
  updated_at: number;
}

export type WebhookDeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface WebhookDeliveriesTable {
  id: string;
  business_id: string;
  subscription_id: string;
  event_id: string;
  event_type: string;
  /** The job that sends it (jobs table). */
  job_id: string | null;
  status: WebhookDeliveryStatus;
  attempts: Generated<number>;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: number | null;
  /** The event's time, so listings are newest event first. */
  created_at: number;
  updated_at: number;
}

/** One attempt of a webhook delivery (pruned by age). */
export interface WebhookDeliveryAttemptsTable {
  delivery_id: string;
  /** 1, 2, ...: the delivery's attempts counted across manual retries. */
  attempt: number;
  business_id: string;
  started_at: number;
  finished_at: number;
  duration_ms: number;
  /** The receiver's answer; null when none came. */
  status_code: number | null;
  /** The class of failure ("HTTP 503", "could not connect"); null on success. */
  error: string | null;
}

export type JobStatus = 'pending' | 'running' | 'succeeded' | 'failed';

export interface JobsTable {
  id: string;
  kind: string;
  business_id: string | null;
  /** JSON */
  payload: string;
  status: JobStatus;
  due_at: number;
  attempts: Generated<number>;
  max_attempts: number | null;
  lease_until: number | null;
  locked_by: string | null;
  last_error: string | null;
  dedupe_key: string | null;
  created_at: number;
  updated_at: number;
  started_at: number | null;
  finished_at: number | null;
  /** Jobs of one kind and key are claimed in ordering_seq order, each once the earlier ones are settled. */
  ordering_key: string | null;
  ordering_seq: number | null;
  /** A retry asked while an attempt ran (retryJob): applied when that attempt is settled. */
  retry_requested_at: number | null;
}

export interface JobLocksTable {
  name: string;
  owner: string;
  expires_at: number;
}

/** A request's Idempotency-Key: running (claim set) or done (status and body set) until expires_at. */
export interface IdempotencyKeysTable {
  business_id: string;
  idempotency_key: string;
  fingerprint: string;
  claim: string | null;
  claimed_until: number | null;
  status: number | null;
  content_type: string | null;
  /** Encrypted (security/encryption.ts, AD `idempotency:<business id>:<key>`). */
  body: string | null;
  created_at: number;
  expires_at: number;
}

export interface CasesTable {
  business_id: string;
  /** The patient's key (PatientService.canonicalRef): its partner id, else its service id; an X-Pt-Id no patient has, as given. */
  patient_ref: string;
  id: string;
  /** 'A' active, 'D' deleted (a tombstone: the item columns are cleared). */
  status: string;
  display_name: string | null;
  type: string | null;
  hi_type: string | null;
  /** JSON object */
  partner_meta: string | null;
  occurred_at: number | null;
  created_at: number;
  /** Whole seconds, in milliseconds; never decreases within a patient (see modules/cases/service.ts). */
  updated_at: number;
}

/** A document on a patient's record (src/modules/documents/). */
export interface DocumentsTable {
  business_id: string;
  id: string;
  /** The patient's key, as cases keep it (PatientService.canonicalRef). */
  patient_ref: string;
  /** 'P' waiting for its files (not listed), 'A' active, 'D' deleted (a tombstone: metadata cleared). */
  status: string;
  /** 'form' (the upload forms of POST /mr/api/v1/docs) or 'multipart' (POST /mr/api/v2/docs). */
  source: string;
  dt: string | null;
  /** dd_e, in milliseconds. */
  document_date: number | null;
  /** JSON array of strings. */
  tags: string | null;
  title: string | null;
  /** JSON array of case ids. */
  cases: string | null;
  /** The v2 upload's task (smart, pii, classification); no parsing is done. */
  task: string | null;
  created_at: number;
  /** Whole seconds, in milliseconds; never decreases within a patient (as cases). */
  updated_at: number;
  /** A pending document's forms expire then; past it, the sweep removes it. */
  upload_until: number | null;
}

/** One file of a document: its upload form, its state and where its bytes are. */
export interface DocumentFilesTable {
  business_id: string;
  document_id: string;
  idx: number;
  form_id: string;
  /** 'waiting' (form not used), 'receiving', 'stored', 'removing' (bytes still to delete). */
  state: string;
  content_type: string;
  declared_size: number | null;
  size: number | null;
  file_name: string | null;
  /** The backend holding the bytes ('database', 's3'). */
  store: string | null;
  storage_key: string | null;
  claimed_at: number | null;
  stored_at: number | null;
  /** The thumbnail's store and key (documents/thumbnails.ts), and its size; null until one is made. */
  thumbnail_store?: string | null;
  thumbnail_key?: string | null;
  thumbnail_size?: number | null;
}

/**
 * What a business's document files take or were promised (documents/repo.ts, businessBytes), kept by
 * document_files' triggers; its total is the sum of its rows (slots: PostgreSQL spreads it over 16).
 */
export interface DocumentBytesTable {
  business_id: string;
  slot: number;
  bytes: number;
}

/** The embedded store's bytes: AES-256-GCM chunks of a file, under its key (document_file_keys). */
export interface DocumentFileChunksTable {
  storage_key: string;
  seq: number;
  data: Buffer;
}

/** The key each stored document file's chunks are sealed with, itself sealed under the master key. */
export interface DocumentFileKeysTable {
  storage_key: string;
  sealed_key: string;
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
  /** Soft delete: set, the clinic is gone for reads and bookings; its appointments keep naming it. */
  deleted_at: number | null;
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
  /** Soft delete, as for clinics. */
  deleted_at: number | null;
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
  /** Unique per business; Eka's profiles call it `username`. */
  partner_patient_id: string | null;
  designation: string | null;
  first_name: string | null;
  middle_name: string | null;
  last_name: string | null;
  /** 'M', 'F' or 'O' */
  gender: string | null;
  /** YYYY-MM-DD; null when an age was given instead */
  dob: string | null;
  /** Whole years as given at `age_recorded_at` (ms), so that it can be aged; null when a dob was given */
  age: number | null;
  age_recorded_at: number | null;
  /** '+' and the digits with country code ('+91' added to 10 digits) */
  mobile: string | null;
  /** lower case */
  email: string | null;
  blood_group: string | null;
  /** JSON object: line1, line2, city, state, country, pincode */
  address: string | null;
  /** 14 digits, no dashes */
  abha_number: string | null;
  /** lower case, e.g. name@abdm */
  abha_address: string | null;
  /** JSON object: the partner's own fields (Eka's `extras` and `partner_meta`) */
  extras: string | null;
  /** ms; an archived patient is listed and looked up only when asked for */
  archived_at: number | null;
  /** The surviving patient's id once this one was merged into it */
  merged_into: string | null;
  /** ms; an erased patient (modules/privacy) keeps only its ids and times, and answers as unknown */
  erased_at: number | null;
  /** An erased patient's partner id as a keyed digest (privacy/service.ts), so that erasing again by it answers the same */
  erased_ref: string | null;
  created_at: number;
  updated_at: number;
}

/** A patient as the name search sees it (patients/name-index.ts): its tokens, and `seq`, the short key its search keys point to. */
export interface PatientSearchNamesTable {
  seq: Generated<number>;
  patient_id: string;
  business_id: string;
  /** Normalised name tokens separated by spaces; single letters are initials. */
  tokens: string;
  /** The keys' sources, so that a patient's keys can be found again and deleted. */
  mobile: string | null;
  partner_id: string | null;
  /** 0/1 */
  archived: number;
}

/** The keys a patient is found by: name tokens and pairs of them, mobile number, partner id. */
export interface PatientSearchKeysTable {
  business_id: string;
  key: string;
  seq: number;
}

export interface AppointmentsTable {
  id: string;
  business_id: string;
  partner_appointment_id: string | null;
  clinic_id: string;
  doctor_id: string;
  patient_id: string;
  /** BK, NS, CM, CN or RES (rescheduled: `next_aid` names its successor) */
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
  /** JSON array of the appointments this one was rescheduled from, oldest first; null when none. */
  prev_aids: string | null;
  /** The appointment this one was rescheduled to. */
  next_aid: string | null;
  /** The sequence number of the appointment's last event (0: none yet); the change that records the next writes it. */
  event_sequence: number;
}

export interface SchedulesTable {
  id: string;
  business_id: string;
  clinic_id: string;
  doctor_id: string;
  /** IANA zone of the sessions' wall-clock times. */
  timezone: string;
  slot_minutes: number;
  /** Patients per slot (OPD tokens). */
  capacity: number;
  buffer_minutes: number;
  /** JSON array of weekly sessions. */
  sessions: string;
  /** JSON array of leaves, holidays and extra sessions. */
  exceptions: string;
  /** The service the schedule books (Eka's conf_id is the schedule id); null: "consultation". */
  service_name: string | null;
  /** The service's fee; null: not stated. */
  price: number | null;
  /** ISO 4217 code of the price. */
  currency: string | null;
  created_at: number;
  updated_at: number;
}

/** A doctor-clinic pair's lock row, kept across versions of its schedule (see schedules' repo.lockPair). */
export interface ScheduleLocksTable {
  business_id: string;
  clinic_id: string;
  doctor_id: string;
}

export interface ScheduleTokensTable {
  business_id: string;
  clinic_id: string;
  doctor_id: string;
  /** The session's first instant, epoch milliseconds. */
  session_start: number;
  last_token: number;
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

export interface PushCredentialsTable {
  business_id: string;
  /** The whole sa_key JSON, sealed by security/encryption.ts (associated data: the business id). */
  sealed: string;
  project_id: string;
  client_email: string;
  private_key_id: string;
  created_at: number;
  updated_at: number;
}

export interface PushDevicesTable {
  id: string;
  business_id: string;
  did: string;
  fcm_token: string;
  app_version: string;
  app_id: string | null;
  app_platform: string | null;
  lang: string | null;
  os_version: string | null;
  user_hash: string | null;
  patient_ref: string | null;
  created_at: number;
  updated_at: number;
}

export interface PushNotificationsTable {
  id: string;
  business_id: string;
  title: string;
  body: string;
  /** JSON object of strings, or null. */
  data: string | null;
  patient_ref: string | null;
  created_by: string;
  created_at: number;
}

export type PushDeliveryStatus = 'pending' | 'sent' | 'failed' | 'dropped';

export interface PushDeliveriesTable {
  notification_id: string;
  did: string;
  business_id: string;
  status: PushDeliveryStatus;
  error: string | null;
  attempts: Generated<number>;
  /** FCM's message name on success. */
  fcm_message: string | null;
  updated_at: number;
}

/** One operation on patient data (src/access-log/); seq, prev_hash and hash are null until the row is chained. */
export interface AccessLogTable {
  id: string;
  business_id: string;
  seq: number | null;
  prev_hash: string | null;
  hash: string | null;
  at: number;
  client_id: string | null;
  operation: string;
  action: string;
  resource_type: string;
  resource_id: string | null;
  patient_ref: string | null;
  /** Null: a change committed whose answer was never recorded (the process stopped in between). */
  status: number | null;
  request_id: string;
  source_address: string | null;
  /** JSON: the filter of a search or listing, contact details as keyed digests. */
  filter: string | null;
  result_count: number | null;
  /** 1 when written in the transaction of the change it records. */
  with_change: Generated<number>;
}

/** The last link of each business's access log chain. */
export interface AccessLogHeadsTable {
  business_id: string;
  seq: number;
  hash: string;
  /** The head's seal (audit/seal.ts); null until the first start after the column was added. */
  mac: string | null;
}

/** Where a business's access log chain begins once its oldest entries were pruned: the last pruned entry. */
export interface AccessLogPrunedTable {
  business_id: string;
  seq: number;
  hash: string;
  pruned_at: number;
  /** The seal over business_id, seq, hash and through_at (audit/seal.ts); null until sealed at start. */
  mac: string | null;
  /** When the last pruned entry was recorded; null for anchors from before it was kept. */
  through_at: number | null;
}

export type PrivacyExportStatus = 'pending' | 'ready' | 'failed';

/** A patient's data exported on request (modules/privacy): the document, encrypted, until expires_at. */
export interface PrivacyExportsTable {
  id: string;
  business_id: string;
  /** The patient's service id (a survivor's, for a merged patient). */
  patient_id: string;
  /** The API client that asked. */
  client_id: string;
  status: PrivacyExportStatus;
  /** Encrypted JSON (security/encryption.ts, AD `privacy-export:<business id>:<id>`); null until ready. */
  document: string | null;
  created_at: number;
  ready_at: number | null;
  expires_at: number;
  downloaded_at: number | null;
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
  patient_search_names: PatientSearchNamesTable;
  patient_search_keys: PatientSearchKeysTable;
  appointments: AppointmentsTable;
  schedules: SchedulesTable;
  schedule_tokens: ScheduleTokensTable;
  schedule_locks: ScheduleLocksTable;
  drugs: DrugsTable;
  lab_tests: LabTestsTable;
  catalogue_meta: CatalogueMetaTable;
  search_snapshots: SearchSnapshotsTable;
  webhook_subscriptions: WebhookSubscriptionsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_delivery_attempts: WebhookDeliveryAttemptsTable;
  jobs: JobsTable;
  job_locks: JobLocksTable;
  idempotency_keys: IdempotencyKeysTable;
  cases: CasesTable;
  documents: DocumentsTable;
  document_files: DocumentFilesTable;
  document_bytes: DocumentBytesTable;
  document_file_chunks: DocumentFileChunksTable;
  document_file_keys: DocumentFileKeysTable;
  reviews: ReviewsTable;
  push_credentials: PushCredentialsTable;
  push_devices: PushDevicesTable;
  push_notifications: PushNotificationsTable;
  push_deliveries: PushDeliveriesTable;
  access_log: AccessLogTable;
  access_log_heads: AccessLogHeadsTable;
  access_log_pruned: AccessLogPrunedTable;
  privacy_exports: PrivacyExportsTable;
  console_sessions: ConsoleSessionsTable;
  token_issuers: TokenIssuersTable;
  backup_runs: BackupRunsTable;
}

export type { Generated };
