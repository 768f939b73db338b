/**
 * Patient cases and their incremental sync (contract 6, interface 2.10 and 4.6).
 *
 * Cases are kept per (business, patient_ref), patient_ref being the X-Pt-Id as sent. The listing is
 * ordered by (updated_at, id), updated_at in whole epoch seconds as the API shows it, and paged by
 * keyset: a page token holds the (updated_at, id) of the last case handed out, so every page is one
 * index range scan however deep it is.
 *
 * The sync guarantee (a client that read to the last page and then lists with u_at__gt = the largest
 * updated_at it saw misses no later create, update or delete, across server processes and with many
 * writes in one second) rests on one invariant: a listing hands out only seconds that are over, and
 * every write that is not yet visible to it will get an updated_at in a later second. Three rules:
 *
 * 1. A write takes the patient's lock (PostgreSQL: pg_advisory_xact_lock, held until commit), and
 *    only then reads the clock: its updated_at is the start of the current second, and never below
 *    the patient's latest updated_at, so the order of a patient's writes survives a clock step back.
 *    (A step back between a listing and a later write could still break rule 2; clocks kept by NTP
 *    slew rather than step.)
 * 2. A listing first takes the same lock in shared mode. That waits for the patient's writes in
 *    flight to commit, and holds new ones back until the listing ends; then, with the lock held, it
 *    reads the clock and returns only cases whose second is before the current one. Any write not
 *    visible to it will read the clock later, so it lands in the current second or a later one,
 *    both above everything this listing returned. (The lock is advisory so that a listing stays a
 *    read-only transaction; a row lock would cost a transaction id and a WAL flush per page.)
 * 3. On PostgreSQL the clock is the database's (clock_timestamp()), one clock for all server
 *    processes, so skew between application hosts does not matter. On SQLite one process owns the
 *    database and runs one transaction at a time, so the process clock serves.
 *
 * Hence a second, once listed, never gains rows: u_at__gt = S (keep updated_at > S, i.e. seconds
 * from S+1) loses nothing, and new writes always sort after a page cursor, so paging never skips.
 * The price is the contract's allowed visibility delay: a write is listed once its second is over
 * (at most 1 s, plus waiting for the patient's lock). GET of one case sees it at once.
 * Deletes are tombstones (status D, item cleared) that take a new updated_at like any write.
 * A page token continues the walk it was made for: u_at__gt may be repeated or left out, not changed.
 */
import type { Kysely } from 'kysely';
import { inTransaction, isUniqueViolation, type Db, type DialectName } from '../../db/index.ts';
import type { CasesTable, Database } from '../../db/schema.ts';
import { AppError } from '../../errors.ts';
import type { PatientService } from '../patients/service.ts';
import { CursorCodec } from './cursor.ts';
import * as repo from './repo.ts';
import { patientKey, recordEvent } from '../../jobs/outbox.ts';
import { envelope, type EventInput } from '../../events.ts';

export const HI_TYPES = [
  'OPConsultation',
  'Prescription',
  'DischargeSummary',
  'DiagnosticReport',
  'ImmunizationRecord',
  'HealthDocumentRecord',
  'WellnessRecord',
] as const;

export type HiType = (typeof HI_TYPES)[number];

export interface NewCase {
  id: string;
  display_name: string;
  occurred_at: number;
  type?: string;
  hi_type?: HiType;
  partner_meta?: Record<string, unknown>;
}

export interface CaseChanges {
  display_name?: string;
  occurred_at?: number;
  /** null clears it. */
  type?: string | null;
  hi_type?: HiType | null;
  partner_meta?: Record<string, unknown>;
}

export interface CaseItem {
  display_name: string;
  type?: string;
  hi_type?: string;
  partner_meta: Record<string, unknown>;
  created_at: number;
  occurred_at: number;
}

export interface CaseView {
  id: string;
  status: string;
  updated_at: number;
  /** Omitted on tombstones. */
  item?: CaseItem;
}

export interface CasePage {
  cases: CaseView[];
  next_token: string | null;
}

export interface ListOptions {
  /** The previous page's next_token. */
  offset?: string;
  /** u_at__gt, epoch seconds. */
  updatedAfter?: number;
}

/** Who the request is for: the caller's business and the X-Pt-Id. */
export interface PatientScope {
  businessId: string;
  patientRef: string;
  /** The API client making the request: the events of its changes name it. */
  clientId?: string;
}

const NOT_FOUND = () => new AppError(404, 'No case found with the given ID.', { code: 'NOT_FOUND' });
const EXISTS = () => new AppError(409, 'Case already exists', { code: 'CONFLICT' });
const BAD_TOKEN = () =>
  AppError.badRequest('offset: is not a valid page token for this patient and filter', {
    offset: ['is not a valid page token for this patient and filter'],
  });

const seconds = (ms: number) => Math.floor(ms / 1000);

export function toView(row: CasesTable): CaseView {
  const view: CaseView = { id: row.id, status: row.status, updated_at: seconds(row.updated_at) };
  if (row.status === 'D') return view;
  view.item = {
    display_name: row.display_name ?? '',
    ...(row.type !== null ? { type: row.type } : {}),
    ...(row.hi_type !== null ? { hi_type: row.hi_type } : {}),
    partner_meta: row.partner_meta ? (JSON.parse(row.partner_meta) as Record<string, unknown>) : {},
    created_at: seconds(row.created_at),
    occurred_at: seconds(row.occurred_at ?? 0),
  };
  return view;
}

export interface CasesServiceDeps {
  db: Kysely<Database>;
  dialect: DialectName;
  /** Seals the page tokens (cursor.ts derives their key from it). */
  masterKey: Buffer;
  /** CPS_CASES_PAGE_SIZE. */
  pageSize: number;
  patients: PatientService;
}

export class CasesService {
  readonly #deps: CasesServiceDeps;
  readonly #codec: CursorCodec;

  constructor(deps: CasesServiceDeps) {
    this.#deps = deps;
    this.#codec = new CursorCodec(deps.masterKey);
  }

  get #db() {
    return this.#deps.db;
  }

  get #dialect() {
    return this.#deps.dialect;
  }

  /** The scope of a request naming the patient `patientId` (X-Pt-Id) by either of its ids. */
  async patientScope(businessId: string, patientId: string, clientId?: string): Promise<PatientScope> {
    return { businessId, patientRef: await this.#deps.patients.canonicalRef(businessId, patientId), clientId };
  }

  async list(scope: PatientScope, options: ListOptions = {}): Promise<CasePage> {
    const { businessId, patientRef } = scope;
    let after: repo.PageQuery['after'] = null;
    let updatedAfter = options.updatedAfter ?? null;
    if (options.offset) {
      const cursor = this.#codec.open(options.offset, businessId, patientRef);
      // A token continues the walk it was made for: u_at__gt may be repeated, not changed.
      if (!cursor || (options.updatedAfter !== undefined && options.updatedAfter !== cursor.updatedAfter)) throw BAD_TOKEN();
      after = { updatedAt: cursor.updatedAt, id: cursor.id };
      updatedAfter = cursor.updatedAfter;
    }
    const pageSize = this.#deps.pageSize;
    const rows = await inTransaction(this.#db, async (trx) => {
      await this.#deps.patients.lockRecords(trx, businessId, patientRef, 'listing');
      return repo.listPage(trx, this.#dialect, {
        businessId,
        patientRef,
        after,
        updatedFrom: updatedAfter === null ? null : (updatedAfter + 1) * 1000,
        limit: pageSize + 1,
      });
    });
    const page = rows.slice(0, pageSize);
    const last = page.at(-1);
    const nextToken =
      rows.length > pageSize && last ? this.#codec.seal({ updatedAt: last.updated_at, id: last.id, updatedAfter }, businessId, patientRef) : null;
    return { cases: page.map(toView), next_token: nextToken };
  }

  async get(scope: PatientScope, id: string): Promise<CaseView> {
    const row = await repo.findCase(this.#db, scope.businessId, scope.patientRef, id);
    if (!row || row.status === 'D') throw NOT_FOUND();
    return toView(row);
  }

  async create(scope: PatientScope, input: NewCase): Promise<{ id: string }> {
    try {
      await this.#write(scope, async (trx, updatedAt) => {
        if (await repo.findCase(trx, scope.businessId, scope.patientRef, input.id)) throw EXISTS();
        await repo.insertCase(trx, {
          business_id: scope.businessId,
          patient_ref: scope.patientRef,
          id: input.id,
          status: 'A',
          display_name: input.display_name,
          type: input.type ?? null,
          hi_type: input.hi_type ?? null,
          partner_meta: JSON.stringify(input.partner_meta ?? {}),
          occurred_at: input.occurred_at * 1000,
          // The clock that stamps updated_at (the database's on PostgreSQL), so created_at <= updated_at.
          created_at: updatedAt,
          updated_at: updatedAt,
        });
        await this.#event(trx, scope, 'case.created', input.id);
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw EXISTS();
      throw error;
    }
    return { id: input.id };
  }

  async update(scope: PatientScope, id: string, changes: CaseChanges): Promise<void> {
    const set: repo.CaseChanges = {};
    if (changes.display_name !== undefined) set.display_name = changes.display_name;
    if (changes.occurred_at !== undefined) set.occurred_at = changes.occurred_at * 1000;
    if (changes.type !== undefined) set.type = changes.type;
    if (changes.hi_type !== undefined) set.hi_type = changes.hi_type;
    if (changes.partner_meta !== undefined) set.partner_meta = JSON.stringify(changes.partner_meta);
    if (Object.keys(set).length === 0) {
      throw AppError.badRequest('The update names no field: send display_name, occurred_at, type, hi_type or partner_meta.');
    }
    await this.#write(scope, async (trx, updatedAt) => {
      const row = await repo.findCase(trx, scope.businessId, scope.patientRef, id);
      if (!row || row.status === 'D') throw NOT_FOUND();
      await repo.updateCase(trx, scope.businessId, scope.patientRef, id, { ...set, updated_at: updatedAt });
      await this.#event(
        trx,
        scope,
        'case.updated',
        id,
        Object.keys(changes).filter((field) => changes[field as keyof CaseChanges] !== undefined),
      );
    });
  }

  /** Leaves a tombstone: status D, the item's data cleared, a new updated_at so that syncs see it. */
  async delete(scope: PatientScope, id: string): Promise<void> {
    await this.#write(scope, async (trx, updatedAt) => {
      const row = await repo.findCase(trx, scope.businessId, scope.patientRef, id);
      if (!row || row.status === 'D') throw NOT_FOUND();
      await repo.updateCase(trx, scope.businessId, scope.patientRef, id, {
        status: 'D',
        display_name: null,
        type: null,
        hi_type: null,
        partner_meta: null,
        occurred_at: null,
        updated_at: updatedAt,
      });
      await this.#event(trx, scope, 'case.deleted', id);
    });
  }

  /**
   * Records a case event with the case as the write left it, as the listing shows it (no other
   * content), in the write's transaction; the patient's lock, held, orders the patient's events.
   */
  async #event(trx: Db, scope: PatientScope, type: 'case.created' | 'case.updated' | 'case.deleted', id: string, changed?: string[]): Promise<void> {
    const row = await repo.findCase(trx, scope.businessId, scope.patientRef, id);
    if (!row) return;
    const view = toView(row);
    await recordEvent(trx, {
      businessId: scope.businessId,
      orderingKey: patientKey(scope.patientRef),
      type,
      payload: {
        service: 'case',
        ...envelope(type, scope, Date.now()),
        data: {
          case_id: view.id,
          patient_id: scope.patientRef,
          status: view.status as 'A' | 'D',
          updated_at: view.updated_at,
          ...(view.item && type !== 'case.deleted' && { item: view.item }),
          ...(changed && { changed }),
        },
      } as EventInput<typeof type>,
    });
  }

  /** Runs a write of the patient's cases under the patient's lock, with its updated_at (ms). */
  #write(scope: PatientScope, work: (trx: Db, updatedAt: number) => Promise<void>): Promise<void> {
    return inTransaction(this.#db, async (trx) => {
      await this.#deps.patients.lockRecords(trx, scope.businessId, scope.patientRef, 'write');
      const updatedAt = await repo.stampWrite(trx, this.#dialect, scope.businessId, scope.patientRef);
      await work(trx, updatedAt);
    });
  }
}
