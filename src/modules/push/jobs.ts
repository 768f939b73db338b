/**
 * Delivery jobs: one per device of a notification, enqueued in the transaction that stores the
 * notification (so a notification exists exactly when its deliveries are queued). A job that runs
 * again after a crash is harmless: `deliver` leaves a delivery that is no longer pending alone.
 */
import type { AppContext } from '../../context.ts';
import type { Db } from '../../db/index.ts';
import { enqueue } from '../../jobs/queue-repo.ts';
import type { DeliveryJob, PushService } from './service.ts';

export const PUSH_DELIVER = 'push.deliver';
/** Deliveries of this process in flight at once (the FCM client bounds its requests as well). */
const CONCURRENCY = 8;

export async function enqueueDeliveries(trx: Db, businessId: string, notificationId: string, dids: string[]): Promise<void> {
  for (const did of dids) {
    const payload: DeliveryJob = { notificationId, did };
    await enqueue(trx, { kind: PUSH_DELIVER, businessId, payload, dedupeKey: `${notificationId}:${did}` });
  }
}

export function registerDeliveryJobs(ctx: AppContext, service: PushService): void {
  ctx.jobs.register<DeliveryJob>(
    PUSH_DELIVER,
    async ({ job, signal }) => {
      if (job.businessId) await service.deliver(job.businessId, job.payload, signal);
    },
    {
      concurrency: CONCURRENCY,
      retrySchedule: ctx.config.pushRetrySchedule,
      onFailedAttempt: async (db, job, outcome, cause) => {
        if (job.businessId) await service.recordFailedAttempt(db, job.businessId, job.payload, outcome, cause);
      },
    },
  );
}
