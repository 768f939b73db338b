/** The audit module's front door: reading the access log (src/access-log/ writes it). */
import { parsedJson } from '../../compartment.ts';
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import type { PatientService } from '../patients/service.ts';
import * as repo from './repo.ts';
import { auditRoutes } from './routes.ts';
import { AuditService } from './service.ts';

export function auditModule(ctx: AppContext, patients: PatientService): Module {
  const { db } = ctx.storage;
  ctx.compartment.register({
    name: 'audit',
    tables: [{ table: 'access_log', column: 'patient_ref', by: 'ref' }],
    export: async (db, scope) => ({
      access_log: (await repo.entriesNaming(db, scope.businessId, scope.refs)).map((row) => ({ ...row, filter: parsedJson(row.filter) })),
    }),
    erase: {
      kept: 'the access log is the proof of what was done with patient data, the erasure included; it names patients by id, contact details as keyed digests',
    },
  });
  const service = new AuditService({
    db,
    masterKey: ctx.keys.masterKey,
    patients: patients,
    chainCheck: { seal: ctx.audit.chainSeal, accessLogDays: ctx.config.retention.accessLogDays },
  });
  return { name: 'audit', routes: auditRoutes(service) };
}
