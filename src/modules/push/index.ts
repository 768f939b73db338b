/** The push module's front door: credentials, devices, notifications and their delivery jobs. */
import { Counter } from 'prom-client';
import { parsedJson } from '../../compartment.ts';
import { ConfigError } from '../../config.ts';
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import { FcmClient } from './fcm.ts';
import { enqueueDeliveries, registerDeliveryJobs } from './jobs.ts';
import * as repo from './repo.ts';
import { pushRoutes } from './routes.ts';
import { PushService, type PushDeps } from './service.ts';
import type { PatientService } from '../patients/service.ts';

/** CPS_FCM_URL passes the outbound policy's static rules at start (its address is checked on every connection). */
function checkFcmUrl(ctx: AppContext): void {
  try {
    ctx.outbound.policy.assertStatic(new URL(ctx.config.fcmUrl));
  } catch {
    throw new ConfigError('CPS_FCM_URL', 'must be https to a public host in production');
  }
}

export function pushModule(ctx: AppContext, patients: PatientService): Module {
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
  ctx.compartment.register({
    name: 'push',
    tables: [
      { table: 'push_devices', column: 'patient_ref', by: 'ref' },
      { table: 'push_notifications', column: 'patient_ref', by: 'ref' },
    ],
    moveKey: async (trx, businessId, from, to) => ({ devices: await repo.moveToKey(trx, businessId, from, to) }),
    export: async (db, scope) => ({
      push_devices: await repo.devicesUnder(db, scope.businessId, scope.refs),
      push_notifications: (await repo.notificationsUnder(db, scope.businessId, scope.refs)).map((row) => ({ ...row, data: parsedJson(row.data) })),
    }),
    erase: (trx, scope) => repo.deleteUnder(trx, scope.businessId, scope.refs),
  });
  return { name: 'push', routes: pushRoutes(push, patients) };
}
