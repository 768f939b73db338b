import type { Kysely } from 'kysely';
import { isPostgres } from '../dialect.ts';

/**
 * Search index snapshots kept in the database, in parts of a few megabytes (see
 * modules/search/catalogue/snapshots.ts): a server with no snapshot file of its own (a new machine, a new data
 * directory) reads the one a builder or `cps import` stored instead of building the index. One per
 * release of the search code (`source`); `version` is the catalogue version it holds.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('search_snapshots')
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('part', 'integer', (c) => c.notNull())
    .addColumn('version', 'bigint', (c) => c.notNull())
    .addColumn('written_at', 'bigint', (c) => c.notNull())
    .addColumn('data', isPostgres(db) ? 'bytea' : 'blob', (c) => c.notNull())
    .addPrimaryKeyConstraint('search_snapshots_pk', ['source', 'part'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('search_snapshots').execute();
}
