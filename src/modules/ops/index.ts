/** The ops module's front door. */
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import { opsRoutes } from './routes.ts';

export function opsModule(ctx: AppContext): Module {
  return { name: 'ops', routes: opsRoutes(ctx) };
}
