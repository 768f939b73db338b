/**
 * Patients: one record per person per business, matched by the partner's `partner_patient_id`
 * (Eka's profiles call it `username`). Appointments create and update them inside the appointment's
 * transaction (the methods that take `trx` run in the caller's); the patients routes serve them as
 * a resource in two families of paths (`/dr/v1/patient`, `/profiles/v1/patient`); cases and push
 * devices name a patient by either id through `canonicalRef`.
 */
import type { Static } from 'typebox';
import { envelope, type MergeMoved } from '../../events.ts';
import type { Kysely } from 'kysely';
import type { Principal } from '../../auth/principal.ts';
import type { PatientCompartment } from '../../compartment.ts';
import { inRetriedTransaction, inTransaction, isUniqueViolation, type Db } from '../../db/index.ts';
import { newId } from '../../db/ids.ts';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../errors.ts';
import { recordEvent } from '../../jobs/outbox.ts';
import { localDate, parseDate } from '../../time.ts';
import { PatientNameIndex, type SearchPage } from './name-index.ts';
import { nameTokens, scoreName } from './names.ts';
import * as repo from './repo.ts';
import type { PatientRow } from './repo.ts';

export type { PatientRow } from './repo.ts';

export interface PatientServiceDeps {
  db: Kysely<Database>;
  /** Every module's rows about a patient: a merge and a change of key move them by walking it. */
  compartment: PatientCompartment;
  /** CPS_TIMEZONE: the day a dob is checked against and an age is counted from (default Asia/Kolkata). */
  timezone?: string;
}

/** interface 2.7, with `age` as the other side of the DOB/AGE choice: what an appointment keeps. */
export interface PatientDetails {
  designation?: string;
  first_name?: string;
  middle_name?: string;
  last_name?: string;
  mobile?: string;
  gender?: 'M' | 'F' | 'O';
  dob?: string;
  age?: number;
  address?: { city?: string; pincode?: number };
  partner_patient_id?: string;
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

export interface Address {
  line1?: string;
  line2?: string;
  city?: string;
  state?: string;
  country?: string;
  pincode?: number;
}

const ADDRESS_FIELDS = ['line1', 'line2', 'city', 'state', 'country', 'pincode'] as const satisfies ReadonlyArray<keyof Address>;

/** A patient as both families write it, in the record's own names. */
export interface PatientInput {
  partner_patient_id?: string;
  designation?: string;
  first_name?: string;
  /** null clears it (a whole name sent in one piece). */
  middle_name?: string | null;
  last_name?: string | null;
  gender?: 'M' | 'F' | 'O';
  dob?: string;
  age?: number;
  mobile?: string;
  email?: string;
  blood_group?: string;
  address?: Address;
  abha_number?: string;
  abha_address?: string;
  /** Replaces the stored object. */
  extras?: Record<string, unknown>;
}

/** A patient as an appointment names it: its id, its partner id, and the details the appointment keeps. */
export interface PatientChoice {
  id: string;
  partner_patient_id: string | null;
  details: PatientDetails;
}

/** A patient row the caller has read locked (on PostgreSQL) in its transaction. */
export type LockedPatient = Omit<PatientRow, 'business_id' | 'created_at' | 'updated_at'>;

/** The columns of a locked patient beside its ids: what a caller reading it with another row selects. */
export const LOCKED_PATIENT_COLUMNS = [
  'designation',
  'first_name',
  'middle_name',
  'last_name',
  'gender',
  'dob',
  'age',
  'age_recorded_at',
  'mobile',
  'email',
  'blood_group',
  'address',
  'abha_number',
  'abha_address',
  'extras',
  'archived_at',
  'merged_into',
  'erased_at',
] as const satisfies ReadonlyArray<Exclude<keyof LockedPatient, 'id' | 'partner_patient_id'>>;

/** What a merge did: the survivor, the duplicate as it is now, and how many records moved. */
export interface MergeResult {
  patient: PatientRow;
  merged: PatientRow;
  moved: Static<typeof MergeMoved>;
}

/** Which patients a look-up answers. */
export interface Visibility {
  /** Archived patients too (Eka's `arc=true`). */
  archived: boolean;
}

const DEFAULT_TIMEZONE = 'Asia/Kolkata';

/** Service patient ids are `pt_` and a time-ordered random part (db/ids.ts). */
const PATIENT_ID_PREFIX = 'pt';

/** A 400 naming the field, in the family's body. */
export function invalid(field: string, message: string): AppError {
  return new AppError(400, `${field}: ${message}`, { code: 'INVALID_REQUEST' });
}

export function notFound(): AppError {
  return new AppError(404, 'No patient found with the provided id belonging to this business', { code: 'PATIENTS_NOT_FOUND' });
}

function mergedAway(survivorId: string): AppError {
  return new AppError(409, `The patient was merged into ${survivorId}: change that patient instead`, { code: 'PATIENT_MERGED' });
}

function alreadyExists(partnerPatientId: string): AppError {
  return new AppError(409, `Patient already exists with the same partner_patient_id: ${partnerPatientId}`, { code: 'PATIENT_ALREADY_EXISTS' });
}

/* ---- formats ---- */

/** Whole years from `from` to `to` (both YYYY-MM-DD). */
function yearsBetween(from: string, to: string): number {
  const years = Number(to.slice(0, 4)) - Number(from.slice(0, 4));
  return to.slice(5) < from.slice(5) ? years - 1 : years;
}

/**
 * A mobile number as stored: '+' and 7 to 15 digits with the country code. Ten digits are an Indian
 * number (+91), and so are eleven with a leading 0; spaces, dashes, dots and brackets are dropped.
 */
export function normaliseMobile(value: string): string | null {
  const compact = value.trim().replace(/[\s\-().]/g, '');
  if (/^\+\d{7,15}$/.test(compact)) return compact;
  if (/^\d{10}$/.test(compact)) return `+91${compact}`;
  if (/^0\d{10}$/.test(compact)) return `+91${compact.slice(1)}`;
  return null;
}

/** An ABHA number: 14 digits, sent with or without the dashes of XX-XXXX-XXXX-XXXX; stored as digits. */
export function normaliseAbhaNumber(value: string): string | null {
  const digits = value.trim().replace(/[\s-]/g, '');
  return /^\d{14}$/.test(digits) ? digits : null;
}

/**
 * An ABHA address: a handle of 8 to 18 letters and digits, with at most one '.' and one '_' (neither
 * first nor last), then '@abdm' (or '@sbx', the ABDM sandbox); stored in lower case.
 */
export function normaliseAbhaAddress(value: string): string | null {
  const address = value.trim().toLowerCase();
  const match = /^([a-z0-9._]{8,18})@(abdm|sbx)$/.exec(address);
  if (!match) return null;
  const handle = match[1]!;
  if (!/^[a-z0-9].*[a-z0-9]$/.test(handle)) return null;
  if ((handle.match(/\./g) ?? []).length > 1 || (handle.match(/_/g) ?? []).length > 1) return null;
  return address;
}

export const BLOOD_GROUPS = ['A+', 'A-', 'B+', 'B-', 'AB+', 'AB-', 'O+', 'O-'] as const;

/*
 * E.164 country codes are prefix-free: '1' and '7' are one digit, these are two, the rest three.
 * Enough to show a number as Eka's profiles do, country code (`ccd`) apart from the number.
 */
const TWO_DIGIT_CODES = new Set(
  '20 27 30 31 32 33 34 36 39 40 41 43 44 45 46 47 48 49 51 52 53 54 55 56 57 58 60 61 62 63 64 65 66 81 82 84 86 90 91 92 93 94 95 98'.split(' '),
);

export function splitMobile(mobile: string): { ccd: string; number: string } {
  const digits = mobile.slice(1);
  const length = digits[0] === '1' || digits[0] === '7' ? 1 : TWO_DIGIT_CODES.has(digits.slice(0, 2)) ? 2 : 3;
  return { ccd: `+${digits.slice(0, length)}`, number: digits.slice(length) };
}

/* ---- the record's views ---- */

/** The patient's age now: as given, plus the whole years since it was given. */
export function currentAge(row: Pick<PatientRow, 'age' | 'age_recorded_at' | 'dob'>, timeZone: string, now = Date.now()): number | undefined {
  const today = localDate(now, timeZone);
  if (row.dob !== null) return Math.max(0, yearsBetween(row.dob, today));
  if (row.age === null) return undefined;
  const recorded = row.age_recorded_at === null ? today : localDate(Number(row.age_recorded_at), timeZone);
  return Number(row.age) + Math.max(0, yearsBetween(recorded, today));
}

/** A date of birth: the one given, or, for an age, the day it was given that many years earlier. */
export function birthDate(row: Pick<PatientRow, 'age' | 'age_recorded_at' | 'dob'>, timeZone: string): string | undefined {
  if (row.dob !== null) return row.dob;
  if (row.age === null) return undefined;
  const recorded = localDate(row.age_recorded_at === null ? Date.now() : Number(row.age_recorded_at), timeZone);
  const year = Number(recorded.slice(0, 4)) - Number(row.age);
  const monthDay = recorded.slice(5) === '02-29' ? '02-28' : recorded.slice(5);
  return `${String(year).padStart(4, '0')}-${monthDay}`;
}

export function addressOf(row: Pick<PatientRow, 'address'>): Address | undefined {
  return row.address === null ? undefined : (JSON.parse(row.address) as Address);
}

export function extrasOf(row: Pick<PatientRow, 'extras'>): Record<string, unknown> {
  return row.extras === null ? {} : (JSON.parse(row.extras) as Record<string, unknown>);
}

/** interface 2.7 (plus age) from the record: what an appointment shows of its patient. */
export function detailsOf(row: Omit<LockedPatient, 'merged_into' | 'archived_at'>, timeZone = DEFAULT_TIMEZONE): PatientDetails {
  const details: PatientDetails = {};
  if (row.designation !== null) details.designation = row.designation;
  if (row.first_name !== null) details.first_name = row.first_name;
  if (row.middle_name !== null) details.middle_name = row.middle_name;
  if (row.last_name !== null) details.last_name = row.last_name;
  if (row.mobile !== null) details.mobile = row.mobile;
  if (row.gender !== null) details.gender = row.gender as PatientDetails['gender'];
  if (row.dob !== null) details.dob = row.dob;
  const age = row.dob === null ? currentAge(row, timeZone) : undefined;
  if (age !== undefined) details.age = age;
  const address = addressOf(row);
  if (address && (address.city !== undefined || address.pincode !== undefined)) {
    details.address = {};
    if (address.city !== undefined) details.address.city = address.city;
    if (address.pincode !== undefined) details.address.pincode = address.pincode;
  }
  if (row.partner_patient_id !== null) details.partner_patient_id = row.partner_patient_id;
  return details;
}

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

const EMPTY_RECORD = {
  partner_patient_id: null,
  designation: null,
  first_name: null,
  middle_name: null,
  last_name: null,
  gender: null,
  dob: null,
  age: null,
  age_recorded_at: null,
  mobile: null,
  email: null,
  blood_group: null,
  address: null,
  abha_number: null,
  abha_address: null,
  extras: null,
  archived_at: null,
  merged_into: null,
  erased_at: null,
  erased_ref: null,
} satisfies Omit<PatientRow, 'id' | 'business_id' | 'created_at' | 'updated_at'>;

/**
 * The column changes that apply `input` to `current` (an empty record for a new patient): fields
 * not sent stay; the address changes the keys it names; dob and age clear each other. `input` is
 * checked and normalised already.
 */
function changesFor(current: Pick<PatientRow, 'address'>, input: PatientInput, now: number): repo.PatientChanges {
  const changes: repo.PatientChanges = {};
  const plain = [
    'partner_patient_id',
    'designation',
    'first_name',
    'middle_name',
    'last_name',
    'gender',
    'mobile',
    'email',
    'blood_group',
    'abha_number',
    'abha_address',
  ] as const;
  for (const field of plain) if (input[field] !== undefined) changes[field] = input[field];
  if (input.dob !== undefined) Object.assign(changes, { dob: input.dob, age: null, age_recorded_at: null });
  if (input.age !== undefined) Object.assign(changes, { age: input.age, age_recorded_at: now, dob: null });
  if (input.address !== undefined) {
    const address: Address = { ...(addressOf(current) ?? {}) };
    // Only the address's own fields: other keys are ignored (contract 0), not stored (a value nested
    // thousands deep overflowed JSON.stringify: 500).
    for (const key of ADDRESS_FIELDS) if (input.address[key] !== undefined) (address as Record<string, unknown>)[key] = input.address[key];
    changes.address = Object.keys(address).length > 0 ? JSON.stringify(address) : null;
  }
  if (input.extras !== undefined) {
    // Eka ignores keys that start with '_'.
    const extras = Object.fromEntries(Object.entries(input.extras).filter(([key]) => !key.startsWith('_')));
    changes.extras = Object.keys(extras).length > 0 ? JSON.stringify(extras) : null;
  }
  return changes;
}

/** Whether writing `input` would leave `current` as it is (an age sent again moves its recording time: a change). */
function unchanged(current: LockedPatient, input: PatientInput, now: number): boolean {
  const changes = changesFor(current, input, now) as Record<string, unknown>;
  return Object.keys(changes).every((column) => changes[column] === current[column as keyof LockedPatient]);
}

/**
 * What Eka's remove-fields may clear, by its profile names, and the columns each clears. The first name
 * (fn, fln), the gender and the username (the partner id, which records are kept under) cannot be removed.
 */
export const REMOVABLE_FIELDS = {
  mn: { middle_name: null },
  ln: { last_name: null },
  s: { designation: null },
  dob: { dob: null, age: null, age_recorded_at: null },
  mobile: { mobile: null },
  email: { email: null },
  bg: { blood_group: null },
  abha: { abha_address: null },
  abha_number: { abha_number: null },
  extras: { extras: null },
  address: { address: null },
} as const satisfies Record<string, repo.PatientChanges>;
export type RemovableField = keyof typeof REMOVABLE_FIELDS;

/** The columns the name search keys a patient by (name-index.ts). */
const SEARCHED = ['first_name', 'middle_name', 'last_name', 'mobile', 'partner_patient_id', 'archived_at', 'merged_into'] as const;

export class PatientService {
  readonly #deps: PatientServiceDeps;
  readonly #names: PatientNameIndex;

  constructor(deps: PatientServiceDeps) {
    this.#deps = deps;
    this.#names = new PatientNameIndex({ db: deps.db });
  }

  /** Keeps the search's keys of a patient as its row now is; a patient merged away is no longer found. */
  async #index(trx: Db, businessId: string, row: Pick<PatientRow, 'id' | (typeof SEARCHED)[number]>, fresh = false): Promise<void> {
    if (row.merged_into !== null) return this.#names.remove(trx, row.id);
    await this.#names.index(trx, { ...row, business_id: businessId, archived: row.archived_at !== null }, { fresh });
  }

  /** Writes `changes` and re-indexes the patient when they touch what the search keys it by. */
  async #write(trx: Db, businessId: string, current: LockedPatient, changes: repo.PatientChanges): Promise<void> {
    await repo.updatePatient(trx, businessId, current.id, changes);
    if (SEARCHED.some((column) => changes[column] !== undefined && changes[column] !== current[column])) {
      await this.#index(trx, businessId, { ...current, ...changes } as LockedPatient);
    }
  }

  /**
   * The business's patients answering `text`, best first: its partner id exactly, a mobile number by
   * prefix, or a name with its spelling variants and initials (name-index.ts); a page of ids.
   */
  search(businessId: string, text: string, options: { limit: number; offset?: number; includeArchived?: boolean }): Promise<SearchPage> {
    return this.#names.search(businessId, text, options);
  }

  /** The business's patients of `ids`, in that order (those that exist). */
  async byIds(businessId: string, ids: string[]): Promise<PatientRow[]> {
    const rows = await repo.findByIds(this.#deps.db, businessId, ids);
    const byId = new Map(rows.map((row) => [row.id, row]));
    return ids.flatMap((id) => byId.get(id) ?? []);
  }

  get #timezone(): string {
    return this.#deps.timezone ?? DEFAULT_TIMEZONE;
  }

  /** The zone of dates: a dob's day, an age's counting. */
  get timezone(): string {
    return this.#timezone;
  }

  /**
   * The one key under which records that name a patient by either id (cases' X-Pt-Id, push devices)
   * are kept: a known patient's partner id, or its service id when it has none; an id the business does
   * not know is kept as given, so records can arrive before the patient exists (a patient created later
   * with that partner id has that key). A merged patient's key is its survivor's.
   */
  async canonicalRef(businessId: string, id: string): Promise<string> {
    let patient = await repo.findPatientByAnyId(this.#deps.db, businessId, id);
    if (patient?.merged_into) patient = (await repo.findById(this.#deps.db, businessId, patient.merged_into)) ?? patient;
    return patient ? keyOf(patient) : id;
  }

  /**
   * Takes the lock of the records kept under a patient's key (cases, devices) until `trx` ends:
   * `write` to change them, `listing` (shared) to list them in an order later writes cannot break.
   */
  lockRecords(trx: Db, businessId: string, patientRef: string, mode: 'write' | 'listing'): Promise<void> {
    return repo.lockRecords(trx, businessId, patientRef, mode);
  }

  /** interface 2.7 from the record, in this service's time zone. */
  details(row: Omit<LockedPatient, 'merged_into' | 'archived_at'>): PatientDetails {
    return detailsOf(row, this.#timezone);
  }

  /** A booking's patient: the business's patient matched by partner_patient_id (or a new one), with `sent` applied. */
  async forBooking(trx: Db, businessId: string, sent: PatientDetails): Promise<PatientChoice> {
    const now = Date.now();
    const row: PatientRow = {
      ...EMPTY_RECORD,
      ...changesFor({ address: null }, sent, now),
      id: newId(PATIENT_ID_PREFIX),
      business_id: businessId,
      created_at: now,
      updated_at: now,
    };
    if (sent.partner_patient_id === undefined) {
      await repo.insertPatient(trx, row);
      await this.#index(trx, businessId, row, true);
      return { id: row.id, partner_patient_id: null, details: this.details(row) };
    }
    await this.#refuseServiceId(trx, businessId, sent.partner_patient_id);
    const patient = await repo.upsertByPartnerId(trx, row);
    if (patient.id === row.id) {
      await this.#index(trx, businessId, row, true);
      return { id: row.id, partner_patient_id: row.partner_patient_id, details: this.details(row) };
    }
    if (patient.merged_into === null) {
      return { id: patient.id, partner_patient_id: patient.partner_patient_id, details: await this.#apply(trx, businessId, patient, sent, now) };
    }
    // A merged patient's bookings go to the patient it was merged into, which keeps its own partner id;
    // locked after the merged one, the order a merge takes them in too.
    const survivor = (await this.#lockedRead(trx, businessId, patient.merged_into))!;
    const details = await this.#apply(trx, businessId, survivor, { ...sent, partner_patient_id: undefined }, now);
    return { id: survivor.id, partner_patient_id: survivor.partner_patient_id, details };
  }

  /**
   * A booking's patient named by id (Eka's top-level patient_id, or partner_patient_id when `byPartner`):
   * an existing, live patient of the business, locked, with `sent` applied; a merged one's bookings go to
   * its survivor. Unknown, erased or archived: 400 naming the field. A partner_patient_id in `sent` must
   * be the patient's own.
   */
  async forBookingExisting(trx: Db, businessId: string, named: { id: string; byPartner: boolean }, sent: PatientDetails): Promise<PatientChoice> {
    const field = named.byPartner ? 'partner_patient_id' : 'patient_id';
    const found = named.byPartner ? await repo.findByPartnerId(trx, businessId, named.id) : await repo.findById(trx, businessId, named.id);
    let patient = found && (await this.#lockedRead(trx, businessId, found.id));
    if (patient?.merged_into) patient = await this.#lockedRead(trx, businessId, patient.merged_into);
    if (!patient || patient.erased_at !== null) throw invalid(field, 'unknown patient');
    if (patient.archived_at !== null) throw invalid(field, 'the patient is archived: unarchive it first');
    if (sent.partner_patient_id !== undefined && sent.partner_patient_id !== patient.partner_patient_id) {
      throw invalid('patient_details.partner_patient_id', `names another patient than ${field}`);
    }
    const changes = { ...sent, partner_patient_id: undefined };
    const details = PATIENT_FIELDS.some((key) => changes[key] !== undefined)
      ? await this.#apply(trx, businessId, patient, changes, Date.now())
      : this.details(patient);
    return { id: patient.id, partner_patient_id: patient.partner_patient_id, details };
  }

  /**
   * An appointment's patient after an update sent `sent`: `locked`, the appointment's patient as the
   * caller read it locked in this transaction, or another one when a new partner_patient_id names it.
   * `known` is what the appointment knew of its patient; the answer's details are what it keeps from
   * now on.
   */
  async forUpdate(trx: Db, businessId: string, locked: LockedPatient, known: PatientDetails, sent: PatientDetails): Promise<PatientChoice> {
    if (locked.erased_at !== null) {
      // An erased patient takes nothing back: what is sent is another patient (found by partner id, or new).
      return this.forBooking(trx, businessId, sent);
    }
    const now = Date.now();
    let patient: LockedPatient = locked;
    const details = mergeDetails(known, sent);
    const moved = sent.partner_patient_id !== undefined && sent.partner_patient_id !== patient.partner_patient_id;
    if (moved) await this.#refuseServiceId(trx, businessId, sent.partner_patient_id!);
    let claimed: string | undefined;
    if (moved && patient.partner_patient_id === null && !(await repo.findByPartnerId(trx, businessId, sent.partner_patient_id!))) {
      // A patient booked without a partner id takes the one now sent, and so does its key.
      claimed = sent.partner_patient_id!;
      await this.#moveKey(trx, businessId, patient.id, claimed);
    } else if (moved) {
      // Another partner id is another patient of the business: the appointment moves to it, and a
      // patient record created now starts from the appointment's details.
      const row: PatientRow = {
        ...EMPTY_RECORD,
        ...changesFor({ address: null }, details, now),
        id: newId(PATIENT_ID_PREFIX),
        business_id: businessId,
        created_at: now,
        updated_at: now,
      };
      patient = await repo.upsertByPartnerId(trx, row);
      if (patient.id === row.id) {
        await this.#index(trx, businessId, row, true);
        return { id: patient.id, partner_patient_id: patient.partner_patient_id, details };
      }
      // A merged patient's appointments go to the patient it was merged into.
      if (patient.merged_into !== null) patient = (await this.#lockedRead(trx, businessId, patient.merged_into))!;
    }
    // The appointment keeps what it knew and takes the fields sent, whichever patient it now has; a
    // patient that knows nothing yet takes all the appointment knows. The partner id changes only
    // when claimed above.
    const empty = Object.keys(this.details({ ...patient, partner_patient_id: null })).length === 0;
    const applied = { ...(empty ? details : sent), partner_patient_id: claimed };
    // Details sent again as the patient has them change nothing: no write (nor a row version to vacuum).
    if (!unchanged(patient, applied, now)) await this.#apply(trx, businessId, patient, applied, now);
    return { id: patient.id, partner_patient_id: claimed ?? patient.partner_patient_id, details };
  }

  /**
   * A partner id may not be another patient's service id: records are kept under a patient's partner
   * id or else its service id, and the two patients would share them. Only ids of the service's own
   * form are looked up.
   */
  async #refuseServiceId(trx: Db, businessId: string, partnerId: string): Promise<void> {
    if (!partnerId.startsWith(`${PATIENT_ID_PREFIX}_`)) return;
    if (await repo.findById(trx, businessId, partnerId)) {
      throw invalid('partner_patient_id', "is another patient's service id: send the partner's own id");
    }
  }

  /**
   * The records kept under key `from` (cases, devices) follow the patient to key `to`, under both
   * keys' records locks (taken in one order, so two moves cannot deadlock).
   */
  async #moveKey(trx: Db, businessId: string, from: string, to: string): Promise<Record<string, number>> {
    for (const key of [from, to].sort()) await repo.lockRecords(trx, businessId, key, 'write');
    return this.#deps.compartment.moveKey(trx, businessId, from, to);
  }

  /**
   * A patient locked for the rest of the transaction (SQLite runs one writer at a time), then read
   * again: a change that committed while this one waited for the lock is what it builds on.
   */
  async #lockedRead(trx: Db, businessId: string, id: string): Promise<PatientRow | undefined> {
    await repo.updatePatient(trx, businessId, id, { updated_at: Date.now() });
    return repo.findById(trx, businessId, id);
  }

  /** Writes `input` onto `patient` and answers its details after the change. */
  async #apply(trx: Db, businessId: string, patient: LockedPatient, input: PatientInput, now: number): Promise<PatientDetails> {
    const changes = changesFor(patient, input, now);
    await this.#write(trx, businessId, patient, { ...changes, updated_at: now });
    return this.details({ ...patient, ...changes } as LockedPatient);
  }

  /* ---- the resource ---- */

  /** Checks and normalises what a client sent; every problem names its field. */
  check(input: PatientInput, options: { creating: boolean }): PatientInput {
    const out: PatientInput = { ...input };
    if (input.dob !== undefined && input.age !== undefined) throw invalid('dob', 'send either dob or age, not both');
    if (options.creating && input.dob === undefined && input.age === undefined) throw invalid('dob', 'send dob or age');
    if (input.dob !== undefined) {
      if (parseDate(input.dob) === null || input.dob < '1850-01-01') throw invalid('dob', 'must be a real date, YYYY-MM-DD');
      if (input.dob > localDate(Date.now(), this.#timezone)) throw invalid('dob', 'must be a date in the past');
    }
    if (input.mobile !== undefined) {
      const mobile = normaliseMobile(input.mobile);
      if (mobile === null) throw invalid('mobile', 'must be + and 7 to 15 digits with the country code, or 10 digits (India)');
      out.mobile = mobile;
    }
    if (input.abha_number !== undefined) {
      const number = normaliseAbhaNumber(input.abha_number);
      if (number === null) throw invalid('abha_number', 'must be 14 digits (XX-XXXX-XXXX-XXXX)');
      out.abha_number = number;
    }
    if (input.abha_address !== undefined) {
      const address = normaliseAbhaAddress(input.abha_address);
      if (address === null) {
        throw invalid('abha_address', "must be a handle of 8 to 18 letters and digits (one '.' and one '_' at most) and @abdm, e.g. name@abdm");
      }
      out.abha_address = address;
    }
    if (input.email !== undefined) out.email = input.email.trim().toLowerCase();
    return out;
  }

  /** A new patient; 409 PATIENT_ALREADY_EXISTS when the business has its partner id. */
  async create(businessId: string, sent: PatientInput): Promise<{ id: string; duplicates: PatientRow[] }> {
    const input = this.check(sent, { creating: true });
    const now = Date.now();
    const row: PatientRow = {
      ...EMPTY_RECORD,
      ...changesFor({ address: null }, input, now),
      id: newId(PATIENT_ID_PREFIX),
      business_id: businessId,
      created_at: now,
      updated_at: now,
    };
    try {
      const duplicates = await inTransaction(this.#deps.db, async (trx) => {
        if (input.partner_patient_id !== undefined) await this.#refuseServiceId(trx, businessId, input.partner_patient_id);
        await repo.insertPatient(trx, row);
        await this.#index(trx, businessId, row, true);
        return this.#probableDuplicates(trx, row);
      });
      return { id: row.id, duplicates };
    } catch (error) {
      // Two creates racing for one partner id: the unique index decides.
      if (isUniqueViolation(error) && input.partner_patient_id !== undefined) throw alreadyExists(input.partner_patient_id);
      throw error;
    }
  }

  /**
   * The business's other live patients that are probably the same person as `row`: the same mobile
   * number, a similar name (one's words all answered by the other's, spelling variants and initials
   * allowed, names.ts) and a compatible birth (the same dob; within a year where either was given as
   * an age; anything where either is unknown). A family sharing a number has different first names.
   */
  async #probableDuplicates(trx: Db, row: PatientRow): Promise<PatientRow[]> {
    if (row.mobile === null) return [];
    const words = nameTokens(row.first_name, row.middle_name, row.last_name);
    if (words.length === 0) return [];
    const sameNumber = await repo.findAllBy(trx, row.business_id, 'mobile', row.mobile, false);
    return sameNumber.filter((other) => {
      if (other.id === row.id) return false;
      const theirs = nameTokens(other.first_name, other.middle_name, other.last_name);
      const [shorter, longer] = words.length <= theirs.length ? [words, theirs] : [theirs, words];
      return scoreName(shorter, longer) >= DUPLICATE_NAME_SCORE && compatibleBirth(row, other, this.#timezone);
    });
  }

  /**
   * The patient a path names: by service id or partner id (`byPartner`: the partner's only). An
   * archived patient answers only when `visibility.archived`; a merged one answers with `merged_into`
   * set, the pointer to its survivor, whatever the visibility.
   */
  async get(businessId: string, id: string, byPartner: boolean, visibility: Visibility): Promise<PatientRow> {
    return this.#find(this.#deps.db, businessId, id, byPartner, visibility);
  }

  async #find(db: Db, businessId: string, id: string, byPartner: boolean, visibility: Visibility): Promise<PatientRow> {
    const row = byPartner ? await repo.findByPartnerId(db, businessId, id) : await repo.findPatientByAnyId(db, businessId, id);
    if (!row) throw notFound();
    if (row.merged_into !== null) return row;
    if (row.archived_at !== null && !visibility.archived) throw notFound();
    return row;
  }

  /** A change of a live patient: a merged one refuses, naming its survivor. */
  async #change(businessId: string, id: string, byPartner: boolean, work: (trx: Db, row: PatientRow) => Promise<void>): Promise<PatientRow> {
    return inTransaction(this.#deps.db, async (trx) => {
      const row = await this.#find(trx, businessId, id, byPartner, { archived: false });
      const current = (await this.#lockedRead(trx, businessId, row.id)) ?? row;
      // Merged away (before or while this change waited), erased or archived meanwhile: it would write the person back.
      if (current.erased_at !== null || (current.archived_at !== null && current.merged_into === null)) throw notFound();
      if (current.merged_into !== null) throw mergedAway(current.merged_into);
      await work(trx, current);
      return current;
    });
  }

  /** Changes the fields sent; a new partner id must be free in the business (409), and the patient's key follows it. */
  async update(businessId: string, id: string, byPartner: boolean, sent: PatientInput): Promise<string> {
    const input = this.check(sent, { creating: false });
    try {
      const row = await this.#change(businessId, id, byPartner, async (trx, current) => {
        const newPartnerId = input.partner_patient_id !== current.partner_patient_id ? input.partner_patient_id : undefined;
        if (newPartnerId !== undefined) await this.#refuseServiceId(trx, businessId, newPartnerId);
        const now = Date.now();
        await this.#write(trx, businessId, current, { ...changesFor(current, input, now), updated_at: now });
        if (newPartnerId !== undefined) await this.#moveKey(trx, businessId, keyOf(current), newPartnerId);
      });
      return row.id;
    } catch (error) {
      if (isUniqueViolation(error) && input.partner_patient_id !== undefined) throw alreadyExists(input.partner_patient_id);
      throw error;
    }
  }

  /**
   * Merges `duplicateId` into `survivorId`: the duplicate's appointments, reviews, cases, devices and documents
   * move to the survivor, the duplicate is archived with `merged_into` pointing at it (its ids then
   * resolve to the survivor everywhere), and a `patient.merged` event records it, all in one
   * transaction. Merging again into the same survivor changes nothing and answers the same ids. Cases
   * kept under both patients with one case id are refused (409): merging would lose one of them.
   */
  async merge(
    principal: Pick<Principal, 'businessId' | 'clientId'>,
    survivorId: string,
    duplicateId: string,
    byPartner: boolean,
  ): Promise<MergeResult> {
    const { businessId } = principal;
    return inRetriedTransaction(this.#deps.db, async (trx) => {
      let survivor = await this.#find(trx, businessId, survivorId, byPartner, { archived: false });
      let duplicate = await this.#find(trx, businessId, duplicateId, byPartner, { archived: true });
      if (survivor.id === duplicate.id) throw invalid('duplicate_patient_id', 'must name another patient than the one merged into');
      // Both patients' appointments first, then both patients, each in one order: an appointment change
      // locks its appointment before its patients (its own, then one a new partner id names), so the
      // two cannot wait on each other in a cycle.
      const pair = [survivor.id, duplicate.id].sort();
      await this.#deps.compartment.lockById(trx, businessId, pair);
      // The patients merged into the duplicate before it (their rows move along), as a booking by their
      // partner ids locks them before the patient they name.
      for (const earlier of await repo.findMergedInto(trx, businessId, duplicate.id)) {
        await repo.updatePatient(trx, businessId, earlier.id, { updated_at: Date.now() });
      }
      for (const id of pair) await repo.updatePatient(trx, businessId, id, { updated_at: Date.now() });
      survivor = (await repo.findById(trx, businessId, survivor.id))!;
      duplicate = (await repo.findById(trx, businessId, duplicate.id))!;
      const moved = { appointments: 0, reviews: 0, cases: 0, devices: 0, documents: 0 };
      if (duplicate.merged_into === survivor.id) return { patient: survivor, merged: duplicate, moved };
      // Erased while this merge waited for the locks: nothing may move into or out of an erased patient.
      if (survivor.erased_at !== null || duplicate.erased_at !== null) throw notFound();
      if (survivor.merged_into !== null) throw mergedAway(survivor.merged_into);
      if (duplicate.merged_into !== null) throw mergedAway(duplicate.merged_into);
      const [from, to] = [keyOf(duplicate), keyOf(survivor)];
      for (const key of [from, to].sort()) await repo.lockRecords(trx, businessId, key, 'write');
      const now = Date.now();
      const counts = await this.#deps.compartment.merge(trx, {
        businessId,
        from: { id: duplicate.id, key: from },
        to: { id: survivor.id, key: to },
        now,
      });
      for (const name of Object.keys(moved) as (keyof typeof moved)[]) moved[name] = counts[name] ?? 0;
      // Patients merged into the duplicate earlier now name the survivor: a merge is one step, never a chain.
      await repo.repointMerged(trx, businessId, duplicate.id, survivor.id, now);
      await this.#write(trx, businessId, duplicate, {
        merged_into: survivor.id,
        archived_at: duplicate.archived_at ?? now,
        updated_at: now,
      });
      await recordEvent(trx, {
        businessId,
        type: 'patient.merged',
        payload: {
          ...envelope('patient.merged', principal, now),
          data: {
            patient_id: survivor.id,
            partner_patient_id: survivor.partner_patient_id,
            merged_patient_id: duplicate.id,
            merged_partner_patient_id: duplicate.partner_patient_id,
            moved,
          },
        },
      });
      return { patient: survivor, merged: { ...duplicate, merged_into: survivor.id }, moved };
    });
  }

  /* ---- a patient's rights (modules/privacy) ---- */

  /**
   * The live patient a privacy request names, by service id or partner id (`byPartner`: the partner's
   * only), archived ones included; a merged duplicate names its survivor. With it, the patients merged
   * into it. Null when the business has no such live patient.
   */
  async subject(db: Db, businessId: string, id: string, byPartner: boolean): Promise<{ patient: PatientRow; merged: PatientRow[] } | null> {
    let patient = byPartner ? await repo.findByPartnerId(db, businessId, id) : await repo.findPatientByAnyId(db, businessId, id);
    if (patient?.merged_into) patient = await repo.findById(db, businessId, patient.merged_into);
    if (!patient || patient.erased_at !== null) return null;
    return { patient, merged: await repo.findMergedInto(db, businessId, patient.id) };
  }

  /** The patients merged into `id`. */
  mergedInto(db: Db, businessId: string, id: string): Promise<PatientRow[]> {
    return repo.findMergedInto(db, businessId, id);
  }

  /** An erased patient by its service id (unless `byPartner`) or by `erasedRef`, the digest of the partner id it had. */
  async erased(db: Db, businessId: string, id: string, byPartner: boolean, erasedRef: string): Promise<PatientRow | null> {
    return (await repo.findErased(db, businessId, byPartner ? null : id, erasedRef)) ?? null;
  }

  /**
   * Locks what an erasure changes, in the order other changes take them (as a merge does): the
   * patients' appointments, then the patient rows, then the records kept under their keys. Answers
   * the rows read again under the locks.
   */
  async lockForErasure(trx: Db, businessId: string, ids: string[]): Promise<PatientRow[]> {
    const sorted = [...ids].sort();
    await this.#deps.compartment.lockById(trx, businessId, sorted);
    const now = Date.now();
    for (const id of sorted) await repo.updatePatient(trx, businessId, id, { updated_at: now });
    const rows: PatientRow[] = [];
    for (const id of sorted) {
      const row = await repo.findById(trx, businessId, id);
      if (row) rows.push(row);
    }
    const keys = [...new Set(rows.flatMap((row) => [row.id, ...(row.partner_patient_id ? [row.partner_patient_id] : [])]))].sort();
    for (const key of keys) await repo.lockRecords(trx, businessId, key, 'write');
    return rows;
  }

  /** Clears a locked patient's personal data and its search keys; `erasedRef` is the digest of the partner id it had. */
  async erase(trx: Db, businessId: string, id: string, now: number, erasedRef: string | null): Promise<void> {
    await this.#names.remove(trx, id);
    // Every personal column cleared; the row keeps its ids, times and merge pointer, so appointments still name it.
    const { merged_into: _kept, ...cleared } = EMPTY_RECORD;
    await repo.updatePatient(trx, businessId, id, { ...cleared, archived_at: now, erased_at: now, erased_ref: erasedRef, updated_at: now });
  }

  /** Archives (Eka's DELETE): hidden from look-ups and listings unless asked for; appointments keep it. */
  async archive(businessId: string, id: string, byPartner: boolean): Promise<void> {
    await this.#change(businessId, id, byPartner, async (trx, row) => {
      await this.#write(trx, businessId, row, { archived_at: Date.now() });
    });
  }

  /**
   * Brings an archived patient back (Eka's unarchive): found again by look-ups, listings and search. A
   * live one stays as it is; a merged one stays archived (409 naming its survivor); an erased one is 404.
   */
  async unarchive(businessId: string, id: string, byPartner: boolean): Promise<PatientRow> {
    return inTransaction(this.#deps.db, async (trx) => {
      const row = await this.#find(trx, businessId, id, byPartner, { archived: true });
      const current = (await this.#lockedRead(trx, businessId, row.id)) ?? row;
      if (current.erased_at !== null) throw notFound();
      if (current.merged_into !== null) throw mergedAway(current.merged_into);
      if (current.archived_at === null) return current;
      await this.#write(trx, businessId, current, { archived_at: null });
      return { ...current, archived_at: null };
    });
  }

  /** Clears the fields named (Eka's remove-fields, in the record's names: REMOVABLE_FIELDS); a name's first part and the gender stay. */
  async removeFields(businessId: string, id: string, byPartner: boolean, fields: readonly RemovableField[]): Promise<void> {
    const changes: repo.PatientChanges = {};
    for (const field of fields) Object.assign(changes, REMOVABLE_FIELDS[field]);
    await this.#change(businessId, id, byPartner, async (trx, row) => {
      await this.#write(trx, businessId, row, { ...changes, updated_at: Date.now() });
    });
  }

  /** A page of the business's patients by creation; `more` when another page follows. */
  async list(
    businessId: string,
    query: { page: number; pageSize: number; createdFrom?: number } & Visibility,
  ): Promise<{ rows: PatientRow[]; more: boolean }> {
    const rows = await repo.listPatients(this.#deps.db, businessId, {
      createdFrom: query.createdFrom,
      includeArchived: query.archived,
      limit: query.pageSize + 1,
      offset: query.page * query.pageSize,
    });
    return { rows: rows.slice(0, query.pageSize), more: rows.length > query.pageSize };
  }

  /** Every patient on a mobile number (families share one). */
  async byMobile(businessId: string, mobile: string, visibility: Visibility): Promise<PatientRow[]> {
    const normalised = normaliseMobile(mobile);
    if (normalised === null) throw invalid('mob', 'must be + and 7 to 15 digits with the country code, or 10 digits (India)');
    return repo.findAllBy(this.#deps.db, businessId, 'mobile', normalised, visibility.archived);
  }

  /** The patients with an ABHA number or address (one of them). */
  async byAbha(businessId: string, query: { abha_number?: string; abha_address?: string }, visibility: Visibility): Promise<PatientRow[]> {
    if ((query.abha_number === undefined) === (query.abha_address === undefined)) {
      throw invalid('abha_number', 'send either abha_number or abha (the ABHA address)');
    }
    if (query.abha_number !== undefined) {
      const number = normaliseAbhaNumber(query.abha_number);
      if (number === null) throw invalid('abha_number', 'must be 14 digits (XX-XXXX-XXXX-XXXX)');
      return repo.findAllBy(this.#deps.db, businessId, 'abha_number', number, visibility.archived);
    }
    const address = normaliseAbhaAddress(query.abha_address!);
    if (address === null) throw invalid('abha', 'must be an ABHA address, e.g. name@abdm');
    return repo.findAllBy(this.#deps.db, businessId, 'abha_address', address, visibility.archived);
  }
}

/** Names scoring this much or more (names.ts: 100 is the same words, 75 the same consonants, about 70 a variant and an initial) may be one person. */
const DUPLICATE_NAME_SCORE = 65;

/** Whether two patients' births can be one: the same dob, within a year where an age was given, or either unknown. */
function compatibleBirth(a: PatientRow, b: PatientRow, timeZone: string): boolean {
  const [bornA, bornB] = [birthDate(a, timeZone), birthDate(b, timeZone)];
  if (bornA === undefined || bornB === undefined) return true;
  if (a.dob !== null && b.dob !== null) return a.dob === b.dob;
  return Math.abs(Number(bornA.slice(0, 4)) - Number(bornB.slice(0, 4))) <= 1;
}

/** The key of records naming the patient (see canonicalRef). */
function keyOf(row: Pick<PatientRow, 'id' | 'partner_patient_id'>): string {
  return row.partner_patient_id ?? row.id;
}
