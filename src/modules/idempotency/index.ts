/**
 * The idempotency module's front door: the key store behind the Idempotency-Key header (the HTTP
 * layer's src/http/idempotency.ts uses it for the routes whose config says `idempotent: true`) and
 * the job that prunes expired keys. It has no routes of its own.
 */
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import { IdempotencyService, PRUNE_JOB } from './service.ts';

export function idempotencyModule(ctx: AppContext): Module & { keys: IdempotencyService } {
  const keys = new IdempotencyService({
    db: ctx.storage.db,
    logger: ctx.logger,
    masterKey: ctx.keys.masterKey,
    waitMs: ctx.config.idempotencyWaitMs,
  });
  ctx.jobs.register(PRUNE_JOB, async ({ signal }) => void (await keys.pruneExpired(signal)), {
    concurrency: 1,
    retrySchedule: [60, 300, 1800, 3600],
  });
  return { name: 'idempotency', routes: async () => {}, keys };
}
