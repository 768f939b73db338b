/** The reviews module's front door. */
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import { reviewRoutes } from './routes.ts';

export function reviewsModule(ctx: AppContext): Module {
  return { name: 'reviews', routes: reviewRoutes(ctx) };
}
