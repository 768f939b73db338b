/**
 * Deliveries on the durable jobs (src/jobs): the event dispatch runs fanOut for every event of
 * src/events.ts, each delivery is one `webhook.delivery` job (claimed by one worker at a time across
 * processes), retried on CPS_WEBHOOK_RETRY_SCHEDULE, honouring Retry-After; the queue's decision is
 * written on the delivery row (recordFailedAttempt).
 */
import { Counter } from 'prom-client';
import type { AppContext } from '../../context.ts';
import { enqueue, enqueueManyMarked, retryJob, type NewJob } from '../../jobs/queue-repo.ts';
import {
  attempt,
  AttemptLoads,
  DELIVERY_JOB,
  fanOut,
  recordFailedAttempt,
  SigningKeys,
  SuccessRecords,
  type AttemptDeps,
  type DeliveryQueue,
  type FailurePolicy,
  type QueuedDelivery,
} from './delivery.ts';
import { createSender, type Sender } from './sender.ts';
import { EVENT_NAMES } from '../../events.ts';

/**
 * A claim lasts this long without renewal (the worker renews it every third while the attempt
 * runs), so the deliveries of a process that died are sent by another within about this time.
 */
const LEASE_MS = 10_000;

/**
 * Deliveries in flight per process: under the outbound client's 50 sockets per destination, so a
 * request never waits for a socket inside its own timeout.
 */
const DELIVERY_CONCURRENCY = 48;

export interface WebhookWiring {
  queue: DeliveryQueue;
  sender: Sender;
}

function deliveryJob({ businessId, deliveryId, key, ordering }: QueuedDelivery): NewJob {
  return { kind: DELIVERY_JOB, businessId, payload: { deliveryId }, dedupeKey: key, ...(ordering && { ordering }) };
}

export function wireDeliveries(ctx: AppContext): WebhookWiring {
  const sender = createSender(ctx.outbound);
  const disabled = new Counter({
    name: 'cps_webhook_subscriptions_disabled_total',
    help: 'Webhook subscriptions disabled automatically, by reason (failing: every attempt failed for CPS_WEBHOOK_DISABLE_AFTER_SECONDS; gone: 410)',
    labelNames: ['reason'] as const,
    registers: [ctx.metrics],
  });
  const deps: AttemptDeps = {
    storage: ctx.storage,
    loads: new AttemptLoads(ctx.storage.db),
    signingKeys: new SigningKeys(ctx.keys.masterKey),
    successes: new SuccessRecords(ctx.storage.db),
    sender,
    logger: ctx.logger.child({ component: 'webhooks' }),
    outcomes: new Counter({
      name: 'cps_webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome (succeeded, retried, failed, disabled)',
      labelNames: ['outcome'] as const,
      registers: [ctx.metrics],
    }),
    disabled,
  };
  const policy: FailurePolicy = {
    disableAfterMs: ctx.config.webhookDisableAfterSeconds * 1000,
    logger: deps.logger,
    outcomes: deps.outcomes,
    disabled,
  };

  const queue: DeliveryQueue = {
    enqueue: (db, deliveries) => enqueueManyMarked(db, deliveries.map(deliveryJob)),
    async adopt(db, delivery, jobId) {
      const job = await retryJob(db, jobId, { businessId: delivery.businessId }, { deliveryId: delivery.deliveryId });
      return job ? job.id : enqueue(db, deliveryJob(delivery));
    },
    async retry(db, delivery, jobId) {
      const job = jobId ? await retryJob(db, jobId, { businessId: delivery.businessId }) : null;
      return job ? job.id : enqueue(db, deliveryJob(delivery));
    },
  };

  ctx.jobs.register<{ deliveryId: string }>(
    DELIVERY_JOB,
    async ({ job, signal }) => {
      await attempt(deps, { businessId: job.businessId!, deliveryId: job.payload.deliveryId, attempt: job.attempts, signal });
    },
    {
      retrySchedule: ctx.config.webhookRetrySchedule,
      concurrency: DELIVERY_CONCURRENCY,
      leaseMs: LEASE_MS,
      onFailedAttempt: (db, job, outcome, cause) => recordFailedAttempt(db, job.businessId!, job.payload.deliveryId, outcome, cause, policy),
    },
  );

  for (const type of EVENT_NAMES)
    ctx.jobs.onEvent(type, async (trx, events) => {
      await fanOut(trx, queue, events);
    });

  return { queue, sender };
}
