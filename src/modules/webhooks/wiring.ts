/** Placeholder until the jobs branch lands: deliveries are not queued yet. */
import type { AppContext } from '../../context.ts';
import type { DeliveryQueue, WebhookServiceOptions } from './service.ts';

export function wireDeliveries(_ctx: AppContext): { queue: DeliveryQueue; options: WebhookServiceOptions } {
  const queue: DeliveryQueue = {
    enqueue: async () => { throw new Error('jobs not wired'); },
    retry: async () => { throw new Error('jobs not wired'); },
  };
  return { queue, options: {} };
}
