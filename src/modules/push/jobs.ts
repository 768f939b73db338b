/**
 * Delivery jobs: one per device of a notification. Interim until the durable jobs land on main:
 * nothing is queued yet (tests drive `deliver` directly).
 */
import type { AppContext } from '../../context.ts';
import type { Db } from '../../db/index.ts';
import type { PushDeps } from './service.ts';

export const PUSH_DELIVER = 'push.deliver';

export async function enqueueDeliveries(_trx: Db, _businessId: string, _notificationId: string, _dids: string[]): Promise<void> {}

export function registerDeliveryJobs(_ctx: AppContext, _deps: PushDeps): void {}
