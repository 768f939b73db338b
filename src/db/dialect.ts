/** Asks a Kysely instance which database it speaks, for the few places whose SQL differs by dialect. */
import { PostgresAdapter, sql, type Expression, type Kysely, type RawBuilder, type SelectQueryBuilder } from 'kysely';

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

/**
 * `column` is one of the values `query` answers (one column). PostgreSQL reads the answer once, as an array,
 * before the scan it filters: written `in (query)`, its planner joins the query to each row the scan reads.
 */
export function isAnyOfQuery(
  db: Kysely<any>,
  column: Expression<string>,
  query: SelectQueryBuilder<any, any, Record<string, string>>,
): RawBuilder<boolean> {
  return isPostgres(db) ? sql<boolean>`${column} = any(array(${query}))` : sql<boolean>`${column} in (${query})`;
}
