/** The webhooks module's front door: subscriptions, and the delivery jobs fed by every event. */
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import { webhookRoutes } from './routes.ts';
import { WebhookService } from './service.ts';
import { wireDeliveries } from './wiring.ts';
import { createBuckets } from '../../security/buckets.ts';

/** What a subscription's signing keys are encrypted under (cps restore checks the master key with it). */
export { keyAssociatedData } from './repo.ts';

export function webhooksModule(ctx: AppContext): Module {
  const { queue } = wireDeliveries(ctx);
  // Shared by every process through Redis when CPS_REDIS_URL is set.
  const replayLimiter = createBuckets({ redisUrl: ctx.config.redisUrl, logger: ctx.logger, what: 'webhook replay limit' });
  const service = new WebhookService({ db: ctx.storage.db, masterKey: ctx.keys.masterKey, outbound: ctx.outbound.policy, queue, replayLimiter });
  return { name: 'webhooks', routes: webhookRoutes(service), stop: () => replayLimiter.close() };
}
