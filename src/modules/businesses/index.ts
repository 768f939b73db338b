/** The businesses module's front door: the admin API, the demo business, and what the cps command creates. */
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import { businessRoutes } from './routes.ts';
import { BusinessService } from './service.ts';

export { createDemoBusiness } from './demo.ts';
export { BusinessService } from './service.ts';

export function businessesModule(ctx: AppContext): Module {
  return { name: 'businesses', routes: businessRoutes(new BusinessService({ db: ctx.storage.db, chainSeal: ctx.audit.chainSeal })) };
}
