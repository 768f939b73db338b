/**
 * The documents module's front door: the file stores, the service, its routes and the sweep job that
 * deletes the bytes of removed files (every SWEEP_MINUTES, one run per interval for all processes).
 */
import type { AppContext } from '../../context.ts';
import { enqueue } from '../../jobs/queue.ts';
import type { Module } from '../module.ts';
import { PatientService } from '../patients/service.ts';
import { DatabaseFileStore, type FileStore } from './file-store.ts';
import { documentsRoutes } from './routes.ts';
import { DocumentsService } from './service.ts';

export { DocumentsService } from './service.ts';

export const DOCUMENTS_SWEEP_JOB = 'documents.sweep';
const SWEEP_MINUTES = 15;

export function documentsModule(ctx: AppContext): Module & { service: DocumentsService } {
  const { db, dialect } = ctx.storage;
  const store: FileStore = new DatabaseFileStore(db, ctx.keys.masterKey);
  const service = new DocumentsService({
    db,
    dialect,
    masterKey: ctx.keys.masterKey,
    config: ctx.config.documents,
    publicUrl: ctx.config.publicUrl.replace(/\/+$/, ''),
    store,
    stores: new Map([[store.name, store]]),
    patients: new PatientService({ db }),
  });
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
    },
    { concurrency: 1, retrySchedule: [60, 300, 900], leaseMs: 60_000 },
  );
  return {
    name: 'documents',
    routes: documentsRoutes(service, { maxFileBytes: ctx.config.documents.maxFileBytes }),
    start: () => schedule().catch((error: unknown) => ctx.logger.warn({ err: error }, 'documents: could not queue its sweep')),
    service,
  };
}
