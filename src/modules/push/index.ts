/** The push module's front door: credentials, devices, notifications and their delivery jobs. */
import { Counter } from 'prom-client';
import { ConfigError } from '../../config.ts';
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import { FcmClient } from './fcm.ts';
import { enqueueDeliveries, registerDeliveryJobs } from './jobs.ts';
import { pushRoutes } from './routes.ts';
import { PushService, type PushDeps } from './service.ts';
import { PatientService } from '../patients/service.ts';

/** CPS_FCM_URL passes the outbound policy's static rules at start (its address is checked on every connection). */
function checkFcmUrl(ctx: AppContext): void {
  try {
    ctx.outbound.policy.assertStatic(new URL(ctx.config.fcmUrl));
  } catch {
    throw new ConfigError('CPS_FCM_URL', 'must be https to a public host in production');
  }
}

export function pushModule(ctx: AppContext): Module {
  checkFcmUrl(ctx);
  const logger = ctx.logger.child({ module: 'push' });
  const deps: PushDeps = {
    db: ctx.storage.db,
    masterKey: ctx.keys.masterKey,
    env: ctx.config.env,
    outbound: ctx.outbound.policy,
    fcm: new FcmClient({ fcmUrl: ctx.config.fcmUrl, http: ctx.outbound, logger }),
    logger,
    outcomes: new Counter({
      name: 'cps_push_deliveries_total',
      help: 'Push delivery attempts by outcome (sent, dropped, failed, retried)',
      labelNames: ['outcome'] as const,
      registers: [ctx.metrics],
    }),
    enqueueDeliveries,
  };
  const push = new PushService(deps);
  registerDeliveryJobs(ctx, push);
  const patients = new PatientService({ db: ctx.storage.db });
  return { name: 'push', routes: pushRoutes(push, patients) };
}
