/** SQL of the cases module; every query is scoped by business and patient. */
import { sql } from 'kysely';
import type { Db, DialectName } from '../../db/index.ts';
import type { CasesTable } from '../../db/schema.ts';

/** The start of the current second in ms: PostgreSQL's clock, shared by every server process. */
const PG_SECOND_START = sql<number>`(floor(extract(epoch from clock_timestamp())) * 1000)::bigint`;

function sqliteSecondStart(): number {
  return Math.floor(Date.now() / 1000) * 1000;
}

/**
 * The updated_at for a write of the patient's cases, the patient's records lock held (the caller takes
 * it first, see PatientService.lockRecords): the start of the current second, never below the
 * patient's latest updated_at (so it cannot go backwards if the clock steps back).
 */
export async function stampWrite(trx: Db, dialect: DialectName, businessId: string, patientRef: string): Promise<number> {
  const now = dialect === 'postgres' ? PG_SECOND_START : sqliteSecondStart();
  const latest = trx
    .selectFrom('cases')
    .select('updated_at')
    .where('business_id', '=', businessId)
    .where('patient_ref', '=', patientRef)
    .orderBy('updated_at', 'desc')
    .limit(1);
  const greatest = dialect === 'postgres' ? 'greatest' : 'max';
  const row = await sql<{ stamp: number }>`select ${sql.raw(greatest)}(${now}, coalesce((${latest}), 0)) as stamp`.execute(trx);
  return Number(row.rows[0]!.stamp);
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
  let query = trx
    .selectFrom('cases')
    .selectAll()
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
  return db
    .selectFrom('cases')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('patient_ref', '=', patientRef)
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function insertCase(db: Db, row: CasesTable): Promise<void> {
  await db.insertInto('cases').values(row).execute();
}

export type CaseChanges = Partial<Omit<CasesTable, 'business_id' | 'patient_ref' | 'id' | 'created_at'>>;

export async function updateCase(db: Db, businessId: string, patientRef: string, id: string, changes: CaseChanges): Promise<void> {
  await db
    .updateTable('cases')
    .set(changes)
    .where('business_id', '=', businessId)
    .where('patient_ref', '=', patientRef)
    .where('id', '=', id)
    .execute();
}

/* ---- the patient compartment (src/compartment.ts) ---- */

/** The case ids kept under both keys: a move from one key to the other would join two cases into one. */
export async function sharedCaseIds(db: Db, businessId: string, from: string, to: string): Promise<string[]> {
  const rows = await db
    .selectFrom('cases as moving')
    .innerJoin('cases as kept', (join) =>
      join.onRef('kept.business_id', '=', 'moving.business_id').onRef('kept.id', '=', 'moving.id').on('kept.patient_ref', '=', to),
    )
    .select('moving.id')
    .where('moving.business_id', '=', businessId)
    .where('moving.patient_ref', '=', from)
    .orderBy('moving.id')
    .limit(20)
    .execute();
  return rows.map((row) => row.id);
}

/**
 * Cases follow a change of the patient's key, under both keys' records locks. A case whose id is
 * already kept under the new key stays under the old one (kept, not overwritten). Moved cases take one
 * updated_at at or above every case of both keys and the current second, so a sync of the new key
 * lists them and never loses its order. Answers how many moved.
 */
export async function moveCases(db: Db, dialect: DialectName, businessId: string, from: string, to: string): Promise<number> {
  const stamp = Math.max(await stampWrite(db, dialect, businessId, from), await stampWrite(db, dialect, businessId, to));
  const result = await db
    .updateTable('cases')
    .set({ patient_ref: to, updated_at: stamp })
    .where('cases.business_id', '=', businessId)
    .where('cases.patient_ref', '=', from)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('cases as taken')
            .select('taken.id')
            .where('taken.business_id', '=', businessId)
            .where('taken.patient_ref', '=', to)
            .whereRef('taken.id', '=', 'cases.id'),
        ),
      ),
    )
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** The cases kept under the keys, tombstones included, oldest first. */
export async function casesUnder(db: Db, businessId: string, refs: string[]): Promise<CasesTable[]> {
  if (refs.length === 0) return [];
  return db
    .selectFrom('cases')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('patient_ref', 'in', refs)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export async function deleteCasesUnder(db: Db, businessId: string, refs: string[]): Promise<void> {
  if (refs.length === 0) return;
  await db.deleteFrom('cases').where('business_id', '=', businessId).where('patient_ref', 'in', refs).execute();
}
