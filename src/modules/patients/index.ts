/** The patients module's front door: the patient record as a resource, in Eka's two families of paths. */
import type { AppContext } from '../../context.ts';
import { appointmentServices } from '../appointments/index.ts';
import type { Module } from '../module.ts';
import { patientRoutes } from './routes.ts';
import { PatientService } from './service.ts';

export function patientsModule(ctx: AppContext): Module {
  const patients = new PatientService({ db: ctx.storage.db, timezone: ctx.config.timezone });
  const appointments = appointmentServices(ctx, patients).service;
  return { name: 'patients', routes: patientRoutes(patients, appointments) };
}
