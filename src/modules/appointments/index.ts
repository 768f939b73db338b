/** The appointments module's front door. */
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import { appointmentRoutes } from './routes.ts';

export function appointmentsModule(ctx: AppContext): Module {
  return { name: 'appointments', routes: appointmentRoutes(ctx) };
}
