/**
 * Documents on patient records, as Eka's records API serves them (`/mr/api/v1/docs`).
 *
 * A document is created pending (status P, not listed) with one row per file; its files arrive
 * through the upload forms POST /mr/api/v1/docs hands out, or in the one request of POST
 * /mr/api/v2/docs. When its last file is stored the document becomes active (A) and
 * `document.created` is recorded. An upload takes its file's form (waiting -> receiving, once),
 * streams the bytes through the checks (file-check.ts) into the file store, and either marks the file
 * stored or removes what it wrote and gives the form back: nothing half-stored remains. A delete
 * leaves a tombstone (status D, metadata cleared) and marks the files 'removing'; the sweep deletes
 * their bytes from the store that holds them, as it does for uploads cut off by a process that died
 * and for pending documents whose forms expired.
 *
 * Listing and sync follow the cases listing's rules (cases/service.ts): a write takes the patient's
 * records lock and stamps updated_at with the start of the current second, never below the
 * patient's latest; a listing takes the lock shared and hands out only seconds that are over. So a
 * client that reads to the last page and then lists with u_at__gt = the largest updated_at it saw
 * misses no create, update or delete. Documents and cases of a patient share the lock and the
 * events' ordering key.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { inTransaction, writeWithNext, type Db, type DialectName } from '../../db/index.ts';
import type { Database, DocumentFilesTable, DocumentsTable } from '../../db/schema.ts';
import type { DocumentsConfig } from '../../config.ts';
import { AppError } from '../../errors.ts';
import { envelope, type EventInput } from '../../events.ts';
import { patientKey, recordEvent } from '../../jobs/outbox.ts';
import { enqueueWithNext } from '../../jobs/queue-repo.ts';
import { SealedTokens } from '../../security/sealed-tokens.ts';
import type { PatientService } from '../patients/service.ts';
import { ACCEPTED_LIST, ACCEPTED_TYPES, canonicalType, checkedFile, checkStoredFile, type CheckedFile, type FileRules } from './file-check.ts';
import type { DirectStore, FileStore } from './file-store.ts';
import { DocumentLinks, type UploadForm } from './links.ts';
import { thumbnailOfFile } from './thumbnails.ts';
import { youngCollected } from './young-collections.ts';
import * as repo from './repo.ts';
import type { Static } from 'typebox';
import type { DocumentRequest, UpdateBody } from './schemas.ts';

/** Who the request is for: the caller's business and client, and the X-Pt-Id resolved. */
export interface PatientScope {
  businessId: string;
  patientRef: string;
  clientId: string;
  /** The X-Pt-Id as sent: a download link names the patient so, as the access log does the request's. */
  sentRef: string;
}

/** One document of a batch, as its schema says (schemas.ts); metadata is accepted and not kept. */
export type NewDocument = Static<typeof DocumentRequest>;

export type DocumentChangesInput = Static<typeof UpdateBody>;

export interface ListItem {
  record: {
    item: Record<string, unknown>;
    status: 'A' | 'D';
    updated_at: number;
  };
}

export interface PreparedDocument {
  document_id: string;
  forms: Array<{ url: string; fields: Record<string, string> }>;
}

/** What a file upload carries besides its bytes. */
export interface IncomingFile {
  stream: AsyncIterable<Buffer>;
  fileName: string | undefined;
}

/** A file to send: its bytes and what the response says of them, or the store's own link to it. */
export type Download = FileDownload | { redirect: string };

export interface FileDownload {
  stream: AsyncIterable<Buffer>;
  contentType: string;
  size: number;
  fileName: string;
}

/** The job that makes a document's thumbnails (index.ts registers it). */
export const THUMBNAIL_JOB = 'documents.thumbnail';

/** The longest a thumbnail job waits for this process's uploads to be over before it runs anyway. */
const THUMBNAIL_WAIT_MS = 30_000;
/** Eka takes the first 10 tags. */
const MAX_TAGS = 10;
/** An upload whose process died is given back after this long. */
const STALE_UPLOAD_MS = 60 * 60_000;
/** A pending document stays this long after its forms expired, so uploads begun in time can finish. */
const PENDING_GRACE_MS = 60 * 60_000;
const SWEEP_BATCH = 100;

const NOT_FOUND = () => new AppError(404, 'No document found with the given ID.', { code: 'NOT_FOUND' });
const EXISTS = (ids: string[]) => new AppError(409, `Document already exists: ${ids.join(', ')}`, { code: 'CONFLICT' });
const BAD_TOKEN = () =>
  AppError.badRequest('offset: is not a valid page token for this patient and filter', {
    offset: ['is not a valid page token for this patient and filter'],
  });
const USED = () => new AppError(409, 'The upload form was already used: its file is stored', { code: 'CONFLICT' });
const FORM_REFUSED = (message: string) => new AppError(403, message, { code: 'ACCESS_DENIED' });

const seconds = (ms: number) => Math.floor(ms / 1000);
/** Where a form of an object store puts its file until the service has checked it (object-store.ts). */
export const uploadKey = (file: { business_id: string; document_id: string; idx: number; form_id: string }) =>
  `uploads/${file.business_id}/${file.document_id}/${file.idx}/${file.form_id}`;
/** Where a store keeps a file: a new key for each upload, so a retried one never meets the bytes of another. */
const storageKeyOf = (businessId: string, documentId: string, idx: number) => `${businessId}/${documentId}/${idx}/${randomUUID()}`;
/**
 * Where a store keeps the thumbnail of the file stored under `storageKey`: derived from it, so that a
 * thumbnail written by a job that ended before recording it is still found, and removed, by the
 * sweep (from the default store and the file's own) and an erasure (from every store).
 */
export const thumbnailKeyOf = (storageKey: string) => `${storageKey}-thumbnail`;
const jsonList = (text: string | null): string[] => (text ? (JSON.parse(text) as string[]) : []);

/** A file name may name a file, not a place: no directory parts, no control characters. */
export function checkFileName(name: string | undefined): string | null {
  if (name === undefined || name === '') return null;
  if (/[/\\\u0000-\u001f\u007f]/.test(name) || name === '.' || name === '..' || name.length > 255) {
    throw new AppError(400, 'The file name must be a plain name of at most 255 characters, without a path', { code: 'INVALID_REQUEST' });
  }
  return name;
}

/** The fields a PATCH changes, in the order a document.updated event's `changed` names them. */
const UPDATABLE = ['dt', 'dd_e', 'tg', 'title', 'cases'] as const satisfies ReadonlyArray<keyof DocumentChangesInput>;
/** Fields of Eka's PATCH that this service accepts and does not keep (no ABDM linking, no FHIR bundles). */
const EKA_ONLY_FIELDS = ['ndhm', 'oid', 'metadata'] as const satisfies ReadonlyArray<keyof DocumentChangesInput>;

/** The extensions a file of each accepted type may be named with, the one a name is given first. */
const EXTENSIONS: Readonly<Record<string, readonly string[]>> = {
  'application/pdf': ['pdf'],
  'image/jpeg': ['jpg', 'jpeg', 'jpe'],
  'image/png': ['png'],
  'image/heic': ['heic', 'heif'],
  'image/heif': ['heif', 'heic'],
  'application/dicom': ['dcm', 'dicom'],
};

/**
 * A stored file's name as its download gives it: the uploader's, with the extension of the type its
 * bytes were found to be when the name does not end with one, so that a PDF named `invoice.html` is
 * not opened as a page once saved.
 */
export function downloadName(name: string, contentType: string): string {
  const extensions = EXTENSIONS[contentType] ?? ['bin'];
  const dot = name.lastIndexOf('.');
  const given = dot > 0 ? name.slice(dot + 1).toLowerCase() : '';
  return extensions.includes(given) ? name : `${name}.${extensions[0]}`;
}

function tagsOf(tags: string[] | undefined | null): string[] {
  return [...new Set(tags ?? [])].slice(0, MAX_TAGS);
}

export interface DocumentsServiceDeps {
  db: Kysely<Database>;
  dialect: DialectName;
  masterKey: Buffer;
  config: DocumentsConfig;
  /** The address the links point at (CPS_PUBLIC_URL). */
  publicUrl: string;
  /** Where new files go. */
  store: FileStore;
  /** Every backend by name, to read and remove files stored by any of them. */
  stores: ReadonlyMap<string, FileStore>;
  patients: PatientService;
}

export class DocumentsService {
  readonly #deps: DocumentsServiceDeps;
  readonly #links: DocumentLinks;
  readonly #cursors: SealedTokens;
  /** Uploads in flight in this process, and what waits for them to be over (#afterUploads). */
  #uploading = 0;
  readonly #uploadsOver: Array<() => void> = [];
  /** The thumbnail job under way in this process: the next waits for it. */
  #thumbnailing: Promise<void> = Promise.resolve();

  constructor(deps: DocumentsServiceDeps) {
    this.#deps = deps;
    this.#links = new DocumentLinks(deps.masterKey);
    this.#cursors = new SealedTokens(deps.masterKey, 'documents-cursor');
  }

  get #db() {
    return this.#deps.db;
  }

  async patientScope(businessId: string, patientId: string, clientId: string): Promise<PatientScope> {
    return { businessId, patientRef: await this.#deps.patients.canonicalRef(businessId, patientId), clientId, sentRef: patientId };
  }

  /** Step 1 of Eka's upload: pending documents and, per file, an upload form. */
  async prepare(scope: PatientScope, batch: NewDocument[]): Promise<{ error: false; message: string; batch_response: PreparedDocument[] }> {
    const { config } = this.#deps;
    if (batch.length === 0) throw AppError.badRequest('batch_request: must name at least one document', { batch_request: ['must not be empty'] });
    const ids = batch.map((doc) => doc.document_id ?? randomUUID());
    if (new Set(ids).size !== ids.length)
      throw AppError.badRequest('batch_request: document_id appears twice', { batch_request: ['document_id appears twice'] });
    let declared = 0;
    const types = batch.map((doc, d) =>
      doc.files.map((file, f) => {
        const type = canonicalType(file.contentType);
        const field = `batch_request/${d}/files/${f}`;
        if (type === null) {
          throw AppError.badRequest(`${field}/contentType: must be one of ${ACCEPTED_LIST}`, {
            [`${field}/contentType`]: [`must be one of ${ACCEPTED_LIST}`],
          });
        }
        if (file.file_size > config.maxFileBytes) {
          throw new AppError(413, `${field}/file_size: must be at most ${config.maxFileBytes} bytes`, { code: 'INVALID_REQUEST' });
        }
        declared += file.file_size;
        return type;
      }),
    );
    const now = Date.now();
    const expiresAt = now + config.formTtlSeconds * 1000;
    const response = await inTransaction(this.#db, async (trx) => {
      await this.#checkQuota(trx, scope.businessId, declared);
      await this.#deps.patients.lockRecords(trx, scope.businessId, scope.patientRef, 'write');
      const taken = await repo.existingIds(trx, scope.businessId, ids);
      if (taken.length > 0) throw EXISTS(taken);
      const updatedAt = await repo.stampWrite(trx, this.#deps.dialect, scope.businessId, scope.patientRef);
      const answer: PreparedDocument[] = [];
      for (const [d, doc] of batch.entries()) {
        const documentId = ids[d]!;
        const cases = await this.#checkCases(trx, scope, doc.cases ?? [], `batch_request/${d}/cases`);
        const files: DocumentFilesTable[] = doc.files.map((file, idx) => ({
          business_id: scope.businessId,
          document_id: documentId,
          idx,
          form_id: randomUUID(),
          state: 'waiting',
          content_type: types[d]![idx]!,
          declared_size: file.file_size,
          size: null,
          file_name: null,
          // A form of an object store is the store's: the sweep then knows where a posted file may wait.
          store: this.#deps.store.direct ? this.#deps.store.name : null,
          storage_key: null,
          claimed_at: null,
          stored_at: null,
        }));
        await repo.insertDocument(
          trx,
          {
            business_id: scope.businessId,
            id: documentId,
            patient_ref: scope.patientRef,
            status: 'P',
            source: 'form',
            dt: doc.dt || null,
            document_date: doc.dd_e === undefined || doc.dd_e === null ? null : doc.dd_e * 1000,
            tags: JSON.stringify(tagsOf(doc.tg)),
            title: doc.title ?? null,
            cases: JSON.stringify(cases),
            task: null,
            created_at: updatedAt,
            updated_at: updatedAt,
            upload_until: expiresAt,
          },
          files,
        );
        const forms = [];
        for (const file of files) forms.push(await this.#form(scope, file, expiresAt));
        answer.push({ document_id: documentId, forms });
      }
      return answer;
    });
    return { error: false, message: '', batch_response: response };
  }

  /** An upload form's POST: the policy field opens it; the file must be what the form declared. */
  async receiveByForm(policy: string | undefined, fields: Record<string, string>, file: IncomingFile): Promise<void> {
    const form = policy ? this.#links.openForm(policy) : null;
    if (form === null) throw FORM_REFUSED('The upload form is not valid: send the fields of a form from POST /mr/api/v1/docs, before the file');
    if (Date.now() > form.expiresAt) {
      throw FORM_REFUSED(`The upload form expired at ${new Date(form.expiresAt).toISOString()}; ask POST /mr/api/v1/docs for a new one`);
    }
    const sentType = fields['content-type'];
    if (sentType !== undefined && canonicalType(sentType) !== form.contentType) {
      throw new AppError(400, `Content-Type field ${JSON.stringify(sentType)} is not the form's ${form.contentType}`, { code: 'INVALID_REQUEST' });
    }
    const fileName = checkFileName(file.fileName);
    const row = await repo.findFile(this.#db, form.businessId, form.documentId, form.idx);
    if (row?.store && this.#deps.stores.get(row.store)?.direct) {
      throw new AppError(400, "This form's file goes to the object store: POST it to the form's url", { code: 'INVALID_REQUEST' });
    }
    await this.#receive(form, file.stream, fileName, null, {
      maxBytes: form.size,
      maxReason: "the form's declared file_size",
      exactBytes: form.size,
      expectedType: form.contentType,
      maxImagePixels: this.#deps.config.maxImagePixels,
    });
  }

  /**
   * The redirect an object store's form ends with (the form's `success_action_redirect`): checks the
   * file the client put in the store as an upload through this service is checked, and keeps it, or
   * removes it and gives the form back.
   */
  async confirmForm(token: string | undefined): Promise<void> {
    const form = token ? this.#links.openForm(token) : null;
    if (form === null) throw FORM_REFUSED('The upload form is not valid');
    // The store took the file before the form expired; its redirect may arrive a little later.
    if (Date.now() > form.expiresAt + PENDING_GRACE_MS) throw FORM_REFUSED('The upload form expired; ask POST /mr/api/v1/docs for a new one');
    const file = await repo.findFile(this.#db, form.businessId, form.documentId, form.idx);
    const store = file?.store ? this.#deps.stores.get(file.store) : undefined;
    if (!file || file.form_id !== form.formId || !store?.direct) {
      if (file?.form_id === form.formId && file.state === 'stored') throw USED();
      throw NOT_FOUND();
    }
    await this.#confirm(form, store, store.direct, file);
  }

  async #confirm(form: UploadForm, store: FileStore, direct: DirectStore, file: DocumentFilesTable): Promise<void> {
    const waiting = uploadKey(file);
    const storageKey = storageKeyOf(form.businessId, form.documentId, form.idx);
    try {
      await this.#claim(form, store, storageKey);
    } catch (error) {
      // The form used again after its file was stored (a presigned POST cannot refuse it): what this
      // use put in the store goes, and the stored file, moved away already, stays.
      const now = await repo.findFile(this.#db, form.businessId, form.documentId, form.idx);
      if (now?.state === 'stored' && now.form_id === form.formId) await store.remove([waiting]);
      throw error;
    }
    const checked: CheckedFile = { contentType: null, size: 0 };
    try {
      if ((await direct.size(waiting)) === null) {
        throw new AppError(400, 'No file arrived at the upload form: POST it to the form first', { code: 'INVALID_REQUEST' });
      }
      // Checked once copied, where the client cannot write: the form may post another file over the waiting one meanwhile.
      await direct.copy(waiting, storageKey);
      const size = (await direct.size(storageKey)) ?? 0;
      const rules = { maxBytes: form.size, maxReason: "the form's declared file_size", exactBytes: form.size, expectedType: form.contentType };
      const read = (start: number, bytes: number) => direct.range(storageKey, start, bytes);
      await checkStoredFile(size, read, { ...rules, maxImagePixels: this.#deps.config.maxImagePixels }, checked);
      await store.remove([waiting]);
      await this.#stored(form, { storageKey, size, contentType: checked.contentType!, fileName: null, at: Date.now() });
    } catch (error) {
      // A refused file is removed at once: nothing of it stays in the store.
      await store.remove(error instanceof AppError ? [storageKey, waiting] : [storageKey]);
      await repo.releaseFile(this.#db, form.businessId, form.documentId, form.idx, storageKey);
      await repo.keepStore(this.#db, form.businessId, form.documentId, form.idx, store.name);
      throw error;
    }
  }

  /** POST /mr/api/v2/docs: a document and its one file, in one request. */
  async uploadOne(scope: PatientScope, options: { dt?: string; task: string }, file: IncomingFile): Promise<{ document_id: string }> {
    const { config } = this.#deps;
    const fileName = checkFileName(file.fileName);
    let room = Number.MAX_SAFE_INTEGER;
    // With a limit, the upload reserves what it may take of the business's room (its file row's
    // declared_size until it is stored), after the business's other reservations: uploads at once
    // cannot each take the same room.
    const reserve =
      config.maxBusinessBytes === 0
        ? null
        : async (trx: Db) => {
            await repo.lockBusinessBytes(trx, scope.businessId);
            room = config.maxBusinessBytes - (await repo.businessBytes(trx, scope.businessId));
            if (room <= 0) throw this.#quotaError();
            return Math.min(config.maxFileBytes, room);
          };
    const documentId = randomUUID();
    const storageKey = storageKeyOf(scope.businessId, documentId, 0);
    const now = Date.now();
    const form: UploadForm = {
      businessId: scope.businessId,
      clientId: scope.clientId,
      patientRef: scope.patientRef,
      documentId,
      idx: 0,
      formId: randomUUID(),
      contentType: '',
      size: 0,
      expiresAt: now + STALE_UPLOAD_MS,
    };
    // Pending (never listed) and its file taken for this upload already: no lock, no stamp and, on
    // PostgreSQL, one round trip. The document gets its stamp when it becomes active (#stored).
    await repo.insertUploading(
      this.#db,
      {
        business_id: scope.businessId,
        id: documentId,
        patient_ref: scope.patientRef,
        status: 'P',
        source: 'multipart',
        dt: options.dt || null,
        document_date: null,
        tags: '[]',
        title: null,
        cases: '[]',
        task: options.task,
        created_at: now,
        updated_at: now,
        upload_until: form.expiresAt,
      },
      {
        business_id: scope.businessId,
        document_id: documentId,
        idx: 0,
        form_id: form.formId,
        state: 'receiving',
        content_type: 'application/octet-stream',
        declared_size: null,
        size: null,
        file_name: null,
        store: this.#deps.store.name,
        storage_key: storageKey,
        claimed_at: now,
        stored_at: null,
      },
      reserve,
    );
    try {
      const byFile = room >= config.maxFileBytes;
      await this.#receive(form, file.stream, fileName, storageKey, {
        maxBytes: Math.min(config.maxFileBytes, room),
        maxReason: byFile ? 'CPS_DOCUMENTS_MAX_FILE_MB' : "the business's remaining space (CPS_DOCUMENTS_MAX_BUSINESS_MB)",
        maxImagePixels: config.maxImagePixels,
      });
    } catch (error) {
      await repo.deleteDocuments(this.#db, scope.businessId, [documentId]);
      throw error;
    }
    return { document_id: documentId };
  }

  async list(scope: PatientScope, options: { offset?: string; updatedAfter?: number }): Promise<{ items: ListItem[]; next_token: string | null }> {
    const { businessId, patientRef } = scope;
    const walk = JSON.stringify(['documents-cursor', 1, businessId, patientRef]);
    let after: repo.PageQuery['after'] = null;
    let updatedAfter = options.updatedAfter ?? null;
    if (options.offset) {
      const values = this.#cursors.open(options.offset, walk);
      if (values === null || values.length !== 3) throw BAD_TOKEN();
      const [updatedAt, id, walkAfter] = values;
      if (!Number.isSafeInteger(updatedAt) || typeof id !== 'string' || (walkAfter !== null && !Number.isSafeInteger(walkAfter))) throw BAD_TOKEN();
      if (options.updatedAfter !== undefined && options.updatedAfter !== walkAfter) throw BAD_TOKEN();
      after = { updatedAt: updatedAt as number, id };
      updatedAfter = walkAfter as number | null;
    }
    const pageSize = this.#deps.config.pageSize;
    const rows = await inTransaction(this.#db, async (trx) => {
      await this.#deps.patients.lockRecords(trx, businessId, patientRef, 'listing');
      return repo.listPage(trx, this.#deps.dialect, {
        businessId,
        patientRef,
        after,
        updatedFrom: updatedAfter === null ? null : (updatedAfter + 1) * 1000,
        limit: pageSize + 1,
      });
    });
    const page = rows.slice(0, pageSize);
    const last = page.at(-1);
    const nextToken = rows.length > pageSize && last ? this.#cursors.seal([last.updated_at, last.id, updatedAfter], walk) : null;
    const active = page.filter((row) => row.status === 'A').map((row) => row.id);
    const thumbnails = await repo.thumbnailsOf(this.#db, businessId, active);
    const expiresAt = Date.now() + this.#deps.config.linkTtlSeconds * 1000;
    const thumbnailUrl = (id: string) => {
      const file = thumbnails.get(id);
      return file === undefined ? null : this.#downloadUrl(scope, id, file.idx, file.formId, expiresAt, '/thumbnail');
    };
    return {
      items: page.map((row) => ({
        record: { item: listItem(row, thumbnailUrl(row.id)), status: row.status as 'A' | 'D', updated_at: seconds(row.updated_at) },
      })),
      next_token: nextToken,
    };
  }

  /** One document, with a short-lived download link per file. */
  async get(scope: PatientScope, id: string): Promise<Record<string, unknown>> {
    const row = await this.#active(this.#db, scope, id);
    const files = await repo.filesOf(this.#db, scope.businessId, [id]);
    const expiresAt = Date.now() + this.#deps.config.linkTtlSeconds * 1000;
    return {
      document_id: row.id,
      patient_id: row.patient_ref,
      source: 'api',
      dt: row.dt ?? '',
      document_type: row.dt ?? '',
      document_date_epoch: row.document_date === null ? null : seconds(row.document_date),
      upload_date: seconds(row.created_at),
      tags: jsonList(row.tags),
      title: row.title,
      cases: jsonList(row.cases),
      files: files.map((file) => ({
        asset_url: this.#downloadUrl(scope, row.id, file.idx, file.form_id, expiresAt),
        file_type: ACCEPTED_TYPES[file.content_type] ?? 'IMG',
        content_type: file.content_type,
        size: Number(file.size ?? 0),
        expires_at: seconds(expiresAt),
      })),
    };
  }

  /** What Eka's parsing endpoint answers for a document it did not parse: this service parses nothing. */
  async result(scope: PatientScope, id: string): Promise<Record<string, unknown>> {
    const row = await repo.findDocument(this.#db, scope.businessId, id);
    if (!row || row.patient_ref !== scope.patientRef || row.status === 'P') throw NOT_FOUND();
    if (row.status === 'D') return { status: 'deleted' };
    return {
      status: 'error',
      error: [
        { code: 422, message: 'This service stores documents and does not parse them: no smart report, PII or classification result will come' },
      ],
    };
  }

  async update(scope: PatientScope, id: string, changes: DocumentChangesInput): Promise<void> {
    const named = UPDATABLE.filter((field) => changes[field] !== undefined);
    if (named.length === 0) {
      // Eka's linking fields (ABDM's ndhm, oid, a FHIR bundle) name nothing this service keeps: the document stays as it is.
      if (EKA_ONLY_FIELDS.some((field) => changes[field] !== undefined)) {
        await this.#active(this.#db, scope, id);
        return;
      }
      throw AppError.badRequest('The update names no field: send dt, dd_e, tg, title or cases.');
    }
    await this.#write(scope, async (trx, updatedAt) => {
      const current = await this.#active(trx, scope, id);
      const set: repo.DocumentChanges = { updated_at: updatedAt };
      if (changes.dt !== undefined) set.dt = changes.dt || null;
      if (changes.dd_e !== undefined) set.document_date = changes.dd_e === null ? null : changes.dd_e * 1000;
      if (changes.tg !== undefined) set.tags = JSON.stringify(tagsOf(changes.tg));
      if (changes.title !== undefined) set.title = changes.title;
      if (changes.cases !== undefined) {
        set.cases = JSON.stringify(await this.#checkCases(trx, scope, changes.cases ?? [], 'cases', jsonList(current.cases)));
      }
      await repo.updateDocument(trx, scope.businessId, id, set);
      await this.#event(trx, scope, 'document.updated', id, named);
    });
  }

  /** Leaves a tombstone (status D, metadata cleared, a new updated_at) and removes the files. */
  async delete(scope: PatientScope, id: string): Promise<void> {
    await this.#write(scope, async (trx, updatedAt) => {
      await this.#active(trx, scope, id);
      await repo.updateDocument(trx, scope.businessId, id, {
        status: 'D',
        dt: null,
        document_date: null,
        tags: null,
        title: null,
        cases: null,
        updated_at: updatedAt,
      });
      await repo.markRemoving(trx, scope.businessId, [id]);
      await this.#event(trx, scope, 'document.deleted', id);
    });
    await this.sweep().catch(() => {});
  }

  /** Opens a download link (its `link` and `pt` as the URL carries them): the file's bytes, or 403/404. */
  async download(
    token: string,
    documentId: string,
    idx: number,
    patient: string | undefined,
    thumbnail = false,
  ): Promise<{ file: Download; businessId: string; clientId: string; patientRef: string }> {
    const link = this.#links.openDownload(token);
    if (link === null || link.documentId !== documentId || link.idx !== idx || link.patientRef !== patient) {
      throw FORM_REFUSED('The download link is not valid');
    }
    if (Date.now() > link.expiresAt) throw FORM_REFUSED('The download link expired; read the document again for a new one');
    const row = await repo.findDocument(this.#db, link.businessId, documentId);
    if (row?.status !== 'A') throw NOT_FOUND();
    const file = await repo.findFile(this.#db, link.businessId, documentId, idx);
    // The file the link was issued for: not one that took its document id and index after an erasure.
    if (file?.form_id !== link.fileId) throw NOT_FOUND();
    if (file.state !== 'stored' || file.storage_key === null || file.store === null) throw NOT_FOUND();
    // A thumbnail is the file's, opened by the same link; its own store and key.
    const held = thumbnail
      ? { store: file.thumbnail_store, key: file.thumbnail_key, size: file.thumbnail_size, contentType: 'image/jpeg' }
      : { store: file.store, key: file.storage_key, size: file.size, contentType: file.content_type };
    if (!held.store || !held.key) throw NOT_FOUND();
    const store = this.#deps.stores.get(held.store);
    if (!store) throw new Error(`documents: file ${documentId}/${idx} is in store ${held.store}, which is not configured`);
    const fileName = thumbnail ? `${documentId}-${idx}-thumbnail.jpeg` : downloadName(file.file_name ?? `${documentId}-${idx}`, held.contentType);
    return {
      file: store.direct
        ? { redirect: await store.direct.downloadUrl(held.key, { contentType: held.contentType, fileName }) }
        : { stream: store.read(held.key), contentType: held.contentType, size: Number(held.size ?? 0), fileName },
      businessId: link.businessId,
      clientId: link.clientId,
      patientRef: link.patientRef,
    };
  }

  /**
   * The documents.thumbnail job: a thumbnail for each of the document's JPEG, PNG, HEIF and PDF files that
   * has none (thumbnails.ts), stored by the default store, once this process's uploads are over
   * (#afterUploads), one document at a time in this process. A file deleted or replaced meanwhile keeps
   * none: what was written for it is removed.
   */
  async makeThumbnails(businessId: string, documentId: string, signal?: AbortSignal): Promise<number> {
    await this.#afterUploads(THUMBNAIL_WAIT_MS, signal);
    // One at a time in this process (each reads a whole file), however many jobs one claim took.
    const turn = this.#thumbnailing.then(() => {
      signal?.throwIfAborted();
      return this.#makeThumbnails(businessId, documentId, signal);
    });
    this.#thumbnailing = turn.then(
      () => {},
      () => {},
    );
    return turn;
  }

  async #makeThumbnails(businessId: string, documentId: string, signal?: AbortSignal): Promise<number> {
    let made = 0;
    for (const file of await repo.filesOf(this.#db, businessId, [documentId])) {
      if (
        file.state !== 'stored' ||
        !this.#deps.config.thumbnailTypes.has(file.content_type) ||
        file.thumbnail_key ||
        !file.storage_key ||
        !file.store
      )
        continue;
      const source = this.#deps.stores.get(file.store);
      if (!source) continue;
      const parts: Buffer[] = [];
      for await (const part of source.read(file.storage_key)) parts.push(part);
      const thumbnail = await thumbnailOfFile(file.content_type, Buffer.concat(parts));
      if (thumbnail === null) continue;
      const store = this.#deps.store;
      const key = thumbnailKeyOf(file.storage_key);
      // A run that lost its job's lease meanwhile stops here: another has the job, and the key.
      signal?.throwIfAborted();
      // What an attempt that ended between writing and recording left under the key.
      await store.remove([key]);
      await store.write(
        key,
        (async function* () {
          yield thumbnail;
        })(),
      );
      const kept = await repo.setThumbnail(
        this.#db,
        { businessId, documentId, idx: file.idx, storageKey: file.storage_key },
        { store: store.name, key, size: thumbnail.length },
      );
      if (kept) made += 1;
      // Not the file's any more, or another run recorded the thumbnail first (under the same key: kept then).
      else if ((await repo.findFile(this.#db, businessId, documentId, file.idx))?.thumbnail_key !== key) await store.remove([key]);
    }
    return made;
  }

  /**
   * Deletes the bytes of removed files and of uploads cut off long ago, and pending documents whose
   * forms expired. Idempotent; run by the documents.sweep job and after each delete.
   */
  async sweep(now = Date.now()): Promise<{ files: number; documents: number }> {
    let files = 0;
    let documents = 0;
    for (const expired of await repo.expiredPending(this.#db, now - PENDING_GRACE_MS, SWEEP_BATCH)) {
      await repo.markRemoving(this.#db, expired.business_id, [expired.id]);
      documents += 1;
    }
    for (const file of await repo.filesToSweep(this.#db, now - STALE_UPLOAD_MS, SWEEP_BATCH)) {
      const store = file.store === null ? undefined : this.#deps.stores.get(file.store);
      const keys = [
        ...(file.storage_key === null ? [] : [file.storage_key]),
        ...(store?.direct && file.state === 'removing' ? [uploadKey(file)] : []),
      ];
      if (store && keys.length > 0) await store.remove(keys);
      const thumbnailStore = file.thumbnail_store ? this.#deps.stores.get(file.thumbnail_store) : undefined;
      if (thumbnailStore && file.thumbnail_key) await thumbnailStore.remove([file.thumbnail_key]);
      if (file.state === 'removing' && file.storage_key !== null) {
        // An unrecorded thumbnail is in the store thumbnails go to: the default (now, or when the file was stored, its own).
        for (const holder of new Set([this.#deps.store, ...(store ? [store] : [])])) await holder.remove([thumbnailKeyOf(file.storage_key)]);
      }
      if (file.state === 'receiving') {
        await repo.releaseFile(this.#db, file.business_id, file.document_id, file.idx, file.storage_key ?? '');
      } else {
        await repo.deleteFileRow(this.#db, file);
      }
      files += 1;
    }
    await this.#dropEmptyPending(now);
    await this.#dropReposted(now);
    return { files, documents };
  }

  /**
   * Removes what an object store took from a stored file's form posted again (a presigned POST cannot
   * refuse it, and a client need not follow its redirect back): once the form expired, and the grace a
   * redirect has, nothing can post it again. The business's bytes count only the stored file.
   */
  async #dropReposted(now: number): Promise<void> {
    for (const doc of await repo.formsOver(this.#db, now - PENDING_GRACE_MS, SWEEP_BATCH)) {
      for (const file of await repo.filesOf(this.#db, doc.business_id, [doc.id])) {
        const store = file.store === null ? undefined : this.#deps.stores.get(file.store);
        if (store?.direct && file.state === 'stored') await store.remove([uploadKey(file)]);
      }
      await repo.updateDocument(this.#db, doc.business_id, doc.id, { upload_until: null });
    }
  }

  async #dropEmptyPending(now: number): Promise<void> {
    const pending = await repo.expiredPending(this.#db, now - PENDING_GRACE_MS, SWEEP_BATCH);
    for (const doc of pending) {
      const left = await repo.filesOf(this.#db, doc.business_id, [doc.id]);
      if (left.length === 0) await repo.deleteDocuments(this.#db, doc.business_id, [doc.id]);
    }
  }

  /** Stores a form's file: claimed here (`claimed` null), or claimed by its caller under the storage key `claimed`. */
  async #receive(form: UploadForm, stream: AsyncIterable<Buffer>, fileName: string | null, claimed: string | null, rules: FileRules): Promise<void> {
    const store = this.#deps.store;
    const storageKey = claimed ?? storageKeyOf(form.businessId, form.documentId, form.idx);
    if (claimed === null) await this.#claim(form, store, storageKey);
    const checked: CheckedFile = { contentType: null, size: 0 };
    this.#uploading += 1;
    try {
      const size = await store.write(storageKey, checkedFile(youngCollected(stream), rules, checked));
      await this.#stored(form, { storageKey, size, contentType: checked.contentType!, fileName, at: Date.now() });
    } catch (error) {
      await store.remove([storageKey]);
      await repo.releaseFile(this.#db, form.businessId, form.documentId, form.idx, storageKey);
      throw error;
    } finally {
      this.#uploading -= 1;
      if (this.#uploading === 0) for (const resolve of this.#uploadsOver.splice(0)) resolve();
    }
  }

  /**
   * Resolves once no upload is in flight in this process, or after `maxMs`, or on `signal`: the
   * thumbnail job reads whole files and decodes images, which a burst of uploads should not pay for
   * in memory and time while it lasts.
   */
  #afterUploads(maxMs: number, signal?: AbortSignal): Promise<void> {
    if (this.#uploading === 0 || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, maxMs);
      signal?.addEventListener('abort', done, { once: true });
      this.#uploadsOver.push(done);
    });
  }

  /** Takes the form's file for one upload (waiting -> receiving), or says why not. */
  async #claim(form: UploadForm, store: FileStore, storageKey: string): Promise<void> {
    const target = { businessId: form.businessId, documentId: form.documentId, idx: form.idx, formId: form.formId };
    if (await repo.claimFile(this.#db, target, { store: store.name, storageKey, at: Date.now() })) return;
    const file = await repo.findFile(this.#db, form.businessId, form.documentId, form.idx);
    if (!file || file.form_id !== form.formId || file.state === 'removing') throw NOT_FOUND();
    if (file.state === 'stored') throw USED();
    throw new AppError(409, 'The upload form is in use by another upload', { code: 'CONFLICT' });
  }

  /** Marks the file stored; when it was the document's last, the document becomes active. */
  async #stored(form: UploadForm, stored: Parameters<typeof repo.markStored>[4]): Promise<void> {
    const scope: PatientScope = { businessId: form.businessId, patientRef: form.patientRef, clientId: form.clientId, sentRef: form.patientRef };
    await this.#write(scope, async (trx, updatedAt) => {
      const row = await repo.findDocument(trx, form.businessId, form.documentId);
      if (row?.status !== 'P') throw NOT_FOUND();
      if (!(await repo.markStored(trx, form.businessId, form.documentId, form.idx, stored))) throw NOT_FOUND();
      const files = await repo.filesOf(trx, form.businessId, [form.documentId]);
      if (files.every((file) => file.state === 'stored')) {
        // An object store's form can be posted again until it expires, its file kept there, unchecked and
        // uncounted, under its waiting key: upload_until stays, for the sweep to remove those after it.
        const reposted = files.some((file) => file.store !== null && this.#deps.stores.get(file.store)?.direct);
        const active = { status: 'A', updated_at: updatedAt, upload_until: row.source === 'form' && reposted ? row.upload_until : null } as const;
        await writeWithNext(trx, repo.updateDocumentQuery(trx, form.businessId, form.documentId, active));
        // The rows as this transaction left them: the event needs no second read.
        await this.#event(trx, scope, 'document.created', form.documentId, undefined, { row: { ...row, ...active }, files });
        if (files.some((file) => this.#deps.config.thumbnailTypes.has(file.content_type))) {
          await enqueueWithNext(trx, {
            kind: THUMBNAIL_JOB,
            businessId: form.businessId,
            payload: { businessId: form.businessId, documentId: form.documentId },
            dedupeKey: `${form.businessId}/${form.documentId}`,
          });
        }
      }
    });
  }

  async #active(db: Db, scope: PatientScope, id: string): Promise<DocumentsTable> {
    const row = await repo.findDocument(db, scope.businessId, id);
    if (!row || row.patient_ref !== scope.patientRef || row.status !== 'A') throw NOT_FOUND();
    return row;
  }

  /**
   * The cases to link, each an active case of the patient or one the document is linked to already: a
   * link outlives its case's delete (the case's tombstone says so), so a client sending the document's
   * cases back as it read them is not refused for one deleted meanwhile.
   */
  async #checkCases(trx: Db, scope: PatientScope, cases: string[], field: string, linked: string[] = []): Promise<string[]> {
    const wanted = [...new Set(cases)];
    const kept = new Set(linked);
    const checked = wanted.filter((id) => !kept.has(id));
    const found = new Set(await repo.activeCaseIds(trx, scope.businessId, scope.patientRef, checked));
    const unknown = checked.filter((id) => !found.has(id));
    if (unknown.length > 0) {
      throw AppError.badRequest(`${field}: no case of this patient has the id ${unknown.join(', ')}`, {
        [field]: [`unknown case ${unknown.join(', ')}`],
      });
    }
    return wanted;
  }

  /** Refuses `adding` bytes the business has no room for; in `trx`, which then holds the business's bytes until it ends. */
  async #checkQuota(trx: Db, businessId: string, adding: number): Promise<void> {
    const limit = this.#deps.config.maxBusinessBytes;
    if (limit === 0) return;
    await repo.lockBusinessBytes(trx, businessId);
    if ((await repo.businessBytes(trx, businessId)) + adding > limit) throw this.#quotaError();
  }

  #quotaError(): AppError {
    return new AppError(413, `The business's documents would exceed ${this.#deps.config.maxBusinessBytes} bytes (CPS_DOCUMENTS_MAX_BUSINESS_MB)`, {
      code: 'INVALID_REQUEST',
    });
  }

  async #form(scope: PatientScope, file: DocumentFilesTable, expiresAt: number): Promise<{ url: string; fields: Record<string, string> }> {
    const policy = this.#links.sealForm({
      businessId: scope.businessId,
      clientId: scope.clientId,
      patientRef: scope.patientRef,
      documentId: file.document_id,
      idx: file.idx,
      formId: file.form_id,
      contentType: file.content_type,
      size: Number(file.declared_size ?? 0),
      expiresAt,
    });
    const direct = this.#deps.store.direct;
    if (direct) {
      return direct.uploadForm(uploadKey(file), {
        contentType: file.content_type,
        size: Number(file.declared_size ?? 0),
        expiresInSeconds: Math.max(1, Math.round((expiresAt - Date.now()) / 1000)),
        redirect: `${this.#deps.publicUrl}/mr/api/v1/docs/upload/done?${new URLSearchParams({ form: policy })}`,
      });
    }
    return {
      url: `${this.#deps.publicUrl}/mr/api/v1/docs/upload`,
      fields: { key: `${file.document_id}/${file.idx}`, 'Content-Type': file.content_type, policy },
    };
  }

  #downloadUrl(scope: PatientScope, documentId: string, idx: number, fileId: string, expiresAt: number, what: '' | '/thumbnail' = ''): string {
    const link = this.#links.sealDownload({
      businessId: scope.businessId,
      clientId: scope.clientId,
      patientRef: scope.sentRef,
      documentId,
      idx,
      fileId,
      expiresAt,
    });
    const query = new URLSearchParams({ pt: scope.sentRef, link }).toString();
    return `${this.#deps.publicUrl}/mr/api/v1/docs/${encodeURIComponent(documentId)}/files/${idx}${what}?${query}`;
  }

  async #event(
    trx: Db,
    scope: PatientScope,
    type: 'document.created' | 'document.updated' | 'document.deleted',
    id: string,
    changed?: string[],
    current?: { row: DocumentsTable; files: DocumentFilesTable[] },
  ): Promise<void> {
    const row = current?.row ?? (await repo.findDocument(trx, scope.businessId, id));
    if (!row) return;
    const files = current?.files ?? (await repo.filesOf(trx, scope.businessId, [id]));
    const ref = { document_id: id, patient_id: scope.patientRef, status: row.status as 'A' | 'D', updated_at: seconds(row.updated_at) };
    const item = {
      document_type: row.dt ?? '',
      document_date: row.document_date === null ? null : seconds(row.document_date),
      tags: jsonList(row.tags),
      title: row.title,
      cases: jsonList(row.cases),
      upload_date: seconds(row.created_at),
      files: files.map((file) => ({ content_type: file.content_type, size: Number(file.size ?? 0) })),
    };
    await recordEvent(trx, {
      businessId: scope.businessId,
      orderingKey: patientKey(scope.patientRef),
      type,
      payload: {
        service: 'document',
        ...envelope(type, scope, Date.now()),
        data: type === 'document.deleted' ? ref : { ...ref, item, ...(changed && { changed }) },
      } as EventInput<typeof type>,
    });
  }

  /** Runs a write of the patient's documents under the patient's lock, with its updated_at (ms). */
  #write<T>(scope: PatientScope, work: (trx: Db, updatedAt: number) => Promise<T>): Promise<T> {
    return inTransaction(this.#db, async (trx) => {
      await this.#deps.patients.lockRecords(trx, scope.businessId, scope.patientRef, 'write');
      const updatedAt = await repo.stampWrite(trx, this.#deps.dialect, scope.businessId, scope.patientRef);
      return work(trx, updatedAt);
    });
  }
}

/** A document as Eka's listing shows it (`items[].record.item`); a tombstone names only itself. */
function listItem(row: DocumentsTable, thumbnail: string | null): Record<string, unknown> {
  if (row.status === 'D') return { document_id: row.id, patient_id: row.patient_ref };
  return {
    document_id: row.id,
    patient_id: row.patient_ref,
    upload_date: seconds(row.created_at),
    document_type: row.dt ?? '',
    cases: jsonList(row.cases),
    metadata: {
      thumbnail,
      document_date: row.document_date === null ? null : seconds(row.document_date),
      tags: jsonList(row.tags),
      auto_tags: [],
      title: row.title,
      abha: null,
    },
  };
}
