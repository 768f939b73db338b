/** The appointments module's front door. */
import type { AppContext } from '../../context.ts';
import { ClinicService } from '../clinics/service.ts';
import type { Module } from '../module.ts';
import { PatientService } from '../patients/service.ts';
import { appointmentRoutes } from './routes.ts';
import { AppointmentService } from './service.ts';

export { AppointmentRecordSchema } from './routes.ts';

export function appointmentsModule(ctx: AppContext): Module {
  const { db, dialect } = ctx.storage;
  const service = new AppointmentService({
    db,
    dialect,
    timezone: ctx.config.timezone,
    publicUrl: ctx.config.publicUrl,
    clinics: new ClinicService({ db }),
    patients: new PatientService({ db, timezone: ctx.config.timezone }),
  });
  return { name: 'appointments', routes: appointmentRoutes(service) };
}
