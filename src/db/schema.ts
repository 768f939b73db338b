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
}

export interface JobLocksTable {
  name: string;
  owner: string;
  expires_at: number;
}

export interface CasesTable {
  business_id: string;
  /** The X-Pt-Id as given. */
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

export interface Database {
  businesses: BusinessesTable;
  api_clients: ApiClientsTable;
  refresh_tokens: RefreshTokensTable;
  events: EventsTable;
  drugs: DrugsTable;
  lab_tests: LabTestsTable;
  catalogue_meta: CatalogueMetaTable;
  webhook_subscriptions: WebhookSubscriptionsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  jobs: JobsTable;
  job_locks: JobLocksTable;
  cases: CasesTable;
}

export type { Generated };
