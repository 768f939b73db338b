/** The cases module's front door. */
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import { PatientService } from '../patients/service.ts';
import { casesRoutes } from './routes.ts';
import { CasesService } from './service.ts';

export function casesModule(ctx: AppContext): Module {
  const { db, dialect } = ctx.storage;
  const service = new CasesService({
    db,
    dialect,
    masterKey: ctx.keys.masterKey,
    pageSize: ctx.config.casesPageSize,
    patients: new PatientService({ db }),
  });
  return { name: 'cases', routes: casesRoutes(service) };
}
