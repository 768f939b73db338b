/** The cases module's front door. */
import type { AppContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import { patientKey } from '../../jobs/outbox.ts';
import type { Module } from '../module.ts';
import type { PatientService } from '../patients/service.ts';
import * as repo from './repo.ts';
import { casesRoutes } from './routes.ts';
import { CasesService, toView } from './service.ts';

export function casesModule(ctx: AppContext, patients: PatientService): Module {
  const { db, dialect } = ctx.storage;
  ctx.compartment.register({
    name: 'cases',
    tables: [{ table: 'cases', column: 'patient_ref', by: 'ref' }],
    refuseMerge: async (trx, merge) => {
      const shared = await repo.sharedCaseIds(trx, merge.businessId, merge.from.key, merge.to.key);
      if (shared.length > 0) {
        throw new AppError(409, `Both patients have cases with the ids ${shared.join(', ')}: delete or rename one of each pair, then merge`, {
          code: 'CASES_CONFLICT',
        });
      }
    },
    moveKey: async (trx, businessId, from, to) => ({ cases: await repo.moveCases(trx, dialect, businessId, from, to) }),
    references: async (_db, scope) => ({ eventKeys: scope.refs.map(patientKey) }),
    export: async (db, scope) => ({
      cases: (await repo.casesUnder(db, scope.businessId, scope.refs)).map((row) => ({
        patient_ref: row.patient_ref,
        created_at: Math.floor(Number(row.created_at) / 1000),
        ...toView(row),
      })),
    }),
    // Tombstones included.
    erase: (trx, scope) => repo.deleteCasesUnder(trx, scope.businessId, scope.refs),
  });
  const service = new CasesService({
    db,
    dialect,
    masterKey: ctx.keys.masterKey,
    pageSize: ctx.config.casesPageSize,
    patients: patients,
  });
  return { name: 'cases', routes: casesRoutes(service) };
}
