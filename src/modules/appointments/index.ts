/** The appointments module's front door. */
import type { AppContext } from '../../context.ts';
import { ClinicService } from '../clinics/service.ts';
import type { Module } from '../module.ts';
import { PatientService } from '../patients/service.ts';
import { ScheduleService } from '../schedules/service.ts';
import { appointmentRoutes, schedulingRoutes } from './routes.ts';
import { Scheduling } from './scheduling.ts';

import { AppointmentService } from './service.ts';

export { AppointmentRecordSchema } from './routes.ts';

/** The appointment service over the context, and the scheduling it books with; other modules build theirs here. */
export function appointmentServices(ctx: AppContext, patients = new PatientService({ db: ctx.storage.db, timezone: ctx.config.timezone })) {
  const { db, dialect } = ctx.storage;
  const clinics = new ClinicService({ db });
  const scheduling = new Scheduling({ db, clinics, schedules: new ScheduleService({ db, timezone: ctx.config.timezone, clinics }) });
  const service = new AppointmentService({
    db,
    dialect,
    timezone: ctx.config.timezone,
    publicUrl: ctx.config.publicUrl,
    clinics,
    patients,
    scheduling,
  });
  return { service, scheduling };
}

export function appointmentsModule(ctx: AppContext): Module {
  const { service, scheduling } = appointmentServices(ctx);
  const routes = appointmentRoutes(service);
  const scheduled = schedulingRoutes(scheduling, service);
  return {
    name: 'appointments',
    routes: async (app) => {
      await routes(app);
      await scheduled(app);
    },
  };
}
