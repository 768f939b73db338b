import type { Kysely } from 'kysely';

/**
 * Each run of `cps backup` and `cps restore`, as the command records it (the admin API's operations and the
 * console's health page show the last ones): when it ran, how it ended, the file's size and its name only
 * (never its directory), and the reason of a failure.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('backup_runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('command', 'text', (c) => c.notNull())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('finished_at', 'bigint', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('bytes', 'bigint')
    .addColumn('file', 'text')
    .addColumn('error', 'text')
    .execute();
  await db.schema.createIndex('backup_runs_started_idx').on('backup_runs').columns(['command', 'started_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('backup_runs').execute();
}
