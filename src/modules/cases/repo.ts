/** SQL of the cases module; every query is scoped by business and patient. */
import { sql, type RawBuilder } from 'kysely';
import type { Db, DialectName } from '../../db/index.ts';
import type { CasesTable } from '../../db/schema.ts';

/** The start of the current second in ms: PostgreSQL's clock, shared by every server process. */
const PG_SECOND_START = sql<number>`(floor(extract(epoch from clock_timestamp())) * 1000)::bigint`;

function sqliteSecondStart(): number {
  return Math.floor(Date.now() / 1000) * 1000;
}

/**
 * Takes the patient's write lock (held to the end of the transaction) and returns the updated_at for
 * this write: the start of the current second, never below an earlier write of the patient. The
 * clock is read only once the lock is held (a separate statement: an UPDATE that waits for a lock
 * would keep a clock value computed before the wait).
 */
export async function stampWrite(trx: Db, dialect: DialectName, businessId: string, patientRef: string): Promise<number> {
  await trx.insertInto('case_patients')
    .values({ business_id: businessId, patient_ref: patientRef, last_updated_at: 0 })
    .onConflict((oc) => oc.columns(['business_id', 'patient_ref']).doNothing())
    .execute();
  let now: RawBuilder<number> | number;
  if (dialect === 'postgres') {
    await trx.selectFrom('case_patients').select('last_updated_at')
      .where('business_id', '=', businessId).where('patient_ref', '=', patientRef)
      .forUpdate().execute();
    now = PG_SECOND_START;
  } else {
    // SQLite: this process's single connection runs one transaction at a time (Kysely's mutex).
    now = sqliteSecondStart();
  }
  const greatest = dialect === 'postgres' ? sql<number>`greatest(last_updated_at, ${now})` : sql<number>`max(last_updated_at, ${now})`;
  const row = await trx.updateTable('case_patients').set({ last_updated_at: greatest })
    .where('business_id', '=', businessId).where('patient_ref', '=', patientRef)
    .returning('last_updated_at')
    .executeTakeFirstOrThrow();
  return Number(row.last_updated_at);
}

/**
 * Waits for the patient's writes in flight to commit (PostgreSQL: a share lock on the patient row,
 * held to the end of the transaction). False when the patient has no cases at all.
 */
export async function lockForListing(trx: Db, dialect: DialectName, businessId: string, patientRef: string): Promise<boolean> {
  let query = trx.selectFrom('case_patients').select('last_updated_at')
    .where('business_id', '=', businessId).where('patient_ref', '=', patientRef);
  if (dialect === 'postgres') query = query.forShare();
  return (await query.executeTakeFirst()) !== undefined;
}

export interface PageQuery {
  businessId: string;
  patientRef: string;
  /** Keyset position: cases strictly after (updatedAt, id). */
  after: { updatedAt: number; id: string } | null;
  /** Only cases with updated_at >= this (ms). */
  updatedFrom: number | null;
  limit: number;
}

/**
 * One page in (updated_at, id) order, from seconds that are over (updated_at < the start of the
 * current second). Run it after lockForListing, in the same transaction, so the clock is read with
 * the patient's lock held. One range scan of cases_sync_idx, however deep the page.
 */
export async function listPage(trx: Db, dialect: DialectName, page: PageQuery): Promise<CasesTable[]> {
  const closedBefore = dialect === 'postgres' ? sql<number>`(select ${PG_SECOND_START})` : sqliteSecondStart();
  let query = trx.selectFrom('cases').selectAll()
    .where('business_id', '=', page.businessId)
    .where('patient_ref', '=', page.patientRef)
    .where('updated_at', '<', closedBefore);
  if (page.after) {
    const { updatedAt, id } = page.after;
    query = query.where((eb) => eb(eb.refTuple('updated_at', 'id'), '>', eb.tuple(updatedAt, id)));
  } else if (page.updatedFrom !== null) {
    query = query.where('updated_at', '>=', page.updatedFrom);
  }
  return query.orderBy('updated_at').orderBy('id').limit(page.limit).execute();
}

export async function findCase(db: Db, businessId: string, patientRef: string, id: string): Promise<CasesTable | undefined> {
  return db.selectFrom('cases').selectAll()
    .where('business_id', '=', businessId).where('patient_ref', '=', patientRef).where('id', '=', id)
    .executeTakeFirst();
}

export async function insertCase(db: Db, row: CasesTable): Promise<void> {
  await db.insertInto('cases').values(row).execute();
}

export type CaseChanges = Partial<Omit<CasesTable, 'business_id' | 'patient_ref' | 'id' | 'created_at'>>;

export async function updateCase(db: Db, businessId: string, patientRef: string, id: string, changes: CaseChanges): Promise<void> {
  await db.updateTable('cases').set(changes)
    .where('business_id', '=', businessId).where('patient_ref', '=', patientRef).where('id', '=', id)
    .execute();
}
