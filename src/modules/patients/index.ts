/** The patients module's front door: the patient record as a resource, in Eka's two families of paths. */
import type { AppContext } from '../../context.ts';
import { appointmentServices } from '../appointments/index.ts';
import type { Module } from '../module.ts';
import { patientRoutes } from './routes.ts';
import { PatientService } from './service.ts';

export function patientsModule(ctx: AppContext): Module {
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
  const patients = new PatientService({ db: ctx.storage.db, timezone: ctx.config.timezone, compartment: ctx.compartment });
  const appointments = appointmentServices(ctx, patients).service;
  return { name: 'patients', routes: patientRoutes(patients, appointments) };
}
