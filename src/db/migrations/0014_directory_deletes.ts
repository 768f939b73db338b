import { sql, type Kysely } from 'kysely';

/**
 * Clinics and doctors are deleted softly (`deleted_at`): the appointments that name them stay readable.
 * A partner id is unique among the records not deleted, so a deleted record's partner id can be given
 * to a new one.
 */
export async function up(db: Kysely<any>): Promise<void> {
  for (const table of ['clinics', 'doctors']) {
    await db.schema.alterTable(table).addColumn('deleted_at', 'bigint').execute();
    await db.schema.dropIndex(`${table}_partner_idx`).execute();
    await sql`create unique index ${sql.id(`${table}_partner_idx`)} on ${sql.table(table)} (business_id, partner_id) where deleted_at is null`.execute(
      db,
    );
  }
}

/** Fails when a partner id was reused after a delete: the full unique index cannot hold both. */
export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['clinics', 'doctors']) {
    await db.schema.dropIndex(`${table}_partner_idx`).execute();
    await db.schema.createIndex(`${table}_partner_idx`).on(table).columns(['business_id', 'partner_id']).unique().execute();
    await db.schema.alterTable(table).dropColumn('deleted_at').execute();
  }
}
