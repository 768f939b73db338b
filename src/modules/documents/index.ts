/**
 * The documents module's front door: the file stores, the service, its routes and the sweep job that
 * deletes the bytes of removed files (every SWEEP_MINUTES, one run per interval for all processes).
 */
import { ExportStream, parsedJson } from '../../compartment.ts';
import type { AppContext } from '../../context.ts';
import { patientKey } from '../../jobs/outbox.ts';
import { enqueue } from '../../jobs/queue-repo.ts';
import type { Module } from '../module.ts';
import type { PatientService } from '../patients/service.ts';
import { DatabaseFileStore, removeStored, type FileStore } from './file-store.ts';
import { FileSystemStore } from './file-system-store.ts';
import { ObjectFileStore } from './object-store.ts';
import * as repo from './repo.ts';
import { documentsRoutes } from './routes.ts';
import { DocumentsService, THUMBNAIL_JOB, thumbnailKeyOf, uploadKey } from './service.ts';

export { DocumentsService } from './service.ts';
export { FILES_FOLDER, sealedChunksIn, storedFilePath } from './file-system-store.ts';

export const DOCUMENTS_SWEEP_JOB = 'documents.sweep';
const SWEEP_MINUTES = 15;
/** A temporary file of the files store this old is a write no process will finish (as the sweep judges uploads, service.ts). */
const ABANDONED_AFTER_MS = 60 * 60_000;
const THUMBNAIL_CLAIM = 16;

export function documentsModule(ctx: AppContext, patients: PatientService): Module & { service: DocumentsService } {
  const { db, dialect } = ctx.storage;
  const embedded = new DatabaseFileStore(db, ctx.keys.masterKey);
  const onDisk = new FileSystemStore(db, ctx.keys.masterKey, ctx.config.dataDir);
  const objects = ctx.config.documents.s3 ? new ObjectFileStore(ctx.config.documents.s3) : null;
  // Every backend stays readable: files kept where they were stored when the default changes.
  const stores = new Map<string, FileStore>([
    [embedded.name, embedded],
    [onDisk.name, onDisk],
    ...(objects ? [[objects.name, objects] as const] : []),
  ]);
  const chosen = ctx.config.documents.store;
  const store: FileStore = chosen === 's3' && objects ? objects : chosen === 'files' ? onDisk : embedded;
  ctx.compartment.register({
    name: 'documents',
    tables: [{ table: 'documents', column: 'patient_ref', by: 'ref' }],
    // Document ids are the business's, so a move never meets a document of the same id.
    moveKey: async (trx, businessId, from, to) => ({ documents: await repo.moveDocuments(trx, dialect, businessId, from, to) }),
    references: async (db, scope) => ({
      ids: (await repo.documentsUnder(db, scope.businessId, scope.refs)).map((row) => row.id),
      eventKeys: scope.refs.map(patientKey),
    }),
    export: async (db, scope) => {
      const files = await repo.filesUnder(db, scope.businessId, scope.refs);
      const documents = [];
      for (const row of await repo.documentsUnder(db, scope.businessId, scope.refs)) {
        const own = files
          .filter((f) => f.document_id === row.id && f.state === 'stored' && f.storage_key !== null)
          .map((file) => ({
            index: file.idx,
            content_type: file.content_type,
            size: Number(file.size),
            file_name: file.file_name,
            // Read from its store when the export is downloaded, never held whole.
            content_base64: new ExportStream('documents', { document_id: file.document_id, idx: file.idx, key: file.storage_key }),
          }));
        documents.push({
          document_id: row.id,
          patient_ref: row.patient_ref,
          status: row.status,
          dt: row.dt,
          document_date: row.document_date === null ? null : Math.floor(Number(row.document_date) / 1000),
          tags: parsedJson(row.tags),
          title: row.title,
          cases: parsedJson(row.cases),
          created_at: Math.floor(Number(row.created_at) / 1000),
          updated_at: Math.floor(Number(row.updated_at) / 1000),
          files: own,
        });
      }
      return { documents };
    },
    // The file as the export saw it, while it is still stored: a document deleted since has none.
    openExportStream: async (db, businessId, ref) => {
      const { document_id, idx, key } = ref as { document_id: string; idx: number; key: string };
      const file = await repo.findFile(db, businessId, document_id, idx);
      const holder = file?.store ? stores.get(file.store) : undefined;
      return holder && file?.state === 'stored' && file.storage_key === key ? holder.read(key) : null;
    },
    // The embedded stores' keys and chunks go in the erasure's transaction (they are the database's);
    // the files of the data directory and an object store's objects before it commits, so that an
    // erasure a store refused fails and can be run again.
    erase: async (trx, scope) => {
      const files = await repo.filesUnder(trx, scope.businessId, scope.refs);
      // The recorded thumbnails (an older one's key is not derived) and, in every store, those a job
      // wrote and never recorded.
      const unrecorded = files.filter((file) => file.storage_key !== null).map((file) => thumbnailKeyOf(file.storage_key!));
      const thumbnailsIn = (name: string) => [
        ...files.filter((file) => file.thumbnail_store === name && file.thumbnail_key).map((file) => file.thumbnail_key!),
        ...unrecorded,
      ];
      const keysIn = (name: string) => [
        ...new Set([
          ...files.filter((file) => file.store === name && file.storage_key !== null).map((file) => file.storage_key!),
          ...thumbnailsIn(name),
        ]),
      ];
      const onDiskKeys = keysIn(onDisk.name);
      await removeStored(trx, [...new Set([...keysIn(embedded.name), ...onDiskKeys])]);
      await onDisk.unlink(onDiskKeys);
      for (const [name, other] of stores) {
        if (name === embedded.name || name === onDisk.name) continue;
        const keys = files
          .filter((file) => file.store === name)
          .flatMap((file) => [...(file.storage_key === null ? [] : [file.storage_key]), ...(other.direct ? [uploadKey(file)] : [])]);
        keys.push(...thumbnailsIn(name));
        if (keys.length > 0) await other.remove([...new Set(keys)]);
      }
      await repo.deleteUnder(trx, scope.businessId, scope.refs);
    },
  });
  const service = new DocumentsService({
    db,
    dialect,
    masterKey: ctx.keys.masterKey,
    config: ctx.config.documents,
    publicUrl: ctx.config.publicUrl.replace(/\/+$/, ''),
    store,
    stores,
    patients: patients,
  });
  ctx.jobs.register<{ businessId: string; documentId: string }>(
    THUMBNAIL_JOB,
    async ({ job, signal }) => void (await service.makeThumbnails(job.payload.businessId, job.payload.documentId, signal)),
    {
      // Claimed several at once (each claim is a write and a commit of its own); the service makes
      // them one at a time.
      concurrency: THUMBNAIL_CLAIM,
      retrySchedule: [60, 600],
      leaseMs: 120_000,
    },
  );
  const schedule = async () => {
    const every = SWEEP_MINUTES * 60_000;
    const slot = Math.floor(Date.now() / every);
    await enqueue(db, { kind: DOCUMENTS_SWEEP_JOB, payload: {}, dedupeKey: `every-${SWEEP_MINUTES}m:${slot}`, dueAt: (slot + 1) * every });
  };
  ctx.jobs.register(
    DOCUMENTS_SWEEP_JOB,
    async () => {
      await schedule();
      await service.sweep();
      await onDisk.removeAbandoned(ABANDONED_AFTER_MS);
    },
    { concurrency: 1, retrySchedule: [60, 300, 900], leaseMs: 60_000 },
  );
  return {
    name: 'documents',
    routes: documentsRoutes(service, { maxFileBytes: ctx.config.documents.maxFileBytes }),
    start: () => schedule().catch((error: unknown) => ctx.logger.warn({ err: error }, 'documents: could not queue its sweep')),
    stop: async () => objects?.close(),
    service,
  };
}
