import { sql, type Kysely } from 'kysely';

/**
 * Every business has a chain head from its creation on (BusinessService opens it), so verify reads a
 * business without one as a chain deleted with its head. Businesses from before get a genesis head
 * here; it is unsealed (migrations do not hold the master key) until the process that applied this
 * migration seals it (audit/store.ts UNSEALED_BY_MIGRATIONS).
 */
export async function up(db: Kysely<any>): Promise<void> {
  const genesis = '0'.repeat(64);
  await sql`
    insert into access_log_heads (business_id, seq, hash, mac)
    select b.id, 0, ${genesis}, null from businesses b
    where not exists (select 1 from access_log_heads h where h.business_id = b.id)
  `.execute(db);
}

export async function down(): Promise<void> {}
