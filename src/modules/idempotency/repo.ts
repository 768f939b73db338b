/** SQL only: the idempotency_keys rows (migration 0016). */
import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../../db/index.ts';
import type { IdempotencyKeysTable } from '../../db/schema.ts';

export type KeyRow = Selectable<IdempotencyKeysTable>;

/** Inserts the claim of a key no row holds; false when one does (another request claimed it first). */
export async function insertClaim(db: Db, row: Insertable<IdempotencyKeysTable>): Promise<boolean> {
  const inserted = await db
    .insertInto('idempotency_keys')
    .values(row)
    .onConflict((oc) => oc.columns(['business_id', 'idempotency_key']).doNothing())
    .returning('business_id')
    .executeTakeFirst();
  return inserted !== undefined;
}

export function findKey(db: Db, businessId: string, key: string): Promise<KeyRow | undefined> {
  return db.selectFrom('idempotency_keys').selectAll().where('business_id', '=', businessId).where('idempotency_key', '=', key).executeTakeFirst();
}

/**
 * Claims a row left by an earlier use: expired (any state), or running under `abandonedClaim` whose
 * lease ran out. The condition is checked by the update itself, so of two processes only one wins.
 */
export async function takeOver(
  db: Db,
  row: Insertable<IdempotencyKeysTable>,
  from: { expiredBy: number } | { abandonedClaim: string; leaseEndedBy: number },
): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    .set({
      fingerprint: row.fingerprint,
      claim: row.claim,
      claimed_until: row.claimed_until,
      status: null,
      content_type: null,
      body: null,
      created_at: row.created_at,
      expires_at: row.expires_at,
    })
    .where('business_id', '=', row.business_id)
    .where('idempotency_key', '=', row.idempotency_key)
    .$if('expiredBy' in from, (qb) => qb.where('expires_at', '<=', (from as { expiredBy: number }).expiredBy))
    .$if('abandonedClaim' in from, (qb) => {
      const abandoned = from as { abandonedClaim: string; leaseEndedBy: number };
      return qb.where('claim', '=', abandoned.abandonedClaim).where('status', 'is', null).where('claimed_until', '<=', abandoned.leaseEndedBy);
    })
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Extends a running claim's lease; false when the claim is no longer held. */
export async function renewClaim(db: Db, businessId: string, key: string, claim: string, until: number): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    .set({ claimed_until: until })
    .where('business_id', '=', businessId)
    .where('idempotency_key', '=', key)
    .where('claim', '=', claim)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Stores the response of a claimed key; false when the claim was lost meanwhile. */
export async function completeClaim(
  db: Db,
  businessId: string,
  key: string,
  claim: string,
  response: { status: number; content_type: string | null; body: string },
): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    .set({ ...response, claim: null, claimed_until: null })
    .where('business_id', '=', businessId)
    .where('idempotency_key', '=', key)
    .where('claim', '=', claim)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function deleteClaim(db: Db, businessId: string, key: string, claim: string): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('business_id', '=', businessId)
    .where('idempotency_key', '=', key)
    .where('claim', '=', claim)
    .execute();
}

/** The business's keys with a stored answer, a page in key order after `after`. */
export async function storedAnswers(
  db: Db,
  businessId: string,
  after: string,
  limit: number,
): Promise<Array<{ idempotency_key: string; body: string }>> {
  const rows = await db
    .selectFrom('idempotency_keys')
    .select(['idempotency_key', 'body'])
    .where('business_id', '=', businessId)
    .where('idempotency_key', '>', after)
    .where('body', 'is not', null)
    .orderBy('idempotency_key')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ idempotency_key: row.idempotency_key, body: row.body ?? '' }));
}

export async function deleteKeys(db: Db, businessId: string, keys: string[]): Promise<void> {
  if (keys.length === 0) return;
  await db.deleteFrom('idempotency_keys').where('business_id', '=', businessId).where('idempotency_key', 'in', keys).execute();
}
