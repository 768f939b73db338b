/**
 * Versioned migrations for both dialects, run at start and by `cps migrate`. Kysely's migrator takes
 * a lock (a row lock on PostgreSQL), so several processes starting together migrate once.
 * A migration that needs dialect-specific SQL asks `isPostgres(db)` (db/dialect.ts).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import { Migrator, type Migration, type MigrationResultSet } from 'kysely/migration';
import { isPostgres } from './dialect.ts';
import * as foundation from './migrations/0001_foundation.ts';
import * as jobs from './migrations/0002_jobs.ts';
import * as clinicsAppointments from './migrations/0004_clinics_appointments.ts';
import * as catalogue from './migrations/0003_catalogue.ts';
import * as cases from './migrations/0005_cases.ts';
import * as push from './migrations/0006_push.ts';
import * as webhooks from './migrations/0007_webhooks.ts';
import * as reviews from './migrations/0008_reviews.ts';
import * as catalogueChangesIndex from './migrations/0009_catalogue_changes_index.ts';
import * as searchSnapshots from './migrations/0010_search_snapshots.ts';
import * as webhookDeliveryDecisions from './migrations/0011_webhook_delivery_decisions.ts';
import * as patientDirectory from './migrations/0012_patient_directory.ts';
import * as patientNameIndex from './migrations/0013_patient_name_index.ts';
import * as directoryDeletes from './migrations/0014_directory_deletes.ts';
import * as schedules from './migrations/0015_schedules.ts';
import * as idempotencyKeys from './migrations/0016_idempotency_keys.ts';
import * as eventOrdering from './migrations/0017_event_ordering.ts';
import * as accessLog from './migrations/0018_access_log.ts';
import * as retention from './migrations/0019_retention.ts';
import * as privacy from './migrations/0020_privacy.ts';
import * as webhookDeliveryAttempts from './migrations/0021_webhook_delivery_attempts.ts';
import * as appointmentEventSequence from './migrations/0022_appointment_event_sequence.ts';
import * as jobRetryRequested from './migrations/0023_job_retry_requested.ts';
import * as patientMergesFlattened from './migrations/0024_patient_merges_flattened.ts';
import * as scheduleLocks from './migrations/0025_schedule_locks.ts';
import * as appointmentsLongIdx from './migrations/0026_appointments_long_idx.ts';
import * as documents from './migrations/0027_documents.ts';
import * as documentFileKeys from './migrations/0028_document_file_keys.ts';
import * as scheduleServices from './migrations/0029_schedule_services.ts';
import * as accessLogSeals from './migrations/0030_access_log_seals.ts';
import * as consoleSessions from './migrations/0031_console_sessions.ts';
import * as accessLogHeadsForEveryBusiness from './migrations/0032_access_log_heads_for_every_business.ts';
import * as tokenIssuers from './migrations/0033_token_issuers.ts';
import * as clientSecretRotation from './migrations/0034_client_secret_rotation.ts';
import * as webhookAttemptsByBusiness from './migrations/0035_webhook_attempts_by_business.ts';
import * as backupRuns from './migrations/0036_backup_runs.ts';
import * as accessLogByBusinessAndTime from './migrations/0037_access_log_by_business_and_time.ts';
import * as documentThumbnails from './migrations/0038_document_thumbnails.ts';
import * as documentBytes from './migrations/0039_document_bytes.ts';

export const migrations: Record<string, Migration> = {
  '0001_foundation': foundation,
  '0002_jobs': jobs,
  '0004_clinics_appointments': clinicsAppointments,
  '0003_catalogue': catalogue,
  '0005_cases': cases,
  '0006_push': push,
  '0007_webhooks': webhooks,
  '0008_reviews': reviews,
  '0009_catalogue_changes_index': catalogueChangesIndex,
  '0010_search_snapshots': searchSnapshots,
  '0011_webhook_delivery_decisions': webhookDeliveryDecisions,
  '0012_patient_directory': patientDirectory,
  '0013_patient_name_index': patientNameIndex,
  '0014_directory_deletes': directoryDeletes,
  '0015_schedules': schedules,
  '0016_idempotency_keys': idempotencyKeys,
  '0017_event_ordering': eventOrdering,
  '0018_access_log': accessLog,
  '0019_retention': retention,
  '0020_privacy': privacy,
  '0021_webhook_delivery_attempts': webhookDeliveryAttempts,
  '0022_appointment_event_sequence': appointmentEventSequence,
  '0023_job_retry_requested': jobRetryRequested,
  '0024_patient_merges_flattened': patientMergesFlattened,
  '0025_schedule_locks': scheduleLocks,
  '0026_appointments_long_idx': appointmentsLongIdx,
  '0027_documents': documents,
  '0028_document_file_keys': documentFileKeys,
  '0029_schedule_services': scheduleServices,
  '0030_access_log_seals': accessLogSeals,
  '0031_console_sessions': consoleSessions,
  '0032_access_log_heads_for_every_business': accessLogHeadsForEveryBusiness,
  '0033_token_issuers': tokenIssuers,
  '0034_client_secret_rotation': clientSecretRotation,
  '0035_webhook_attempts_by_business': webhookAttemptsByBusiness,
  '0036_backup_runs': backupRuns,
  '0037_access_log_by_business_and_time': accessLogByBusinessAndTime,
  '0038_document_thumbnails': documentThumbnails,
  '0039_document_bytes': documentBytes,
};

/**
 * Kysely's migration lock is a row lock on PostgreSQL but nothing on SQLite, where several processes
 * on one file (a server and `cps import`, or servers starting together) would race. This mutex row,
 * taken by an insert that only one process can win, stands in; a holder that died frees it after 2 min.
 */
async function withSqliteMutex<T>(db: Kysely<any>, work: () => Promise<T>): Promise<T> {
  await sql`create table if not exists cps_migrations_mutex (id integer primary key, owner text not null, expires_at bigint not null)`.execute(db);
  const owner = randomUUID();
  for (;;) {
    const now = Date.now();
    await sql`delete from cps_migrations_mutex where id = 1 and expires_at < ${now}`.execute(db);
    const taken =
      await sql`insert into cps_migrations_mutex (id, owner, expires_at) values (1, ${owner}, ${now + 120_000}) on conflict (id) do nothing`.execute(
        db,
      );
    if (Number(taken.numAffectedRows ?? 0) === 1) break;
    await sleep(25);
  }
  try {
    return await work();
  } finally {
    await sql`delete from cps_migrations_mutex where id = 1 and owner = ${owner}`.execute(db);
  }
}

export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  return isPostgres(db) ? migrate(db) : withSqliteMutex(db, () => migrate(db));
}

async function migrate(db: Kysely<any>): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: 'cps_migrations',
    migrationLockTableName: 'cps_migrations_lock',
    // Modules land in any order; a migration numbered below the newest applied one still runs.
    allowUnorderedMigrations: true,
  });
  const result: MigrationResultSet = await migrator.migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error');
    const error = result.error instanceof Error ? result.error : new Error(String(result.error));
    error.message = `migration ${failed?.migrationName ?? '?'} failed: ${error.message}`;
    throw error;
  }
  return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
