/**
 * Retention: deletes what is kept no longer (rules.ts), rule after rule, in batches of
 * config.batchSize rows, each one statement or one short transaction, yielding to the event loop
 * between batches and stopping when the job's signal aborts. Counts the rows per rule
 * (cps_retention_pruned_rows_total) and logs one line per run, with counts only.
 */
import type { ChainSeal } from '../../access-log/seal.ts';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import type { RetentionConfig } from '../../config.ts';
import type { Database } from '../../db/schema.ts';
import { enqueue } from '../../jobs/queue-repo.ts';
import { deleteBatch } from './repo.ts';
import { RULES, type RetentionRule } from './rules.ts';

export const RETENTION_JOB = 'retention.run';
const DAY_MS = 86_400_000;

export interface RetentionReport {
  /** Rows deleted, by rule. */
  pruned: Record<string, number>;
  total: number;
  duration_ms: number;
}

export interface RetentionServiceDeps {
  db: Kysely<Database>;
  logger: Logger;
  config: RetentionConfig;
  /** Seals the access log's pruning anchors (audit/seal.ts). */
  seal: ChainSeal;
  /** Rows pruned, by table and rule. */
  pruned: Counter<'table' | 'rule'>;
  /** The rules to apply (all of them unless a test says otherwise). */
  rules?: readonly RetentionRule[];
}

export class RetentionService {
  readonly #deps: RetentionServiceDeps;

  constructor(deps: RetentionServiceDeps) {
    this.#deps = deps;
  }

  /** The time before which a rule's rows are old, at `now`. */
  cutoff(rule: RetentionRule, now: number): number {
    return now - rule.days(this.#deps.config) * DAY_MS;
  }

  /** Applies every rule once; an abort stops it between two batches (what was deleted stays deleted). */
  async run(signal?: AbortSignal, now = Date.now()): Promise<RetentionReport> {
    const { db, logger, config, pruned } = this.#deps;
    const started = performance.now();
    const report: RetentionReport = { pruned: {}, total: 0, duration_ms: 0 };
    for (const rule of this.#deps.rules ?? RULES) {
      signal?.throwIfAborted();
      const cutoff = this.cutoff(rule, now);
      let count = 0;
      const batches =
        'prune' in rule ? rule.prune(db, this.#deps.seal, cutoff, config.batchSize, logger) : tableBatches(db, rule, cutoff, config.batchSize);
      for await (const deleted of batches) {
        count += deleted;
        if (deleted > 0) pruned.inc({ table: rule.table, rule: rule.name }, deleted);
        await nextTurn();
        signal?.throwIfAborted();
      }
      report.pruned[rule.name] = count;
      report.total += count;
    }
    report.duration_ms = Math.round(performance.now() - started);
    logger.info({ pruned: report.pruned, total: report.total, duration_ms: report.duration_ms }, 'retention: old rows pruned');
    return report;
  }

  /**
   * Queues the run due at the end of the current interval. Its dedupe key is the interval's number, so
   * however many processes ask, one job runs per interval; each run queues the next.
   */
  async schedule(now = Date.now()): Promise<void> {
    const every = this.#deps.config.intervalMinutes * 60_000;
    const slot = Math.floor(now / every);
    await enqueue(this.#deps.db, {
      kind: RETENTION_JOB,
      payload: {},
      dedupeKey: `every-${this.#deps.config.intervalMinutes}m:${slot}`,
      dueAt: (slot + 1) * every,
    });
  }
}

async function* tableBatches(db: Kysely<Database>, rule: Extract<RetentionRule, { key: readonly string[] }>, cutoff: number, batchSize: number) {
  for (;;) {
    const deleted = await deleteBatch(db, rule, cutoff, batchSize);
    yield deleted;
    if (deleted < batchSize) return;
  }
}
