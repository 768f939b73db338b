/** The schedules module's front door. */
import type { AppContext } from '../../context.ts';
import type { ClinicService } from '../clinics/service.ts';
import type { Module } from '../module.ts';
import { scheduleRoutes } from './routes.ts';
import { ScheduleService } from './service.ts';

/** The app's one ScheduleService (appointments book against it): the list of modules builds it and hands it on. */
export function scheduleService(ctx: AppContext, clinics: ClinicService): ScheduleService {
  return new ScheduleService({ db: ctx.storage.db, timezone: ctx.config.timezone, clinics });
}

export function schedulesModule(schedules: ScheduleService): Module {
  return { name: 'schedules', routes: scheduleRoutes(schedules) };
}
