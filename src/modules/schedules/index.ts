/** The schedules module's front door. */
import type { AppContext } from '../../context.ts';
import { ClinicService } from '../clinics/service.ts';
import type { Module } from '../module.ts';
import { scheduleRoutes } from './routes.ts';
import { ScheduleService } from './service.ts';

export function schedulesModule(ctx: AppContext): Module {
  const { db } = ctx.storage;
  const service = new ScheduleService({ db, timezone: ctx.config.timezone, clinics: new ClinicService({ db }) });
  return { name: 'schedules', routes: scheduleRoutes(service) };
}
