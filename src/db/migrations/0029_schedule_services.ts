import type { Kysely } from 'kysely';

/**
 * A schedule is the service it books (Eka's `conf_id`): its name, price and currency, all optional,
 * answered by the doctor's services and as the fee of its slots.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('schedules').addColumn('service_name', 'text').execute();
  await db.schema.alterTable('schedules').addColumn('price', 'double precision').execute();
  await db.schema.alterTable('schedules').addColumn('currency', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ['currency', 'price', 'service_name']) await db.schema.alterTable('schedules').dropColumn(column).execute();
}
