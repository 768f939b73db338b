/** SQL of the documents module; every query is scoped by business (and patient where it lists). */
import { sql, type Kysely } from 'kysely';
import { inTransaction, writeWithNext, type Db, type DialectName } from '../../db/index.ts';
import { isPostgres } from '../../db/dialect.ts';
import type { Database, DocumentFilesTable, DocumentsTable } from '../../db/schema.ts';

/** The start of the current second in ms: PostgreSQL's clock, shared by every server process. */
const PG_SECOND_START = sql<number>`(floor(extract(epoch from clock_timestamp())) * 1000)::bigint`;

function sqliteSecondStart(): number {
  return Math.floor(Date.now() / 1000) * 1000;
}

/**
 * The updated_at for a write of the patient's documents, the patient's records lock held: the start
 * of the current second, never below the patient's latest updated_at (as cases/repo.ts stampWrite).
 */
export async function stampWrite(trx: Db, dialect: DialectName, businessId: string, patientRef: string): Promise<number> {
  const now = dialect === 'postgres' ? PG_SECOND_START : sqliteSecondStart();
  const latest = trx
    .selectFrom('documents')
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
  after: { updatedAt: number; id: string } | null;
  /** Only documents with updated_at >= this (ms). */
  updatedFrom: number | null;
  limit: number;
}

/** One page in (updated_at, id) order, from seconds that are over; pending documents are not listed. */
export async function listPage(trx: Db, dialect: DialectName, page: PageQuery): Promise<DocumentsTable[]> {
  const closedBefore = dialect === 'postgres' ? sql<number>`(select ${PG_SECOND_START})` : sqliteSecondStart();
  let query = trx
    .selectFrom('documents')
    .selectAll()
    .where('business_id', '=', page.businessId)
    .where('patient_ref', '=', page.patientRef)
    .where('updated_at', '<', closedBefore)
    .where('status', '<>', 'P');
  if (page.after) {
    const { updatedAt, id } = page.after;
    query = query.where((eb) => eb(eb.refTuple('updated_at', 'id'), '>', eb.tuple(updatedAt, id)));
  } else if (page.updatedFrom !== null) {
    query = query.where('updated_at', '>=', page.updatedFrom);
  }
  return query.orderBy('updated_at').orderBy('id').limit(page.limit).execute();
}

export async function findDocument(db: Db, businessId: string, id: string): Promise<DocumentsTable | undefined> {
  return db.selectFrom('documents').selectAll().where('business_id', '=', businessId).where('id', '=', id).executeTakeFirst();
}

export async function existingIds(db: Db, businessId: string, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('documents').select('id').where('business_id', '=', businessId).where('id', 'in', ids).execute();
  return rows.map((row) => row.id);
}

export async function insertDocument(db: Db, row: DocumentsTable, files: DocumentFilesTable[]): Promise<void> {
  await db.insertInto('documents').values(row).execute();
  if (files.length > 0) await db.insertInto('document_files').values(files).execute();
}

/**
 * A pending document and its one file, taken for an upload already, in one transaction (PostgreSQL:
 * one round trip). Its commit does not wait for the write-ahead log's flush: the commit that marks
 * the file stored comes later in the same log and waits for it, so a crash loses this row only
 * together with the file's bytes written after it.
 */
export async function insertUploading(
  db: Kysely<Database>,
  row: DocumentsTable,
  file: DocumentFilesTable,
  reserve: ((trx: Db) => Promise<number>) | null,
): Promise<void> {
  await inTransaction(db, async (trx) => {
    if (isPostgres(trx)) await writeWithNext(trx, sql`select set_config('synchronous_commit', 'off', true)`);
    const reserved = reserve ? await reserve(trx) : null;
    await writeWithNext(trx, trx.insertInto('documents').values(row));
    await writeWithNext(trx, trx.insertInto('document_files').values({ ...file, declared_size: reserved }));
  });
}

/**
 * Waits for the business's other writes that check its documents' bytes against its limit
 * (businessBytes), until the transaction ends. SQLite's transactions take its one write lock first.
 */
export async function lockBusinessBytes(trx: Db, businessId: string): Promise<void> {
  if (isPostgres(trx)) await sql`select pg_advisory_xact_lock(hashtextextended(${`documents-bytes:${businessId}`}, 0))`.execute(trx);
}

export type DocumentChanges = Partial<Omit<DocumentsTable, 'business_id' | 'id' | 'created_at'>>;

export async function updateDocument(db: Db, businessId: string, id: string, changes: DocumentChanges): Promise<void> {
  await updateDocumentQuery(db, businessId, id, changes).execute();
}

/** updateDocument's statement, for writeWithNext. */
export function updateDocumentQuery(db: Db, businessId: string, id: string, changes: DocumentChanges) {
  return db.updateTable('documents').set(changes).where('business_id', '=', businessId).where('id', '=', id);
}

export async function filesOf(db: Db, businessId: string, documentIds: string[]): Promise<DocumentFilesTable[]> {
  if (documentIds.length === 0) return [];
  return db
    .selectFrom('document_files')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('document_id', 'in', documentIds)
    .orderBy('document_id')
    .orderBy('idx')
    .execute();
}

export async function findFile(db: Db, businessId: string, documentId: string, idx: number): Promise<DocumentFilesTable | undefined> {
  return db
    .selectFrom('document_files')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('document_id', '=', documentId)
    .where('idx', '=', idx)
    .executeTakeFirst();
}

/** Takes a waiting form for one upload: true when this request is the one that took it. */
export async function claimFile(
  db: Db,
  file: { businessId: string; documentId: string; idx: number; formId: string },
  claim: { store: string; storageKey: string; at: number },
): Promise<boolean> {
  const result = await db
    .updateTable('document_files')
    .set({ state: 'receiving', store: claim.store, storage_key: claim.storageKey, claimed_at: claim.at })
    .where('business_id', '=', file.businessId)
    .where('document_id', '=', file.documentId)
    .where('idx', '=', file.idx)
    .where('form_id', '=', file.formId)
    .where('state', '=', 'waiting')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Marks a form given back as its object store's again (releaseFile clears the store). */
export async function keepStore(db: Db, businessId: string, documentId: string, idx: number, store: string): Promise<void> {
  await db
    .updateTable('document_files')
    .set({ store })
    .where('business_id', '=', businessId)
    .where('document_id', '=', documentId)
    .where('idx', '=', idx)
    .where('state', '=', 'waiting')
    .execute();
}

/** Gives a form back after a refused or failed upload (its bytes already removed). */
export async function releaseFile(db: Db, businessId: string, documentId: string, idx: number, storageKey: string): Promise<void> {
  await db
    .updateTable('document_files')
    .set({ state: 'waiting', store: null, storage_key: null, claimed_at: null, size: null, file_name: null })
    .where('business_id', '=', businessId)
    .where('document_id', '=', documentId)
    .where('idx', '=', idx)
    .where('storage_key', '=', storageKey)
    .where('state', '=', 'receiving')
    .execute();
}

export async function markStored(
  db: Db,
  businessId: string,
  documentId: string,
  idx: number,
  stored: { storageKey: string; size: number; contentType: string; fileName: string | null; at: number },
): Promise<boolean> {
  const result = await db
    .updateTable('document_files')
    .set({ state: 'stored', size: stored.size, content_type: stored.contentType, file_name: stored.fileName, stored_at: stored.at })
    .where('business_id', '=', businessId)
    .where('document_id', '=', documentId)
    .where('idx', '=', idx)
    .where('storage_key', '=', stored.storageKey)
    .where('state', '=', 'receiving')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Every file of the documents goes to 'removing': the sweep deletes their bytes, then the rows. */
export async function markRemoving(db: Db, businessId: string, documentIds: string[]): Promise<void> {
  if (documentIds.length === 0) return;
  await db
    .updateTable('document_files')
    .set({ state: 'removing' })
    .where('business_id', '=', businessId)
    .where('document_id', 'in', documentIds)
    .execute();
}

/**
 * The bytes the business's files take or have been promised: stored, declared by a form not yet used,
 * or reserved by an upload under way; kept by document_files' triggers (migration 0039) as its rows change.
 */
export async function businessBytes(db: Db, businessId: string): Promise<number> {
  const row = await db
    .selectFrom('document_bytes')
    .select((eb) => eb.fn.sum<number | string | null>('bytes').as('bytes'))
    .where('business_id', '=', businessId)
    .executeTakeFirst();
  return Number(row?.bytes ?? 0);
}

/** Pending documents whose forms expired before `now`. */
export async function expiredPending(db: Db, now: number, limit: number): Promise<Array<{ business_id: string; id: string }>> {
  return db.selectFrom('documents').select(['business_id', 'id']).where('status', '=', 'P').where('upload_until', '<', now).limit(limit).execute();
}

/** Documents past pending whose forms expired before `now`: an object store may hold a form's file posted again. */
export async function formsOver(db: Db, now: number, limit: number): Promise<Array<{ business_id: string; id: string }>> {
  return db.selectFrom('documents').select(['business_id', 'id']).where('upload_until', '<', now).where('status', '<>', 'P').limit(limit).execute();
}

export async function deleteDocuments(db: Db, businessId: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.deleteFrom('document_files').where('business_id', '=', businessId).where('document_id', 'in', ids).execute();
  await db.deleteFrom('documents').where('business_id', '=', businessId).where('id', 'in', ids).execute();
}

/** Files whose bytes are to be deleted, or whose upload stopped with its process long ago. */
export async function filesToSweep(db: Db, staleBefore: number, limit: number): Promise<DocumentFilesTable[]> {
  return db
    .selectFrom('document_files')
    .selectAll()
    .where((eb) => eb.or([eb('state', '=', 'removing'), eb.and([eb('state', '=', 'receiving'), eb('claimed_at', '<', staleBefore)])]))
    .limit(limit)
    .execute();
}

export async function deleteFileRow(db: Db, file: DocumentFilesTable): Promise<void> {
  await db
    .deleteFrom('document_files')
    .where('business_id', '=', file.business_id)
    .where('document_id', '=', file.document_id)
    .where('idx', '=', file.idx)
    .where('state', '=', 'removing')
    .execute();
}

/** Active case ids of the patient among `ids`. */
export async function activeCaseIds(db: Db, businessId: string, patientRef: string, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('cases')
    .select('id')
    .where('business_id', '=', businessId)
    .where('patient_ref', '=', patientRef)
    .where('id', 'in', ids)
    .where('status', '=', 'A')
    .execute();
  return rows.map((row) => row.id);
}

/* ---- the patient compartment (src/compartment.ts) ---- */

/**
 * Documents follow a change of the patient's key, under both keys' records locks, with one updated_at
 * at or above every document of both keys and the current second, so a sync of the new key lists them
 * (as cases/repo.ts moveCases). Answers how many moved.
 */
export async function moveDocuments(db: Db, dialect: DialectName, businessId: string, from: string, to: string): Promise<number> {
  const stamp = Math.max(await stampWrite(db, dialect, businessId, from), await stampWrite(db, dialect, businessId, to));
  const result = await db
    .updateTable('documents')
    .set({ patient_ref: to, updated_at: stamp })
    .where('business_id', '=', businessId)
    .where('patient_ref', '=', from)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** The documents kept under the keys, tombstones and pending ones included, oldest first. */
export async function documentsUnder(db: Db, businessId: string, refs: string[]): Promise<DocumentsTable[]> {
  if (refs.length === 0) return [];
  return db
    .selectFrom('documents')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('patient_ref', 'in', refs)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** The files of the documents kept under the keys. */
export async function filesUnder(db: Db, businessId: string, refs: string[]): Promise<DocumentFilesTable[]> {
  if (refs.length === 0) return [];
  return db
    .selectFrom('document_files')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('document_id', 'in', (eb) =>
      eb.selectFrom('documents').select('id').where('business_id', '=', businessId).where('patient_ref', 'in', refs),
    )
    .orderBy('document_id')
    .orderBy('idx')
    .execute();
}

/** Deletes the documents kept under the keys and their file rows. */
export async function deleteUnder(db: Db, businessId: string, refs: string[]): Promise<void> {
  if (refs.length === 0) return;
  const ids = db.selectFrom('documents').select('id').where('business_id', '=', businessId).where('patient_ref', 'in', refs);
  await db.deleteFrom('document_files').where('business_id', '=', businessId).where('document_id', 'in', ids).execute();
  await db.deleteFrom('documents').where('business_id', '=', businessId).where('patient_ref', 'in', refs).execute();
}

/** Records a file's thumbnail while the file is the one it was made from and has none; false otherwise. */
export async function setThumbnail(
  db: Db,
  file: { businessId: string; documentId: string; idx: number; storageKey: string },
  thumbnail: { store: string; key: string; size: number },
): Promise<boolean> {
  const result = await db
    .updateTable('document_files')
    .set({ thumbnail_store: thumbnail.store, thumbnail_key: thumbnail.key, thumbnail_size: thumbnail.size })
    .where('business_id', '=', file.businessId)
    .where('document_id', '=', file.documentId)
    .where('idx', '=', file.idx)
    .where('storage_key', '=', file.storageKey)
    .where('state', '=', 'stored')
    .where('thumbnail_key', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** The first file with a thumbnail of each document named, by document id. */
export async function thumbnailsOf(db: Db, businessId: string, documentIds: string[]): Promise<Map<string, { idx: number; formId: string }>> {
  const found = new Map<string, { idx: number; formId: string }>();
  if (documentIds.length === 0) return found;
  const rows = await db
    .selectFrom('document_files')
    .select(['document_id', 'idx', 'form_id'])
    .where('business_id', '=', businessId)
    .where('document_id', 'in', documentIds)
    .where('state', '=', 'stored')
    .where('thumbnail_key', 'is not', null)
    .orderBy('document_id')
    .orderBy('idx')
    .execute();
  for (const row of rows) if (!found.has(row.document_id)) found.set(row.document_id, { idx: row.idx, formId: row.form_id });
  return found;
}
