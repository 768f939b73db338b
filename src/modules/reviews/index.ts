/** The reviews module's front door. */
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import { reviewRoutes } from './routes.ts';
import { ReviewService } from './service.ts';

export function reviewsModule(ctx: AppContext): Module {
  const service = new ReviewService({ db: ctx.storage.db });
  return { name: 'reviews', routes: reviewRoutes(service, ctx.config.timezone) };
}
