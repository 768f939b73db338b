/**
 * What other modules (cases, push devices) need of patients: they name a patient by either the
 * service's id or the partner's, and keep their records under one key.
 */
import type { Db } from '../../db/index.ts';
import { findPatientByAnyId } from './repo.ts';

/**
 * The one key under which records that name a patient by either id (cases' X-Pt-Id, push devices)
 * are kept: a known patient's partner id, or its service id when it has none; an id the business does
 * not know is kept as given, so records can arrive before the patient's first appointment.
 */
export async function canonicalPatientRef(db: Db, businessId: string, id: string): Promise<string> {
  const patient = await findPatientByAnyId(db, businessId, id);
  return patient ? (patient.partner_patient_id ?? patient.id) : id;
}
