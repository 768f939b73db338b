/**
 * Versioned migrations for both dialects, run at start and by `cps migrate`. Kysely's migrator takes
 * a lock (a row lock on PostgreSQL), so several processes starting together migrate once.
 * A migration that needs dialect-specific SQL asks `isPostgres(db)`.
 */
import { PostgresAdapter, type Kysely } from 'kysely';
import { Migrator, type Migration, type MigrationResultSet } from 'kysely/migration';
import * as foundation from './migrations/0001_foundation.ts';
import * as jobs from './migrations/0002_jobs.ts';
import * as catalogue from './migrations/0003_catalogue.ts';
import * as cases from './migrations/0005_cases.ts';
import * as webhooks from './migrations/0007_webhooks.ts';

export const migrations: Record<string, Migration> = {
  '0001_foundation': foundation,
  '0002_jobs': jobs,
  '0003_catalogue': catalogue,
  '0005_cases': cases,
  '0007_webhooks': webhooks,
};

export function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: 'cps_migrations',
    migrationLockTableName: 'cps_migrations_lock',
    // Modules land in any order; a migration numbered below the newest applied one still runs.
    allowUnorderedMigrations: true,
  });
  const result: MigrationResultSet = await migrator.migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error');
    const error = result.error instanceof Error ? result.error : new Error(String(result.error));
    error.message = `migration ${failed?.migrationName ?? '?'} failed: ${error.message}`;
    throw error;
  }
  return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
