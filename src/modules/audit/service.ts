/** Reading the access log: a business its own entries, the operator any business's (docs/4-operations.md "Audit log"). */
import type { Kysely } from 'kysely';
import type { AccessLogTable, Database } from '../../db/schema.ts';
import { AppError } from '../../errors.ts';
import { verifyChains, type ChainCheck, type ChainReport } from '../../access-log/verify.ts';
import type { PatientService } from '../patients/service.ts';
import { PositionCodec, type Position } from './cursor.ts';
import * as repo from './repo.ts';

export interface AuditServiceDeps {
  db: Kysely<Database>;
  masterKey: Buffer;
  patients: PatientService;
  /** What `cps audit verify` checks the chains' ends with: the same check for the admin API. */
  chainCheck: ChainCheck;
}

export interface EventQuery {
  patient_id?: string;
  client_id?: string;
  resource_type?: string;
  resource_id?: string;
  /** Epoch seconds, inclusive. */
  from?: number;
  /** Epoch seconds, exclusive. */
  to?: number;
  offset?: string;
  limit?: number;
}

/** An entry as the reading API answers it: chained, its filter parsed. */
export type AuditEvent = Omit<AccessLogTable, 'seq' | 'prev_hash' | 'hash' | 'filter' | 'with_change'> & {
  seq: number;
  prev_hash: string;
  hash: string;
  filter: Record<string, unknown> | null;
  with_change: boolean;
};

export const DEFAULT_PAGE = 50;

export class AuditService {
  readonly #deps: AuditServiceDeps;
  readonly #cursors: PositionCodec;

  constructor(deps: AuditServiceDeps) {
    this.#deps = deps;
    this.#cursors = new PositionCodec(deps.masterKey);
  }

  /** `cps audit verify`'s verdict: every business's chain, or one's (404 for a business the log never knew). */
  async verify(businessId?: string): Promise<{ ok: boolean; chains: ChainReport[] }> {
    const chains = await verifyChains(this.#deps.db, this.#deps.chainCheck, businessId);
    return { ok: chains.every((chain) => chain.ok), chains };
  }

  /** A page of entries of one business, or of every business when businessId is null (the operator). */
  async list(businessId: string | null, query: EventQuery): Promise<{ events: AuditEvent[]; next_token: string | null }> {
    const walk = JSON.stringify([businessId, query.patient_id, query.client_id, query.resource_type, query.resource_id, query.from, query.to]);
    let after: Position | null = null;
    if (query.offset !== undefined) {
      after = this.#cursors.open(query.offset, walk);
      if (!after) throw AppError.badRequest('offset is not a next_token of this listing', { offset: ['is not a next_token of this listing'] });
    }
    const filter: repo.EventFilter = {
      businessId,
      ...(query.patient_id !== undefined && { patientRefs: await this.#patientRefs(businessId, query.patient_id) }),
      ...(query.client_id !== undefined && { clientId: query.client_id }),
      ...(query.resource_type !== undefined && { resourceType: query.resource_type }),
      ...(query.resource_id !== undefined && { resourceId: query.resource_id }),
      ...(query.from !== undefined && { fromMs: query.from * 1000 }),
      ...(query.to !== undefined && { toMs: query.to * 1000 }),
    };
    const limit = query.limit ?? DEFAULT_PAGE;
    const rows = await repo.listEvents(this.#deps.db, filter, after, limit + 1);
    const more = rows.length > limit;
    const page = more ? rows.slice(0, limit) : rows;
    const last = page.at(-1);
    return {
      events: page.map(view),
      next_token: more && last ? this.#cursors.seal({ businessId: last.business_id, seq: last.seq }, walk) : null,
    };
  }

  /** The ids a patient goes by in a business (its own and the partner's), so entries naming either are found. */
  async #patientRefs(businessId: string | null, ref: string): Promise<string[]> {
    if (businessId === null) return [ref];
    try {
      const patient = await this.#deps.patients.get(businessId, ref, false, { archived: true });
      return [...new Set([ref, patient.id, ...(patient.partner_patient_id ? [patient.partner_patient_id] : [])])];
    } catch (error) {
      if (error instanceof AppError && error.problem.status === 404) return [ref];
      throw error;
    }
  }
}

function view(row: repo.EventRow): AuditEvent {
  return {
    id: row.id,
    business_id: row.business_id,
    seq: row.seq,
    at: row.at,
    client_id: row.client_id,
    operation: row.operation,
    action: row.action,
    resource_type: row.resource_type,
    resource_id: row.resource_id,
    patient_ref: row.patient_ref,
    status: row.status,
    request_id: row.request_id,
    source_address: row.source_address,
    filter: row.filter === null ? null : (JSON.parse(row.filter) as Record<string, unknown>),
    result_count: row.result_count,
    with_change: Number(row.with_change) === 1,
    prev_hash: row.prev_hash ?? '',
    hash: row.hash ?? '',
  };
}
