/**
 * Patients, kept per business and matched by the partner's `partner_patient_id`. Other modules reach
 * them here: appointments create and update them inside the appointment's transaction (the methods
 * that take `trx` run in the caller's), and cases and push devices name a patient by either id.
 */
import type { Kysely } from 'kysely';
import type { Db } from '../../db/index.ts';
import { newId } from '../../db/ids.ts';
import type { Database } from '../../db/schema.ts';
import * as repo from './repo.ts';
import type { PatientDetails } from './repo.ts';

export type { PatientDetails } from './repo.ts';

export interface PatientServiceDeps {
  db: Kysely<Database>;
}

/** A patient as an appointment names it: its id, and the details the appointment keeps. */
export interface PatientChoice {
  id: string;
  details: PatientDetails;
}

/** A patient row the caller has read locked (on PostgreSQL) in its transaction. */
export interface LockedPatient {
  id: string;
  partner_patient_id: string | null;
  /** The stored details, JSON. */
  details: string;
}

/** The fields of interface 2.7, plus age. */
export const PATIENT_FIELDS = [
  'designation',
  'first_name',
  'middle_name',
  'last_name',
  'mobile',
  'gender',
  'dob',
  'age',
  'address',
  'partner_patient_id',
] as const;

/** Only the fields of interface 2.7 (plus age) are kept; setting dob clears age and vice versa. */
function mergeDetails(current: PatientDetails, changes: PatientDetails): PatientDetails {
  const next: PatientDetails = { ...current };
  for (const field of PATIENT_FIELDS) {
    const value = changes[field];
    if (value === undefined) continue;
    if (field === 'address') {
      const address = value as NonNullable<PatientDetails['address']>;
      next.address = { ...current.address };
      if (address.city !== undefined) next.address.city = address.city;
      if (address.pincode !== undefined) next.address.pincode = address.pincode;
    } else {
      (next as Record<string, unknown>)[field] = value;
    }
  }
  if (changes.dob !== undefined) delete next.age;
  if (changes.age !== undefined) delete next.dob;
  return next;
}

export class PatientService {
  readonly #deps: PatientServiceDeps;

  constructor(deps: PatientServiceDeps) {
    this.#deps = deps;
  }

  /**
   * The one key under which records that name a patient by either id (cases' X-Pt-Id, push devices)
   * are kept: a known patient's partner id, or its service id when it has none; an id the business does
   * not know is kept as given, so records can arrive before the patient's first appointment.
   */
  async canonicalRef(businessId: string, id: string): Promise<string> {
    const patient = await repo.findPatientByAnyId(this.#deps.db, businessId, id);
    return patient ? (patient.partner_patient_id ?? patient.id) : id;
  }

  /** A booking's patient: the business's patient matched by partner_patient_id (or a new one), with `sent` applied. */
  async forBooking(trx: Db, businessId: string, sent: PatientDetails): Promise<PatientChoice> {
    const now = Date.now();
    const details = mergeDetails({}, sent);
    const id = newId('pt');
    const row = {
      id,
      business_id: businessId,
      partner_patient_id: sent.partner_patient_id ?? null,
      details: JSON.stringify(details),
      created_at: now,
      updated_at: now,
    };
    if (sent.partner_patient_id === undefined) {
      await repo.insertPatient(trx, row);
      return { id, details };
    }
    const patient = await repo.upsertByPartnerId(trx, row);
    if (patient.id === id) return { id, details };
    const merged = mergeDetails(JSON.parse(patient.details) as PatientDetails, sent);
    await repo.updatePatientDetails(trx, businessId, patient.id, merged);
    return { id: patient.id, details: merged };
  }

  /**
   * An appointment's patient after an update sent `sent`: `locked`, the appointment's patient as the
   * caller read it locked in this transaction, or another one when a new partner_patient_id names it.
   * `known` is what the appointment knew of its patient; the answer's details are what it keeps from
   * now on.
   */
  async forUpdate(
    trx: Db,
    businessId: string,
    locked: LockedPatient,
    known: PatientDetails,
    sent: PatientDetails,
  ): Promise<PatientChoice & { partner_patient_id: string | null }> {
    let patient: LockedPatient = locked;
    const details = mergeDetails(known, sent);
    const moved = sent.partner_patient_id !== undefined && sent.partner_patient_id !== patient.partner_patient_id;
    if (moved && patient.partner_patient_id === null && !(await repo.findByPartnerId(trx, businessId, sent.partner_patient_id!))) {
      // A patient booked without a partner id takes the one now sent.
      await repo.setPartnerId(trx, businessId, patient.id, sent.partner_patient_id!);
      patient = { ...patient, partner_patient_id: sent.partner_patient_id! };
    } else if (moved) {
      // Another partner id is another patient of the business: the appointment moves to it, and a
      // patient record created now starts from the appointment's details.
      const now = Date.now();
      const row = {
        id: newId('pt'),
        business_id: businessId,
        partner_patient_id: sent.partner_patient_id!,
        details: JSON.stringify(details),
        created_at: now,
        updated_at: now,
      };
      patient = await repo.upsertByPartnerId(trx, row);
      if (patient.id === row.id) return { id: patient.id, partner_patient_id: patient.partner_patient_id, details };
    }
    // The appointment keeps what it knew and takes the fields sent, whichever patient it now has.
    const stored = JSON.parse(patient.details) as PatientDetails;
    await repo.updatePatientDetails(trx, businessId, patient.id, Object.keys(stored).length === 0 ? details : mergeDetails(stored, sent));
    return { id: patient.id, partner_patient_id: patient.partner_patient_id, details };
  }
}
