/**
 * SQL of the reference catalogue. The catalogue is global (not per business), so these queries are
 * the one place in the service that is not scoped by business_id; the endpoint still needs a token.
 */
import { isUniqueViolation, type Db } from '../../db/index.ts';
import type { DrugsTable, LabTestsTable } from '../../db/schema.ts';
import { DRUG_RECORD_COLUMNS, type DrugRecordRow } from './index/model.ts';

export async function catalogueVersion(db: Db): Promise<number> {
  const row = await db.selectFrom('catalogue_meta').select('version').where('id', '=', 1).executeTakeFirst();
  return Number(row?.version ?? 0);
}

/**
 * Takes the next catalogue version inside an import transaction. On PostgreSQL the row lock also
 * serialises concurrent imports, so each reads the rows the previous one committed.
 */
export async function bumpVersion(db: Db): Promise<number> {
  const row = await db
    .updateTable('catalogue_meta')
    .set((eb) => ({ version: eb('version', '+', 1) }))
    .where('id', '=', 1)
    .returning('version')
    .executeTakeFirstOrThrow();
  return Number(row.version);
}

export async function builtinHash(db: Db): Promise<string | null> {
  const row = await db.selectFrom('catalogue_meta').select('builtin_hash').where('id', '=', 1).executeTakeFirst();
  return row?.builtin_hash ?? null;
}

export async function setBuiltinHash(db: Db, hash: string): Promise<void> {
  await db.updateTable('catalogue_meta').set({ builtin_hash: hash }).where('id', '=', 1).execute();
}

export async function drugsByNameKeys(db: Db, nameKeys: string[]): Promise<DrugsTable[]> {
  if (nameKeys.length === 0) return [];
  return db.selectFrom('drugs').selectAll().where('name_key', 'in', nameKeys).orderBy('id').execute();
}

export async function insertDrugs(db: Db, rows: DrugsTable[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 100)
    await db
      .insertInto('drugs')
      .values(rows.slice(i, i + 100))
      .execute();
}

export async function updateDrug(db: Db, row: DrugsTable): Promise<void> {
  const { id, ...rest } = row;
  await db.updateTable('drugs').set(rest).where('id', '=', id).execute();
}

/** Where the next page of changed drugs starts: after this row. */
export interface ChangesCursor {
  seq: number;
  id: string;
}

/**
 * Drugs changed after version `after`, a page at a time from `from`: in (seq, id) order through the
 * (seq, id) index, so a page costs its own rows. Everything (after < 0) is read in id order, a walk
 * of the primary key.
 */
export async function drugsChangedAfter(
  db: Db,
  after: number,
  from: ChangesCursor,
  pageSize: number,
): Promise<Array<DrugRecordRow & { seq: number }>> {
  // Only what the index keeps: the composition JSON and the import keys would be garbage at once.
  const query = db.selectFrom('drugs').select([...DRUG_RECORD_COLUMNS, 'seq']);
  if (after < 0) return query.where('id', '>', from.id).orderBy('id').limit(pageSize).execute();
  return query
    .where('seq', '>', after)
    .where((eb) => eb.or([eb('seq', '>', from.seq), eb.and([eb('seq', '=', from.seq), eb('id', '>', from.id)])]))
    .orderBy('seq')
    .orderBy('id')
    .limit(pageSize)
    .execute();
}

export async function labsByNameKeys(db: Db, nameKeys: string[]): Promise<LabTestsTable[]> {
  if (nameKeys.length === 0) return [];
  return db.selectFrom('lab_tests').selectAll().where('name_key', 'in', nameKeys).execute();
}

export async function insertLabs(db: Db, rows: LabTestsTable[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 100)
    await db
      .insertInto('lab_tests')
      .values(rows.slice(i, i + 100))
      .execute();
}

export async function updateLab(db: Db, row: LabTestsTable): Promise<void> {
  const { id, ...rest } = row;
  await db.updateTable('lab_tests').set(rest).where('id', '=', id).execute();
}

export async function labsChangedAfter(db: Db, after: number): Promise<LabTestsTable[]> {
  return db.selectFrom('lab_tests').selectAll().where('seq', '>', after).execute();
}

/** The newest drug and lab ids (ids sort by creation). */
export async function lastCatalogueIds(db: Db): Promise<{ drug: string | null; lab: string | null }> {
  const drug = await db.selectFrom('drugs').select('id').orderBy('id', 'desc').limit(1).executeTakeFirst();
  const lab = await db.selectFrom('lab_tests').select('id').orderBy('id', 'desc').limit(1).executeTakeFirst();
  return { drug: drug?.id ?? null, lab: lab?.id ?? null };
}

/** Whether the catalogue holds these ids (null: nothing to check). */
export async function catalogueHolds(db: Db, drugId: string | null, labId: string | null): Promise<boolean> {
  if (drugId !== null && !(await db.selectFrom('drugs').select('id').where('id', '=', drugId).executeTakeFirst())) return false;
  if (labId !== null && !(await db.selectFrom('lab_tests').select('id').where('id', '=', labId).executeTakeFirst())) return false;
  return true;
}

/** How many drugs there are, or (with `changedAfter`) how many changed after that version. */
export async function drugCount(db: Db, changedAfter = -1): Promise<number> {
  const row = await db
    .selectFrom('drugs')
    .select((eb) => eb.fn.countAll().as('count'))
    .where('seq', '>', changedAfter)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/**
 * Stored snapshots are cut into parts of this size: PostgreSQL sends a bytea as hex text, twice its
 * size, so a part at a time keeps that transient copy small.
 */
const SNAPSHOT_PART_BYTES = 4 * 1024 * 1024;
/** Snapshots of other releases of the search code are kept this long (servers of both may run during a rollout). */
const OTHER_SOURCE_SNAPSHOT_MS = 7 * 24 * 3_600_000;

/** The catalogue version of the stored snapshot of this search code; null when there is none. */
export async function storedSnapshotVersion(db: Db, source: string): Promise<number | null> {
  const row = await db.selectFrom('search_snapshots').select('version').where('source', '=', source).where('part', '=', 0).executeTakeFirst();
  return row ? Number(row.version) : null;
}

/**
 * The parts of the stored snapshot of this search code, read one at a time, for the caller to write
 * out rather than hold together; none when there is none. Fails when a writer replaced the snapshot
 * between two parts (every part carries the time of its write).
 */
export async function* storedSnapshotParts(db: Db, source: string): AsyncGenerator<Buffer> {
  let writtenAt: number | null = null;
  for (let part = 0; ; part++) {
    const row = await db
      .selectFrom('search_snapshots')
      .select(['written_at', 'data'])
      .where('source', '=', source)
      .where('part', '=', part)
      .executeTakeFirst();
    if (!row) return;
    if (writtenAt !== null && Number(row.written_at) !== writtenAt)
      throw new Error('the stored search index snapshot was replaced while it was read');
    writtenAt = Number(row.written_at);
    yield row.data;
  }
}

/**
 * Stores a snapshot of this search code in place of the one stored, unless that one holds a newer
 * catalogue version; false when it did, or when another process stored one at the same moment (on
 * PostgreSQL its parts collide with these). Snapshots of other code older than a week go.
 */
export async function storeSnapshot(db: Db, source: string, version: number, snapshot: Buffer): Promise<boolean> {
  return db
    .transaction()
    .execute(async (trx) => {
      const stored = await storedSnapshotVersion(trx, source);
      if (stored !== null && stored > version) return false;
      const now = Date.now();
      await trx
        .deleteFrom('search_snapshots')
        .where((eb) => eb.or([eb('source', '=', source), eb('written_at', '<', now - OTHER_SOURCE_SNAPSHOT_MS)]))
        .execute();
      for (let part = 0, at = 0; at < snapshot.length; part++, at += SNAPSHOT_PART_BYTES) {
        const data = snapshot.subarray(at, at + SNAPSHOT_PART_BYTES);
        await trx.insertInto('search_snapshots').values({ source, part, version, written_at: now, data }).execute();
      }
      return true;
    })
    .catch((error: unknown) => {
      if (isUniqueViolation(error)) return false;
      throw error;
    });
}
