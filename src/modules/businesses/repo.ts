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
