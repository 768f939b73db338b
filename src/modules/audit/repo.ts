/** SQL of the access log's reading API. */
import type { Db } from '../../db/index.ts';
import type { Selectable } from 'kysely';
import type { AccessLogTable } from '../../db/schema.ts';

export interface EventFilter {
  /** Null: every business (the operator). */
  businessId: string | null;
  /** The ids a patient goes by: entries naming any of them, as patient or as the patient record changed. */
  patientRefs?: string[];
  clientId?: string;
  resourceType?: string;
  resourceId?: string;
  fromMs?: number;
  toMs?: number;
}

export type EventRow = Omit<Selectable<AccessLogTable>, 'seq'> & { seq: number };

/** Chained entries in (business, seq) order after `after`. */
export async function listEvents(db: Db, filter: EventFilter, after: { businessId: string; seq: number } | null, limit: number): Promise<EventRow[]> {
  let query = db.selectFrom('access_log').selectAll().where('seq', 'is not', null);
  if (filter.businessId !== null) query = query.where('business_id', '=', filter.businessId);
  const refs = filter.patientRefs;
  if (refs && refs.length > 0) {
    query = query.where((eb) => eb.or([eb('patient_ref', 'in', refs), eb.and([eb('resource_type', '=', 'patient'), eb('resource_id', 'in', refs)])]));
  }
  if (filter.clientId !== undefined) query = query.where('client_id', '=', filter.clientId);
  if (filter.resourceType !== undefined) query = query.where('resource_type', '=', filter.resourceType);
  if (filter.resourceId !== undefined) query = query.where('resource_id', '=', filter.resourceId);
  if (filter.fromMs !== undefined) query = query.where('at', '>=', filter.fromMs);
  if (filter.toMs !== undefined) query = query.where('at', '<', filter.toMs);
  if (after) {
    const position = after;
    query = query.where((eb) =>
      eb.or([eb('business_id', '>', position.businessId), eb.and([eb('business_id', '=', position.businessId), eb('seq', '>', position.seq)])]),
    );
  }
  const rows = await query.orderBy('business_id').orderBy('seq').limit(limit).execute();
  return rows.map((row) => ({ ...row, seq: Number(row.seq), at: Number(row.at) }));
}

/** The entries naming the patient, as patient or as the patient record acted on, in chain order (the patient compartment's export). */
export async function entriesNaming(db: Db, businessId: string, refs: string[]): Promise<Selectable<AccessLogTable>[]> {
  if (refs.length === 0) return [];
  return db
    .selectFrom('access_log')
    .selectAll()
    .where('business_id', '=', businessId)
    .where((eb) => eb.or([eb('patient_ref', 'in', refs), eb.and([eb('resource_type', '=', 'patient'), eb('resource_id', 'in', refs)])]))
    .orderBy('seq')
    .orderBy('at')
    .execute();
}
