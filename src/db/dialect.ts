/** Asks a Kysely instance which database it speaks, for the few places whose SQL differs by dialect. */
import { PostgresAdapter, sql, type Expression, type Kysely, type RawBuilder } from 'kysely';

export function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/**
 * `column` is one of `values`, with the list sent as one parameter (a PostgreSQL array, a JSON array
 * on SQLite): the statement's text, and so PostgreSQL's prepared plan, is the same whatever the count.
 */
export function isAnyOf(db: Kysely<any>, column: Expression<string>, values: readonly string[]): RawBuilder<boolean> {
  return isPostgres(db)
    ? sql<boolean>`${column} = any(${[...values]}::text[])`
    : sql<boolean>`${column} in (select value from json_each(${JSON.stringify(values)}))`;
}
