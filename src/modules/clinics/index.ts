/** The clinics module's front door. */
import type { AppContext } from '../../context.ts';
import { BusinessService } from '../businesses/service.ts';
import type { Module } from '../module.ts';
import { DirectoryService } from './directory.ts';
import { clinicRoutes } from './routes.ts';
import { ClinicService } from './service.ts';

export function clinicsModule(ctx: AppContext): Module {
  const { db } = ctx.storage;
  const directory = new DirectoryService({ db, businesses: new BusinessService({ db, chainSeal: ctx.audit.chainSeal }) });
  return { name: 'clinics', routes: clinicRoutes(new ClinicService({ db }), directory) };
}
