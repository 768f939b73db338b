/**
 * SQL of the patient name index (name-index.ts): one row per patient with its name tokens, and the
 * keys it is found by, each a row (business, key, seq) read by range scans of the primary key.
 */
import { sql } from 'kysely';
import { writeWithNext, type Db } from '../../db/index.ts';
import { isPostgres } from '../../db/dialect.ts';
import type { PatientSearchNamesTable } from '../../db/schema.ts';

export type IndexedNameRow = Omit<PatientSearchNamesTable, 'seq'>;

export interface CandidateRow {
  seq: number;
  patient_id: string;
  tokens: string;
  key: string;
}

/** The patient's name row, inserted or replaced; its seq. */
export async function upsertName(db: Db, row: IndexedNameRow): Promise<number> {
  const stored = await db
    .insertInto('patient_search_names')
    .values(row)
    .onConflict((oc) =>
      oc.column('patient_id').doUpdateSet({ tokens: row.tokens, mobile: row.mobile, partner_id: row.partner_id, archived: row.archived }),
    )
    .returning('seq')
    .executeTakeFirstOrThrow();
  return Number(stored.seq);
}

/** The name row and keys of a patient not indexed yet: one statement on PostgreSQL. */
export async function insertNameAndKeys(db: Db, row: IndexedNameRow, keys: string[]): Promise<void> {
  if (isPostgres(db)) {
    await writeWithNext(
      db,
      sql`with name as (
        insert into patient_search_names (patient_id, business_id, tokens, mobile, partner_id, archived)
        values (${row.patient_id}, ${row.business_id}, ${row.tokens}, ${row.mobile}, ${row.partner_id}, ${row.archived})
        returning seq)
      insert into patient_search_keys (business_id, key, seq)
      select ${row.business_id}, k, name.seq from name, unnest(${keys}::text[]) as t(k)
      on conflict do nothing`,
    );
    return;
  }
  const seq = await upsertName(db, row);
  await insertKeys(
    db,
    row.business_id,
    keys.map((key) => ({ key, seq })),
  );
}

/** Name rows of many patients at once (none of them indexed yet); their seqs by patient id. */
export async function insertNames(db: Db, rows: IndexedNameRow[]): Promise<Map<string, number>> {
  const seqs = new Map<string, number>();
  if (rows.length === 0) return seqs;
  if (isPostgres(db)) {
    const inserted = await sql<{ seq: string; patient_id: string }>`
      insert into patient_search_names (patient_id, business_id, tokens, mobile, partner_id, archived)
      select * from unnest(${rows.map((r) => r.patient_id)}::text[], ${rows.map((r) => r.business_id)}::text[],
        ${rows.map((r) => r.tokens)}::text[], ${rows.map((r) => r.mobile)}::text[], ${rows.map((r) => r.partner_id)}::text[],
        ${rows.map((r) => r.archived)}::int[])
      returning seq, patient_id`.execute(db);
    for (const row of inserted.rows) seqs.set(row.patient_id, Number(row.seq));
    return seqs;
  }
  // SQLite binds at most 32766 values per statement.
  for (let from = 0; from < rows.length; from += 4000) {
    const inserted = await db
      .insertInto('patient_search_names')
      .values(rows.slice(from, from + 4000))
      .returning(['seq', 'patient_id'])
      .execute();
    for (const row of inserted) seqs.set(row.patient_id, Number(row.seq));
  }
  return seqs;
}

export async function insertKeys(db: Db, businessId: string, keys: Array<{ key: string; seq: number }>): Promise<void> {
  if (keys.length === 0) return;
  if (isPostgres(db)) {
    await sql`insert into patient_search_keys (business_id, key, seq)
      select ${businessId}, k, s from unnest(${keys.map((k) => k.key)}::text[], ${keys.map((k) => k.seq)}::bigint[]) as t(k, s)
      on conflict do nothing`.execute(db);
    return;
  }
  for (let from = 0; from < keys.length; from += 10000) {
    await db
      .insertInto('patient_search_keys')
      .values(keys.slice(from, from + 10000).map((k) => ({ business_id: businessId, key: k.key, seq: k.seq })))
      .onConflict((oc) => oc.doNothing())
      .execute();
  }
}

export async function findName(db: Db, patientId: string): Promise<(IndexedNameRow & { seq: number }) | undefined> {
  const row = await db.selectFrom('patient_search_names').selectAll().where('patient_id', '=', patientId).executeTakeFirst();
  return row && { ...row, seq: Number(row.seq) };
}

/** The keys are deleted by primary key: no other index on the key table. */
export async function deleteKeys(db: Db, businessId: string, seq: number, keys: string[]): Promise<void> {
  if (keys.length === 0) return;
  await db.deleteFrom('patient_search_keys').where('business_id', '=', businessId).where('key', 'in', keys).where('seq', '=', seq).execute();
}

export async function deleteName(db: Db, seq: number): Promise<void> {
  await db.deleteFrom('patient_search_names').where('seq', '=', seq).execute();
}

export interface KeyRange {
  from: string;
  to: string;
  limit: number;
}

/**
 * For each range [from, to) of keys, its first `limit` patients in key order, with their tokens (and
 * the range's index as `range`); archived patients only when asked. One statement, one round trip;
 * the primary key (business_id, key, seq) answers each range as one scan.
 */
export async function scanRanges(
  db: Db,
  businessId: string,
  ranges: KeyRange[],
  includeArchived: boolean,
): Promise<Array<CandidateRow & { range: number }>> {
  const parts = ranges.map((range, i) => {
    let query = db
      .selectFrom('patient_search_keys as k')
      .innerJoin('patient_search_names as n', 'n.seq', 'k.seq')
      .select([sql<number>`${sql.lit(i)}`.as('range'), 'k.seq', 'k.key', 'n.patient_id', 'n.tokens'])
      .where('k.business_id', '=', businessId)
      .where('k.key', '>=', range.from)
      .where('k.key', '<', range.to);
    if (!includeArchived) query = query.where('n.archived', '=', 0);
    return db.selectFrom(query.orderBy('k.key').orderBy('k.seq').limit(range.limit).as(`r${i}`)).selectAll();
  });
  if (parts.length === 0) return [];
  let query = parts[0]!;
  for (const part of parts.slice(1)) query = query.unionAll(part);
  const rows = await query.execute();
  return rows
    .map((row) => ({ ...row, range: Number(row.range), seq: Number(row.seq) }))
    .sort((a, b) => a.range - b.range || (a.key < b.key ? -1 : a.key > b.key ? 1 : a.seq - b.seq));
}
