/** The patients module's front door: the patient record as a resource, in Eka's two families of paths. */
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import { patientRoutes } from './routes.ts';
import { PatientService } from './service.ts';

/** The app's one PatientService: the list of modules builds it and hands it to every front door that needs it. */
export function patientService(ctx: AppContext): PatientService {
  return new PatientService({ db: ctx.storage.db, timezone: ctx.config.timezone, compartment: ctx.compartment });
}

/** `doctorToolRoutes`: other modules' routes under the doctor tool's patient paths (a patient's appointments). */
export function patientsModule(ctx: AppContext, patients: PatientService, doctorToolRoutes: Module['routes']): Module {
  ctx.compartment.register({
    name: 'patients',
    tables: [
      { table: 'patients', column: 'id', by: 'id' },
      { table: 'patients', column: 'partner_patient_id', by: 'ref' },
      { table: 'patient_search_names', column: 'patient_id', by: 'id' },
    ],
    erase: {
      kept: "the patient record and its search keys are the compartment's root: the erasure clears them through PatientService after every holder",
    },
  });
  return { name: 'patients', routes: patientRoutes(patients, doctorToolRoutes) };
}
