/** The audit module's front door: reading the access log (src/audit/ writes it). */
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import { PatientService } from '../patients/service.ts';
import { auditRoutes } from './routes.ts';
import { AuditService } from './service.ts';

export function auditModule(ctx: AppContext): Module {
  const { db } = ctx.storage;
  const service = new AuditService({ db, masterKey: ctx.keys.masterKey, patients: new PatientService({ db, timezone: ctx.config.timezone }) });
  return { name: 'audit', routes: auditRoutes(service) };
}
