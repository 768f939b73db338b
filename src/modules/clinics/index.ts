/** The clinics module's front door. */
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import { clinicRoutes } from './routes.ts';
import { ClinicService } from './service.ts';

export function clinicsModule(ctx: AppContext): Module {
  return { name: 'clinics', routes: clinicRoutes(new ClinicService({ db: ctx.storage.db })) };
}
