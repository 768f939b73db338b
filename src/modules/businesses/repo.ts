import { sql } from 'kysely';
import type { Db } from '../../db/index.ts';
import type { ApiClientsTable, BusinessesTable } from '../../db/schema.ts';

export async function insertBusiness(db: Db, business: BusinessesTable): Promise<void> {
  await db.insertInto('businesses').values(business).execute();
}

/** Inserts the business unless one with its id exists; true when this call created it. */
export async function claimBusiness(db: Db, business: BusinessesTable): Promise<boolean> {
  const result = await db
    .insertInto('businesses')
    .values(business)
    .onConflict((oc) => oc.column('id').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
}

export async function findBusiness(db: Db, id: string): Promise<BusinessesTable | undefined> {
  return db.selectFrom('businesses').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function countBusinesses(db: Db): Promise<number> {
  const row = await db
    .selectFrom('businesses')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function insertClient(db: Db, client: ApiClientsTable): Promise<void> {
  await db.insertInto('api_clients').values(client).execute();
}

export async function findActiveClient(db: Db, clientId: string): Promise<ApiClientsTable | undefined> {
  return db.selectFrom('api_clients').selectAll().where('id', '=', clientId).where('disabled_at', 'is', null).executeTakeFirst();
}

export async function listBusinesses(db: Db): Promise<(BusinessesTable & { clients: number })[]> {
  const rows = await db
    .selectFrom('businesses')
    .leftJoin('api_clients', (join) => join.onRef('api_clients.business_id', '=', 'businesses.id').on('api_clients.disabled_at', 'is', null))
    .select(['businesses.id', 'businesses.name', 'businesses.created_at', (eb) => eb.fn.count<number>('api_clients.id').as('clients')])
    .groupBy(['businesses.id', 'businesses.name', 'businesses.created_at'])
    .orderBy('businesses.created_at')
    .orderBy('businesses.id')
    .execute();
  return rows.map((row) => ({ ...row, clients: Number(row.clients) }));
}

export async function listClients(db: Db, businessId: string): Promise<Omit<ApiClientsTable, 'secret_hash' | 'previous_secret_hash'>[]> {
  return db
    .selectFrom('api_clients')
    .select(['id', 'business_id', 'scopes', 'created_at', 'disabled_at', 'previous_secret_expires_at'])
    .where('business_id', '=', businessId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Disables the client; false when it is unknown, already disabled, or (with `businessId`) another business's. */
export async function disableClient(db: Db, clientId: string, now: number, businessId?: string): Promise<boolean> {
  let update = db
    .updateTable('api_clients')
    .set({ disabled_at: now, previous_secret_hash: null, previous_secret_expires_at: null })
    .where('id', '=', clientId)
    .where('disabled_at', 'is', null);
  if (businessId !== undefined) update = update.where('business_id', '=', businessId);
  const result = await update.executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Replaces a client's secret hash `seenHash` with `secretHash`, keeping the one replaced as the previous
 * until `previousExpiresAt` (epoch ms; null: it stops now); false when the client is disabled or its
 * secret is no longer `seenHash` (another rotation came first).
 */
export async function replaceClientSecret(
  db: Db,
  clientId: string,
  seenHash: string,
  secretHash: string,
  previousExpiresAt: number | null,
): Promise<boolean> {
  const result = await db
    .updateTable('api_clients')
    .set({
      secret_hash: secretHash,
      previous_secret_hash: previousExpiresAt === null ? null : seenHash,
      previous_secret_expires_at: previousExpiresAt,
    })
    .where('id', '=', clientId)
    .where('secret_hash', '=', seenHash)
    .where('disabled_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

const DAY_MS = 86_400_000;

export interface UsageDay {
  /** The UTC day's number since 1970-01-01. */
  day: number;
  requests: number;
  failures: number;
  deliveries: number;
  delivery_failures: number;
}

/**
 * A business's recorded traffic per UTC day from `since`: its access log entries (the API calls that touch
 * its data, an answer of 400 or more or none a failure) and its webhook delivery attempts (no answer, or one
 * outside 2xx, a failure). The usage has no table of its own: these two already record it.
 */
export async function usageByDay(db: Db, businessId: string, since: number): Promise<UsageDay[]> {
  // Whole-number division in both dialects (the times are integers), the divisor a literal so that
  // PostgreSQL sees the grouped expression and the selected one as the same.
  const dayOf = sql<number>`(at / ${sql.lit(DAY_MS)})`;
  const requests = await db
    .selectFrom('access_log')
    .select([
      dayOf.as('day'),
      (eb) => eb.fn.countAll<number>().as('n'),
      sql<number>`sum(case when status is null or status >= 400 then 1 else 0 end)`.as('failed'),
    ])
    .where('business_id', '=', businessId)
    .where('at', '>=', since)
    .groupBy(dayOf)
    .execute();
  const attemptDay = sql<number>`(started_at / ${sql.lit(DAY_MS)})`;
  const attempts = await db
    .selectFrom('webhook_delivery_attempts')
    .select([
      attemptDay.as('day'),
      (eb) => eb.fn.countAll<number>().as('n'),
      sql<number>`sum(case when status_code is null or status_code < 200 or status_code >= 300 then 1 else 0 end)`.as('failed'),
    ])
    .where('business_id', '=', businessId)
    .where('started_at', '>=', since)
    .groupBy(attemptDay)
    .execute();
  const days = new Map<number, UsageDay>();
  const at = (day: number) => {
    let found = days.get(day);
    if (!found) days.set(day, (found = { day, requests: 0, failures: 0, deliveries: 0, delivery_failures: 0 }));
    return found;
  };
  for (const row of requests) Object.assign(at(Number(row.day)), { requests: Number(row.n), failures: Number(row.failed) });
  for (const row of attempts) Object.assign(at(Number(row.day)), { deliveries: Number(row.n), delivery_failures: Number(row.failed) });
  return [...days.values()];
}
