/**
 * What retention deletes: one rule per kind of row, in the order they run (a parent's rows after the
 * rows that point at them). A rule names its table, the column of epoch milliseconds its age is
 * counted from, its period (config.retention, CPS_RETENTION_*_DAYS) and, where only some rows may go,
 * what else makes a row prunable. A row whose age column is null is never old. Adding a rule is one
 * entry here (and, for a large table, an index on its age column: migrations/0019_retention.ts).
 */
import { sql, type Expression, type ExpressionBuilder, type Kysely, type SelectQueryBuilder, type SqlBool } from 'kysely';
import type { Logger } from 'pino';
import { pruneChains } from '../../access-log/prune.ts';
import type { ChainSeal } from '../../access-log/seal.ts';
import type { RetentionConfig } from '../../config.ts';
import type { Database } from '../../db/schema.ts';
import { EVENT_DISPATCH } from '../../jobs/outbox.ts';

type Table = keyof Database & string;
type Column<T extends Table> = keyof Database[T] & string;

/** Rows of `table` whose `age` is older than the period and which `where` allows, deleted by primary key. */
export interface TableRule {
  /** The metric's and report's name of the rule. */
  name: string;
  table: Table;
  /** The primary key's columns. */
  key: readonly string[];
  /** Epoch milliseconds; the row is old once this is before now minus the period. */
  age: string;
  days: (config: RetentionConfig) => number;
  /** What else must hold for the row to go (a delivery settled, nothing still pointing at it). */
  where?: (eb: ExpressionBuilder<Database, Table>) => Expression<SqlBool>;
}

/** A table rule, its columns checked against the table's type. */
function rule<T extends Table>(declared: {
  name: string;
  table: T;
  key: readonly Column<T>[];
  age: Column<T>;
  days: (config: RetentionConfig) => number;
  where?: (eb: ExpressionBuilder<Database, T>) => Expression<SqlBool>;
}): TableRule {
  return declared as unknown as TableRule;
}

/** A rule that deletes in its own way; yields the rows each of its transactions deleted. */
export interface CustomRule {
  name: string;
  table: Table;
  days: (config: RetentionConfig) => number;
  prune: (db: Kysely<Database>, seal: ChainSeal, cutoff: number, batchSize: number, logger: Logger) => AsyncIterable<number>;
}

export type RetentionRule = TableRule | CustomRule;

/**
 * Whether no row of `rows` exists. LIMIT 1 OFFSET 0 keeps it a look-up per candidate through the
 * child's index: PostgreSQL would otherwise turn NOT EXISTS into an anti join, and right after the
 * children were pruned (statistics not yet updated) it hashes the whole child table for every batch.
 */
function none<DB, TB extends keyof DB, O>(rows: SelectQueryBuilder<DB, TB, O>): Expression<SqlBool> {
  return sql<SqlBool>`not exists ${rows.limit(1).offset(0)}`;
}

/** Whether some row of `rows` exists, looked up as `none` does. */
function some<DB, TB extends keyof DB, O>(rows: SelectQueryBuilder<DB, TB, O>): Expression<SqlBool> {
  return sql<SqlBool>`exists ${rows.limit(1).offset(0)}`;
}

const notPending = (eb: ExpressionBuilder<Database, 'webhook_deliveries' | 'push_deliveries'>) => eb('status', '<>', 'pending');

export const RULES: readonly RetentionRule[] = [
  {
    // A prefix of each business's chain, leaving an anchor from which `cps audit verify` starts.
    name: 'access_log',
    table: 'access_log',
    days: (c) => c.accessLogDays,
    prune: (db, seal, cutoff, batchSize, logger) =>
      pruneChains(db, seal, cutoff, batchSize, (link) =>
        logger.error({ business_id: link.businessId, seq: link.seq }, 'retention: the access log chain is broken here; not pruned past it'),
      ),
  },
  rule({
    name: 'jobs.succeeded',
    table: 'jobs',
    key: ['id'],
    age: 'finished_at',
    days: (c) => c.jobsDays,
    where: (eb) => eb('status', '=', 'succeeded'),
  }),
  rule({
    name: 'jobs.failed',
    table: 'jobs',
    key: ['id'],
    age: 'finished_at',
    days: (c) => c.failedJobsDays,
    where: (eb) => eb('status', '=', 'failed'),
  }),
  // A delivery's attempts, its rows and then its event, children first: an event goes once none is left.
  rule({
    name: 'webhook_delivery_attempts',
    table: 'webhook_delivery_attempts',
    key: ['delivery_id', 'attempt'],
    age: 'finished_at',
    days: (c) => c.eventsDays,
  }),
  rule({ name: 'webhook_deliveries', table: 'webhook_deliveries', key: ['id'], age: 'updated_at', days: (c) => c.eventsDays, where: notPending }),
  rule({
    name: 'events',
    table: 'events',
    key: ['id'],
    age: 'created_at',
    days: (c) => c.eventsDays,
    where: (eb) =>
      eb.and([
        none(eb.selectFrom('webhook_deliveries as d').select('d.id').whereRef('d.event_id', '=', 'events.id')),
        // Not dispatched yet (its dispatch job's dedupe key is the event's id).
        none(
          eb
            .selectFrom('jobs as j')
            .select('j.id')
            .where('j.kind', '=', EVENT_DISPATCH)
            .whereRef('j.dedupe_key', '=', 'events.id')
            .where('j.status', 'in', ['pending', 'running']),
        ),
        // The last event of an ordering key stays: the key's next event is numbered after it (outbox.ts).
        eb.or([
          eb('ordering_key', 'is', null),
          some(
            eb
              .selectFrom('events as later')
              .select('later.id')
              .whereRef('later.business_id', '=', 'events.business_id')
              .whereRef('later.ordering_key', '=', 'events.ordering_key')
              .whereRef('later.sequence', '>', 'events.sequence'),
          ),
        ]),
      ]),
  }),
  rule({
    name: 'push_deliveries',
    table: 'push_deliveries',
    key: ['notification_id', 'did'],
    age: 'updated_at',
    days: (c) => c.pushDays,
    where: notPending,
  }),
  rule({
    name: 'push_notifications',
    table: 'push_notifications',
    key: ['id'],
    age: 'created_at',
    days: (c) => c.pushDays,
    where: (eb) =>
      eb.not(eb.exists(eb.selectFrom('push_deliveries as d').select('d.did').whereRef('d.notification_id', '=', 'push_notifications.id'))),
  }),
  // A spent token stays until it expires: presented again before then, it revokes its family.
  rule({ name: 'refresh_tokens.expired', table: 'refresh_tokens', key: ['id'], age: 'expires_at', days: (c) => c.refreshTokensDays }),
  rule({ name: 'refresh_tokens.revoked', table: 'refresh_tokens', key: ['id'], age: 'revoked_at', days: (c) => c.refreshTokensDays }),
  rule({
    name: 'idempotency_keys',
    table: 'idempotency_keys',
    key: ['business_id', 'idempotency_key'],
    age: 'expires_at',
    days: (c) => c.idempotencyKeysDays,
  }),
  rule({
    name: 'cases.tombstones',
    table: 'cases',
    key: ['business_id', 'patient_ref', 'id'],
    age: 'updated_at',
    days: (c) => c.caseTombstonesDays,
    where: (eb) => eb('status', '=', 'D'),
  }),
  // Once the sweep removed its files (their rows go with their bytes).
  rule({
    name: 'documents.tombstones',
    table: 'documents',
    key: ['business_id', 'id'],
    age: 'updated_at',
    days: (c) => c.documentTombstonesDays,
    where: (eb) =>
      eb.and([
        eb('status', '=', 'D'),
        none(
          eb
            .selectFrom('document_files as f')
            .select('f.idx')
            .whereRef('f.business_id', '=', 'documents.business_id')
            .whereRef('f.document_id', '=', 'documents.id'),
        ),
      ]),
  }),
  rule({
    name: 'schedule_tokens',
    table: 'schedule_tokens',
    key: ['business_id', 'clinic_id', 'doctor_id', 'session_start'],
    age: 'session_start',
    days: (c) => c.scheduleTokensDays,
  }),
  // A patient's export, document included, once its link expired (modules/privacy).
  rule({ name: 'privacy_exports', table: 'privacy_exports', key: ['id'], age: 'expires_at', days: () => 0 }),
  // A lease nobody renewed for a day: its holder is gone (a live one renews every few seconds).
  rule({ name: 'job_locks', table: 'job_locks', key: ['name'], age: 'expires_at', days: () => 1 }),
];
