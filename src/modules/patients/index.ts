/** The patients module's front door: the patient record as a resource, in Eka's two families of paths. */
import type { AppContext } from '../../context.ts';
import { AppointmentService } from '../appointments/service.ts';
import { ClinicService } from '../clinics/service.ts';
import type { Module } from '../module.ts';
import { patientRoutes } from './routes.ts';
import { PatientService } from './service.ts';

export function patientsModule(ctx: AppContext): Module {
  const { db, dialect } = ctx.storage;
  const timezone = ctx.config.timezone;
  const patients = new PatientService({ db, timezone });
  const appointments = new AppointmentService({
    db,
    dialect,
    timezone,
    publicUrl: ctx.config.publicUrl,
    clinics: new ClinicService({ db }),
    patients,
  });
  return { name: 'patients', routes: patientRoutes(patients, appointments) };
}
