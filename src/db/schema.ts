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
  jobs: JobsTable;
  job_locks: JobLocksTable;
  cases: CasesTable;
}

export type { Generated };
