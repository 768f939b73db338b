/** The ops module's front door. */
import type { AppContext } from '../../context.ts';
import { connectRedis } from '../../security/buckets.ts';
import type { Module } from '../module.ts';
import { opsRoutes } from './routes.ts';

export { recordBackupRun } from './backup-runs.ts';

export function opsModule(ctx: AppContext): Module {
  // A connection of its own, so /ready says whether the Redis that CPS_REDIS_URL names answers.
  const redis = ctx.config.redisUrl ? connectRedis(ctx.config.redisUrl, ctx.logger, 'readiness') : null;
  return {
    name: 'ops',
    routes: opsRoutes(ctx, redis),
    ...(redis ? { stop: async () => void (await redis.quit().catch(() => redis.disconnect())) } : {}),
  };
}
