/**
 * A patient's rights (docs/4-operations.md "Export and erasure"): a copy of everything the business holds about a
 * patient, built by a background job and fetched with an expiring link; and erasure, which removes or
 * irreversibly anonymises it in one transaction, records `patient.erased` and leaves the access log's
 * entry of the request as the proof.
 */
import { envelope } from '../../events.ts';
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import { parsedJson, type PatientCompartment, type PatientScope } from '../../compartment.ts';
import type { Principal } from '../../auth/principal.ts';
import { inRetriedTransaction, inTransaction, truncateWriteAheadLog, type Db, type DialectName } from '../../db/index.ts';
import { newId } from '../../db/ids.ts';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../errors.ts';
import { eventsAbout, recordEvent, replaceEventPayload } from '../../jobs/outbox.ts';
import { enqueue } from '../../jobs/queue-repo.ts';
import { decrypt, encrypt } from '../../security/encryption.ts';
import type { IdempotencyService } from '../idempotency/service.ts';
import { addressOf, extrasOf, type PatientRow, type PatientService } from '../patients/service.ts';
import { appendErasureRecord, readErasureRecord } from './erasure-record.ts';
import { exportText, parseStoredExport, storedExport } from './export-text.ts';
import * as repo from './repo.ts';

export const EXPORT_JOB = 'privacy.export';
export const EXPORT_FORMAT = 'opencps.patient-export.v1';

export interface PrivacyServiceDeps {
  db: Kysely<Database>;
  /** SQLite's write-ahead log is truncated after an erasure, so that no copy of the erased pages stays in it. */
  dialect: DialectName;
  /** Export documents are encrypted with it; the links' key and the erased partner ids' digests derive from it. */
  masterKey: Buffer;
  /** CPS_PUBLIC_URL: the links' origin. */
  publicUrl: string;
  /** Seconds an export lasts once ready (CPS_PRIVACY_EXPORT_TTL). */
  exportTtlSeconds: number;
  patients: PatientService;
  idempotency: IdempotencyService;
  /** Every module's rows about a patient: exported and erased by walking it. */
  compartment: PatientCompartment;
  /** CPS_DATA_DIR: the erasure record (erasure-record.ts) lives there, outside the database. */
  dataDir: string;
}

/** What re-applying the erasure record did (cps restore, cps privacy reapply-erasures). */
export interface ReappliedErasures {
  /** Lines in the record. */
  records: number;
  /** Patients the database held unerased, erased again. */
  re_erased: Array<{ business_id: string; patient_id: string; erased_at_first: number }>;
  /** Lines written under another master key: their digests cannot be matched (docs/4-operations.md "Rotating the master key"). */
  other_key: number;
}

export interface ExportView {
  export_id: string;
  patient_id: string;
  status: 'pending' | 'ready' | 'failed' | 'expired';
  /** Epoch seconds. */
  created_at: number;
  ready_at: number | null;
  expires_at: number;
  /** Set while ready: the document, for this business's API clients, until expires_at. */
  download_url: string | null;
}

export interface ErasureView {
  patient_id: string;
  status: 'erased';
  /** Epoch seconds. */
  erased_at: number;
}

const seconds = (ms: number) => Math.floor(Number(ms) / 1000);

function patientNotFound(): AppError {
  return new AppError(404, 'No patient found with the provided id belonging to this business', { code: 'PATIENTS_NOT_FOUND' });
}

function exportNotFound(): AppError {
  return AppError.notFound('No export found with the provided id belonging to this business');
}

/** A patient record with its JSON columns parsed: all the row holds. */
function patientRecord(row: PatientRow): Record<string, unknown> {
  const { business_id: _business, erased_ref: _ref, ...rest } = row;
  return { ...rest, address: addressOf(row) ?? null, extras: extrasOf(row) };
}

/** The JSON strings that would name the person in a stored answer: ids (theirs and their rows'), name parts, the number in its forms. */
function needlesOf(rows: PatientRow[], rowIds: string[]): string[] {
  const values = new Set<string>(rowIds);
  for (const row of rows) {
    values.add(row.id);
    for (const value of [row.partner_patient_id, row.first_name, row.middle_name, row.last_name, row.email, row.abha_number, row.abha_address]) {
      if (value) values.add(value);
    }
    if (row.mobile) {
      values.add(row.mobile);
      values.add(row.mobile.replace(/^\+91/, ''));
    }
  }
  // As JSON strings, quotes included, so that a short value does not match inside another.
  return [...values].filter((value) => value.length >= 2).map((value) => JSON.stringify(value).slice(0, -1));
}

/** An event's body with what it said of the person removed: a case's or a document's item, an appointment's free-form fields. */
function redacted(type: string, payload: string): string | null {
  const body = parsedJson(payload) as { data?: Record<string, unknown> } | null;
  const data = body?.data;
  if (!data || typeof data !== 'object') return null;
  if (type.startsWith('case.') && data.item && typeof data.item === 'object') {
    const item = data.item as Record<string, unknown>;
    data.item = { display_name: '', partner_meta: {}, created_at: item.created_at ?? 0, occurred_at: item.occurred_at ?? 0 };
    return JSON.stringify(body);
  }
  if (type.startsWith('document.') && data.item && typeof data.item === 'object') {
    const item = data.item as Record<string, unknown>;
    data.item = { ...item, document_type: '', document_date: null, tags: [], title: null, cases: [] };
    return JSON.stringify(body);
  }
  if (type.startsWith('appointment.')) {
    data.partner_meta = {};
    data.custom_attributes = {};
    return JSON.stringify(body);
  }
  return null;
}

export class PrivacyService {
  readonly #deps: PrivacyServiceDeps;
  readonly #linkKey: Buffer;
  readonly #refKey: Buffer;

  constructor(deps: PrivacyServiceDeps) {
    this.#deps = deps;
    this.#linkKey = Buffer.from(hkdfSync('sha256', deps.masterKey, Buffer.alloc(0), 'privacy-export-link', 32));
    this.#refKey = Buffer.from(hkdfSync('sha256', deps.masterKey, Buffer.alloc(0), 'privacy-erased-ref', 32));
  }

  /* ---- export ---- */

  /**
   * Asks for a patient's export: 202 with the export pending (its job queued in this transaction), or
   * the patient's export already pending or ready and not expired (a second request adds nothing).
   */
  async requestExport(principal: Principal, patientId: string, byPartner: boolean): Promise<ExportView> {
    const { businessId } = principal;
    return inTransaction(this.#deps.db, async (trx) => {
      const subject = await this.#deps.patients.subject(trx, businessId, patientId, byPartner);
      if (!subject) throw patientNotFound();
      // Two requests for one patient wait for each other here (PostgreSQL), so the second finds the first's export.
      await this.#deps.patients.lockRecords(trx, businessId, `privacy-export:${subject.patient.id}`, 'write');
      const now = Date.now();
      const live = await repo.findLiveExport(trx, businessId, subject.patient.id, now);
      if (live) return this.#view(live, now);
      const row = {
        id: newId('exp'),
        business_id: businessId,
        patient_id: subject.patient.id,
        client_id: principal.clientId,
        status: 'pending' as const,
        document: null,
        created_at: now,
        ready_at: null,
        // A pending export the job never finished is given up with it.
        expires_at: now + this.#deps.exportTtlSeconds * 1000,
        downloaded_at: null,
      };
      await repo.insertExport(trx, row);
      await enqueue(trx, { kind: EXPORT_JOB, businessId, payload: { exportId: row.id }, dedupeKey: row.id });
      return this.#view(row, now);
    });
  }

  /**
   * The operator's export from the command line (cps patient export): asked, built and read at once, with
   * the rows and document the API's export has.
   */
  async exportNow(principal: Principal, patientId: string, byPartner: boolean): Promise<AsyncIterable<Buffer>> {
    const asked = await this.requestExport(principal, patientId, byPartner);
    await this.buildExport(asked.export_id);
    return this.download(principal.businessId, asked.export_id, this.#token(principal.businessId, asked.export_id));
  }

  /** The job: builds the document, encrypts it, and makes the export ready for exportTtlSeconds. */
  async buildExport(exportId: string): Promise<void> {
    const db = this.#deps.db;
    const row = await repo.findExportById(db, exportId);
    if (row?.status !== 'pending') return;
    const document = await this.#document(row.business_id, row.patient_id, exportId);
    if (document === null) {
      await repo.failExport(db, exportId);
      return;
    }
    const now = Date.now();
    const sealed = encrypt(this.#deps.masterKey, JSON.stringify(storedExport(document)), sealedUnder(row.business_id, exportId));
    await repo.completeExport(db, exportId, sealed, now, now + this.#deps.exportTtlSeconds * 1000);
  }

  /** A pending export whose job failed for good is failed (a new request makes another). */
  async failExport(db: Db, exportId: string): Promise<void> {
    await repo.failExport(db, exportId);
  }

  async exportStatus(businessId: string, exportId: string): Promise<ExportView> {
    const row = await repo.findExport(this.#deps.db, businessId, exportId);
    if (!row) throw exportNotFound();
    return this.#view(row, Date.now());
  }

  /**
   * The document of a ready export, for the business that asked, with the link's token: an unknown
   * export, another business's or a wrong token answers 404; a pending one 409; an expired one 410.
   */
  async download(businessId: string, exportId: string, token: string): Promise<AsyncIterable<Buffer>> {
    const row = await repo.findExport(this.#deps.db, businessId, exportId);
    if (!row || !this.#tokenMatches(businessId, row.id, token)) throw exportNotFound();
    const now = Date.now();
    if (Number(row.expires_at) <= now) throw new AppError(410, 'The export expired: ask for a new one', { code: 'EXPORT_EXPIRED' });
    if (row.status !== 'ready' || row.document === null) {
      throw new AppError(409, `The export is ${row.status}, not ready`, { code: 'EXPORT_NOT_READY' });
    }
    const stored = parseStoredExport(decrypt(this.#deps.masterKey, row.document, sealedUnder(businessId, exportId)));
    await repo.markDownloaded(this.#deps.db, exportId, now);
    // Documents' files are read from their store as the text is sent (export-text.ts).
    return exportText(stored, (stream) => this.#deps.compartment.openExportStream(this.#deps.db, businessId, stream));
  }

  #view(row: repo.ExportRow, now: number): ExportView {
    const expiresAt = Number(row.expires_at);
    const expired = expiresAt <= now;
    const status = expired && row.status !== 'failed' ? 'expired' : row.status;
    return {
      export_id: row.id,
      patient_id: row.patient_id,
      status,
      created_at: seconds(row.created_at),
      ready_at: row.ready_at === null ? null : seconds(row.ready_at),
      expires_at: seconds(expiresAt),
      download_url:
        status === 'ready'
          ? `${this.#deps.publicUrl.replace(/\/$/, '')}/privacy/v1/exports/${encodeURIComponent(row.id)}/download?token=${this.#token(row.business_id, row.id)}`
          : null,
    };
  }

  /** The link's token: a MAC of the business and the export (nothing stored); the export's row says until when it works. */
  #token(businessId: string, exportId: string): string {
    return createHmac('sha256', this.#linkKey).update(`${businessId}\n${exportId}`).digest('base64url');
  }

  #tokenMatches(businessId: string, exportId: string, token: string): boolean {
    const expected = Buffer.from(this.#token(businessId, exportId));
    const given = Buffer.from(token);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  /** Everything the business holds about the patient; null when it is no longer a live patient. */
  async #document(businessId: string, patientId: string, exportId: string): Promise<Record<string, unknown> | null> {
    const db = this.#deps.db;
    const subject = await this.#deps.patients.subject(db, businessId, patientId, false);
    if (!subject) return null;
    const rows = [subject.patient, ...subject.merged];
    const scope = scopeOf(businessId, rows);
    const references = await this.#deps.compartment.references(db, scope);
    const sections = await this.#deps.compartment.export(db, scope);
    const events = await eventsAbout(db, businessId, references.eventKeys, scope.refs);
    return {
      format: EXPORT_FORMAT,
      export_id: exportId,
      business_id: businessId,
      generated_at: seconds(Date.now()),
      patient: patientRecord(subject.patient),
      merged_patients: subject.merged.map(patientRecord),
      ...sections,
      events: events.map((row) => ({ id: row.id, type: row.type, created_at: row.created_at, body: parsedJson(row.payload) })),
    };
  }

  /* ---- erasure ---- */

  /**
   * Erases the patient (a merged duplicate's id names its survivor, and the survivor's duplicates go
   * with it) in one transaction under its locks. Erasing an erased patient answers the same.
   */
  async erase(principal: Principal, patientId: string, byPartner: boolean, record = true): Promise<ErasureView> {
    // The patients to lock, as far as known: a transaction that finds more once it holds its locks
    // starts again with them all, so that every lock is taken in the compartment's order.
    let known: string[] = [];
    let view: ErasureView;
    for (;;) {
      try {
        view = await inRetriedTransaction(this.#deps.db, (trx) => this.#erase(trx, principal, patientId, byPartner, known, record));
        break;
      } catch (error) {
        if (!(error instanceof LockSetGrew)) throw error;
        known = error.ids;
      }
    }
    // After the commit, and never failing the erasure that committed: a log left whole is overwritten as it restarts.
    await truncateWriteAheadLog(this.#deps.db, this.#deps.dialect).catch(() => false);
    return view;
  }

  async #erase(trx: Db, principal: Principal, patientId: string, byPartner: boolean, known: string[], record: boolean): Promise<ErasureView> {
    const { businessId } = principal;
    const patients = this.#deps.patients;
    const subject = await patients.subject(trx, businessId, patientId, byPartner);
    if (!subject) {
      const erased = await patients.erased(trx, businessId, patientId, byPartner, this.#erasedRef(patientId));
      if (!erased || erased.erased_at === null) throw patientNotFound();
      return { patient_id: erased.id, status: 'erased', erased_at: seconds(erased.erased_at) };
    }
    const ids = [...new Set([subject.patient.id, ...subject.merged.map((row) => row.id), ...known])];
    const locked = await patients.lockForErasure(trx, businessId, ids);
    // A merge that committed while this erasure waited for its locks: the survivor merged away, or patients merged into it.
    const survivorNow = locked.find((row) => row.id === subject.patient.id);
    const mergedNow = await patients.mergedInto(trx, businessId, subject.patient.id);
    const grown = [...(survivorNow?.merged_into ? [survivorNow.merged_into] : []), ...mergedNow.map((row) => row.id)].filter(
      (id) => !ids.includes(id),
    );
    if (grown.length > 0) throw new LockSetGrew([...ids, ...grown]);
    const members = new Set([subject.patient.id, ...mergedNow.map((row) => row.id)]);
    const rows = locked.filter((row) => members.has(row.id));
    const survivor = rows.find((row) => row.id === subject.patient.id)!;
    // Another erasure committed while this one waited for the locks.
    if (survivor.erased_at !== null) return { patient_id: survivor.id, status: 'erased', erased_at: seconds(survivor.erased_at) };
    const now = Date.now();
    const scope = scopeOf(businessId, rows);
    // Before the commit, so that no committed erasure lacks its line (see erasure-record.ts).
    if (record) {
      appendErasureRecord(this.#deps.dataDir, {
        business_id: businessId,
        client_id: principal.clientId,
        erased_at: now,
        patient_refs: rows.map((row) => this.#erasedRef(row.id)),
        partner_refs: rows.flatMap((row) => (row.partner_patient_id === null ? [] : [this.#erasedRef(row.partner_patient_id)])),
        key_check: this.#erasedRef(KEY_CHECK),
      });
    }
    const compartment = this.#deps.compartment;
    const references = await compartment.references(trx, scope);
    for (const event of await eventsAbout(trx, businessId, references.eventKeys, scope.refs)) {
      const payload = redacted(event.type, event.payload);
      if (payload !== null && payload !== event.payload) await replaceEventPayload(trx, event.id, payload);
    }
    await this.#deps.idempotency.forgetAnswersNaming(trx, businessId, needlesOf(rows, references.ids));
    await compartment.erase(trx, scope, now);
    for (const row of rows) {
      await patients.erase(trx, businessId, row.id, now, row.partner_patient_id === null ? null : this.#erasedRef(row.partner_patient_id));
    }
    await recordEvent(trx, {
      businessId,
      type: 'patient.erased',
      payload: {
        ...envelope('patient.erased', principal, now),
        data: {
          patient_id: survivor.id,
          partner_patient_id: survivor.partner_patient_id,
          merged_patient_ids: rows.filter((row) => row.id !== survivor.id).map((row) => row.id),
        },
      },
    });
    return { patient_id: survivor.id, status: 'erased', erased_at: seconds(now) };
  }

  /**
   * Erases again every patient the erasure record names that the database holds unerased: after a
   * restore of a copy older than the erasure. Patients are matched by service id only: a partner id may
   * have been given to a new patient after the erasure, and that patient is someone else.
   */
  async reapplyErasures(): Promise<ReappliedErasures> {
    const lines = readErasureRecord(this.#deps.dataDir);
    const check = this.#erasedRef(KEY_CHECK);
    const result: ReappliedErasures = { records: lines.length, re_erased: [], other_key: 0 };
    const byBusiness = new Map<string, Map<string, { clientId: string; erasedAt: number }>>();
    for (const line of lines) {
      if (line.key_check !== check) {
        result.other_key += 1;
        continue;
      }
      const refs = byBusiness.get(line.business_id) ?? new Map();
      for (const ref of line.patient_refs) refs.set(ref, { clientId: line.client_id, erasedAt: line.erased_at });
      byBusiness.set(line.business_id, refs);
    }
    for (const [businessId, refs] of byBusiness) {
      for (const patientId of await repo.unerasedPatientIds(this.#deps.db, businessId)) {
        const first = refs.get(this.#erasedRef(patientId));
        if (!first) continue;
        const principal = { businessId, clientId: first.clientId, scopes: new Set<string>() };
        // A merged duplicate's id erases its survivor and it; the survivor's turn then answers the same.
        await this.erase(principal, patientId, false, false);
        result.re_erased.push({ business_id: businessId, patient_id: patientId, erased_at_first: seconds(first.erasedAt) });
      }
    }
    return result;
  }

  /** A keyed digest of a partner's patient id: an erased patient is found again by it, and it names no one. */
  #erasedRef(partnerPatientId: string): string {
    return createHmac('sha256', this.#refKey).update(partnerPatientId).digest('base64url');
  }
}

/** What the erasure record's key check digests. */
const KEY_CHECK = 'opencps-erasure-record';

/** An erasure found more patients to lock once it held its locks: it starts again with all of them. */
class LockSetGrew extends Error {
  readonly ids: string[];
  constructor(ids: string[]) {
    super('more patients to lock');
    this.ids = ids;
  }
}

function sealedUnder(businessId: string, exportId: string): string {
  return `privacy-export:${businessId}:${exportId}`;
}

function scopeOf(businessId: string, rows: PatientRow[]): PatientScope {
  return {
    businessId,
    patientIds: rows.map((row) => row.id),
    refs: [...new Set(rows.flatMap((row) => [row.id, ...(row.partner_patient_id ? [row.partner_patient_id] : [])]))],
  };
}
