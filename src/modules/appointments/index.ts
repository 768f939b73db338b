/** The appointments module's front door. */
import type { AppContext } from '../../context.ts';
import { ClinicService } from '../clinics/service.ts';
import type { Module } from '../module.ts';
import { appointmentRoutes } from './routes.ts';
import { AppointmentService } from './service.ts';

export function appointmentsModule(ctx: AppContext): Module {
  const clinics = new ClinicService({ db: ctx.storage.db });
  return { name: 'appointments', routes: appointmentRoutes(new AppointmentService(ctx, clinics)) };
}
