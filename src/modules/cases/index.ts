/** The cases module's front door. */
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import { casesRoutes } from './routes.ts';

export function casesModule(ctx: AppContext): Module {
  return { name: 'cases', routes: casesRoutes(ctx) };
}
