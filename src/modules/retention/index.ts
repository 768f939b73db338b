/**
 * The retention module's front door: the job that deletes what is kept no longer (rules.ts), run every
 * CPS_RETENTION_INTERVAL_MINUTES by one process, and `cps retention run` (runRetention). No routes.
 */
import { ChainSeal } from '../../access-log/seal.ts';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { Counter, Registry } from 'prom-client';
import type { RetentionConfig } from '../../config.ts';
import type { AppContext } from '../../context.ts';
import type { Database } from '../../db/schema.ts';
import type { Module } from '../module.ts';
import { RETENTION_JOB, RetentionService, type RetentionReport } from './service.ts';

export { RETENTION_JOB, RetentionService, type RetentionReport } from './service.ts';
export { RULES, type RetentionRule } from './rules.ts';

function prunedCounter(registry: Registry): Counter<'table' | 'rule'> {
  return new Counter({
    name: 'cps_retention_pruned_rows_total',
    help: 'Rows deleted by retention, by table and rule',
    labelNames: ['table', 'rule'] as const,
    registers: [registry],
  });
}

export function retentionModule(ctx: AppContext): Module & { service: RetentionService } {
  const service = new RetentionService({
    db: ctx.storage.db,
    logger: ctx.logger,
    config: ctx.config.retention,
    seal: new ChainSeal(ctx.keys.masterKey),
    pruned: prunedCounter(ctx.metrics),
  });
  ctx.jobs.register(
    RETENTION_JOB,
    async ({ signal }) => {
      await service.schedule();
      await service.run(signal);
    },
    { concurrency: 1, retrySchedule: [60, 300, 900], leaseMs: 60_000 },
  );
  return {
    name: 'retention',
    routes: async () => {},
    // Queues this interval's run; a process that cannot (the database is away) leaves it to the others'
    // runs, or to its next start.
    start: () => service.schedule().catch((error: unknown) => ctx.logger.warn({ err: error }, 'retention: could not queue its run')),
    service,
  };
}

/** `cps retention run`: every rule once, now. */
export function runRetention(db: Kysely<Database>, masterKey: Buffer, config: RetentionConfig, logger: Logger): Promise<RetentionReport> {
  return new RetentionService({ db, logger, config, seal: new ChainSeal(masterKey), pruned: prunedCounter(new Registry()) }).run();
}
