/** Asks a Kysely instance which database it speaks, for the few places whose SQL differs by dialect. */
import { PostgresAdapter, type Kysely } from 'kysely';

export function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
