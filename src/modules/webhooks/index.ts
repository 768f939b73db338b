/** The webhooks module's front door: subscriptions, and the delivery jobs fed by every event. */
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import { webhookRoutes } from './routes.ts';
import { WebhookService } from './service.ts';
import { wireDeliveries } from './wiring.ts';

export function webhooksModule(ctx: AppContext): Module {
  const { queue } = wireDeliveries(ctx);
  const service = new WebhookService({ db: ctx.storage.db, masterKey: ctx.keys.masterKey, outbound: ctx.outbound.policy, queue });
  return { name: 'webhooks', routes: webhookRoutes(service) };
}
