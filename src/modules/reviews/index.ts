/** The reviews module's front door. */
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import * as repo from './repo.ts';
import { reviewRoutes } from './routes.ts';
import { ReviewService } from './service.ts';

export function reviewsModule(ctx: AppContext): Module {
  ctx.compartment.register({
    name: 'reviews',
    tables: [{ table: 'reviews', column: 'patient_id', by: 'id' }],
    moveById: async (trx, merge) => ({ reviews: await repo.moveReviews(trx, merge.businessId, merge.from.id, merge.to.id) }),
    export: async (db, scope) => ({ reviews: await repo.reviewsOfPatients(db, scope.businessId, scope.patientIds) }),
    erase: (trx, scope) => repo.anonymiseReviewsOfPatients(trx, scope.businessId, scope.patientIds),
  });
  const service = new ReviewService({ db: ctx.storage.db });
  return { name: 'reviews', routes: reviewRoutes(service, ctx.config.timezone) };
}
