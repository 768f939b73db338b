/** The clinics module's front door. */
import type { AppContext } from '../../context.ts';
import type { BusinessService } from '../businesses/service.ts';
import type { Module } from '../module.ts';
import { DirectoryService } from './directory.ts';
import { clinicRoutes } from './routes.ts';
import { ClinicService } from './service.ts';

/** The app's one ClinicService: the list of modules builds it and hands it to every front door that needs it. */
export function clinicService(ctx: AppContext): ClinicService {
  return new ClinicService({ db: ctx.storage.db });
}

export function clinicsModule(ctx: AppContext, clinics: ClinicService, businesses: BusinessService): Module {
  const directory = new DirectoryService({ db: ctx.storage.db, businesses });
  return { name: 'clinics', routes: clinicRoutes(clinics, directory) };
}
