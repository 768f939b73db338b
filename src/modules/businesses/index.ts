/** The businesses module's front door: the admin API, the demo business, and what the cps command creates. */
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import { businessRoutes } from './routes.ts';
import { BusinessService, type ClientDisabledHook } from './service.ts';

export { createDemoBusiness } from './demo.ts';
export { BusinessService, type ClientDisabledHook } from './service.ts';

/**
 * The app's one BusinessService: the list of modules builds it and hands it to every front door that needs it,
 * with what runs when a client is disabled (auth's refresh tokens' revocation).
 */
export function businessService(ctx: AppContext, onClientDisabled: ClientDisabledHook): BusinessService {
  return new BusinessService({ db: ctx.storage.db, chainSeal: ctx.audit.chainSeal, onClientDisabled });
}

export function businessesModule(businesses: BusinessService): Module {
  return { name: 'businesses', routes: businessRoutes(businesses) };
}
