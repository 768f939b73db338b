/** SQL only: one batch of a table rule's delete. */
import { sql, type Kysely, type SqlBool } from 'kysely';
import { isPostgres } from '../../db/dialect.ts';
import type { Database } from '../../db/schema.ts';
import type { TableRule } from './rules.ts';

/**
 * Deletes up to `limit` rows of the rule older than `cutoff`, oldest first, in one statement (its own
 * short transaction); returns how many. The rows are chosen through the rule's age index; on PostgreSQL
 * rows another transaction holds (a job being claimed or settled) are skipped, not waited for.
 */
export async function deleteBatch(db: Kysely<Database>, rule: TableRule, cutoff: number, limit: number): Promise<number> {
  const result = await batchStatement(db, rule, cutoff, limit).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The statement of one batch (EXPLAIN it to see the index a rule's batches use). */
export function batchStatement(db: Kysely<Database>, rule: TableRule, cutoff: number, limit: number) {
  // The rule's table and columns were checked where it was declared (rules.ts).
  const loose = db as unknown as Kysely<Record<string, Record<string, unknown>>>;
  let chosen = loose
    .selectFrom(rule.table)
    .select([...rule.key])
    .where(rule.age, '<', cutoff)
    .$if(rule.where !== undefined, (qb) => qb.where((eb) => rule.where!(eb as never)))
    .orderBy(rule.age)
    .limit(limit);
  if (isPostgres(db)) chosen = chosen.forUpdate().skipLocked();
  return loose.deleteFrom(rule.table).where(sql<SqlBool>`(${sql.join(rule.key.map((column) => sql.ref(column)))}) in (${chosen})`);
}
