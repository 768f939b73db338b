/** The privacy module's front door: a patient's data exported or erased on request, and the export job. */
import type { AppContext } from '../../context.ts';
import type { IdempotencyService } from '../idempotency/service.ts';
import type { Module } from '../module.ts';
import type { PatientService } from '../patients/service.ts';
import * as repo from './repo.ts';

export { erasureRecordPath } from './erasure-record.ts';
export type { ReappliedErasures } from './service.ts';
import { privacyRoutes } from './routes.ts';
import { EXPORT_JOB, PrivacyService } from './service.ts';

export function privacyModule(ctx: AppContext, patients: PatientService, idempotency: IdempotencyService): Module & { service: PrivacyService } {
  const { db } = ctx.storage;
  ctx.compartment.register({
    name: 'privacy',
    tables: [{ table: 'privacy_exports', column: 'patient_id', by: 'id' }],
    erase: (trx, scope) => repo.deleteExportsOf(trx, scope.businessId, scope.patientIds),
  });
  const service = new PrivacyService({
    db,
    dialect: ctx.storage.dialect,
    masterKey: ctx.keys.masterKey,
    publicUrl: ctx.config.publicUrl,
    exportTtlSeconds: ctx.config.privacyExportTtl,
    patients,
    compartment: ctx.compartment,
    dataDir: ctx.config.dataDir,
    idempotency,
  });
  ctx.jobs.register<{ exportId: string }>(EXPORT_JOB, async ({ job }) => service.buildExport(job.payload.exportId), {
    concurrency: 2,
    retrySchedule: [10, 60, 300, 1800],
    onFailedAttempt: async (db, job, outcome) => {
      if (outcome.status === 'failed') await service.failExport(db, job.payload.exportId);
    },
  });
  return { name: 'privacy', routes: privacyRoutes(service), service };
}
