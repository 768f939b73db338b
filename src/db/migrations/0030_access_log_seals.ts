import type { Kysely } from 'kysely';

/**
 * Seals of the access log chains' heads and pruning anchors (audit/seal.ts), and the time of each
 * anchor's last pruned entry. The seals need the master key, which migrations do not hold: rows from
 * before stay unsealed (null) until the service's first start seals them (AuditLog.start).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('access_log_heads').addColumn('mac', 'text').execute();
  await db.schema.alterTable('access_log_pruned').addColumn('mac', 'text').execute();
  await db.schema.alterTable('access_log_pruned').addColumn('through_at', 'bigint').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('access_log_pruned').dropColumn('through_at').execute();
  await db.schema.alterTable('access_log_pruned').dropColumn('mac').execute();
  await db.schema.alterTable('access_log_heads').dropColumn('mac').execute();
}
