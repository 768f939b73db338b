/**
 * Appointments (contract section 4): booking, the record, updates and the state changes
 * BK -> NS / CM / CN. Every change reads the appointment locked and writes it in one transaction, so
 * concurrent requests on one appointment apply one after another and no rule is skipped. The first
 * completion and every manual review request store an `external_review.request` event, and the same
 * in Eka's name and body, in that same transaction (the outbox delivers them): `google_review.request`
 * for the completion's, `google_review.request_manual` for a manual one, as Eka sends them.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Static } from 'typebox';
import type { Principal } from '../../auth/principal.ts';
import { inRetriedTransaction, isUniqueViolation, type DialectName } from '../../db/index.ts';
import { newId } from '../../db/ids.ts';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../errors.ts';
import { appointmentKey, recordEvent } from '../../jobs/outbox.ts';
import { APPOINTMENT_FIELDS, envelope, type EventInput, type EventName, type StatusTransition } from '../../events.ts';
import { randomToken } from '../../security/secrets.ts';
import type { ClinicService, Placement } from '../clinics/service.ts';
import { LOCKED_PATIENT_COLUMNS, PATIENT_FIELDS, type LockedPatient, type PatientDetails, type PatientService } from '../patients/service.ts';
import { addDays, parseDate, startOfDay, today } from '../../time.ts';
import * as repo from './repo.ts';
import type { BookBody, CustomAttributesBody, EkaReschedule, ListQuery as ListQuerySchema, Reschedule, UpdateBody, UpdateV2Body } from './schemas.ts';
import type { Scheduling } from './scheduling.ts';

export const PAGE_SIZE = 50;

/** The most custom attributes an appointment keeps. */
export const MAX_CUSTOM_ATTRIBUTES = 50;

export type Status = 'BK' | 'PA' | 'NS' | 'CM' | 'CN' | 'RES';
export const STATUSES: readonly Status[] = ['BK', 'PA', 'NS', 'CM', 'CN', 'RES'];
export type BookedMode = 'INCLINIC' | 'VIDEO' | 'PHONE';
/** A mode as sent: Eka's booking names, or the record's (in_clinic, tele), which Eka's MCP SDK books with. */
export type SentMode = BookedMode | 'in_clinic' | 'tele';

function bookedMode(mode: SentMode | undefined): BookedMode {
  if (mode === undefined || mode === 'in_clinic') return 'INCLINIC';
  return mode === 'tele' ? 'VIDEO' : mode;
}

/** label and tags (interface 2.6), and the partner's own attributes set by the custom_attribute operation. */
export interface CustomAttributes {
  label?: string[];
  tags?: string[];
  [attribute: string]: string[] | string | undefined;
}
export interface VideoConnect {
  vendor?: string;
  url?: string;
  pt_joined?: number;
}
export type FreeForm = Record<string, unknown>;

/** A booking, as its route's body schema says (schemas.ts). */
export type BookInput = Static<typeof BookBody>;

/** An update's changes: v1's body (schemas.ts); the v2 route moves its appointment_details' fields up to this shape. */
export type UpdateInput = Static<typeof UpdateBody>;

/** The ids an update of Eka's v2 names the appointment's clinic, doctor and patient by: they must be its own. */
export type ExpectedIds = Pick<
  Static<typeof UpdateV2Body>,
  'clinic_id' | 'partner_clinic_id' | 'doctor_id' | 'partner_doctor_id' | 'patient_id' | 'partner_patient_id'
>;

export const UPDATE_FIELDS = [
  'custom_attributes',
  'partner_meta',
  'patient_details',
  'token',
  'video_connect',
  'display_meta',
  'start_time',
  'end_time',
  'mode',
  'notes',
] as const;

/** The appointment record of contract 4: keys without a value are omitted. */
export interface AppointmentRecord {
  appointment_id: string;
  partner_appointment_id?: string;
  clinic_id: string;
  partner_clinic_id?: string;
  doctor_id: string;
  partner_doctor_id?: string;
  patient_id: string;
  partner_patient_id?: string;
  status: string;
  mode: 'in_clinic' | 'tele';
  start_time: number;
  end_time: number;
  token?: number;
  patient_details: PatientDetails;
  custom_attributes: CustomAttributes;
  video_connect?: VideoConnect;
  display_meta: FreeForm;
  partner_meta: FreeForm;
  notes?: string;
  created_at: number;
  updated_at: number;
  /** The appointments this one was rescheduled from, oldest first. */
  prev_aids?: string[];
  /** The appointment this one was rescheduled to (status RES). */
  next_aid?: string;
}

/** A listing's filters: its route's query schema (schemas.ts). */
export type ListQuery = Static<typeof ListQuerySchema>;

/** A reschedule, from either route's body (schemas.ts): Eka's names the doctor doc_id, which its route hands over as doctor_id. */
export type RescheduleInput = Static<typeof Reschedule> & Omit<Static<typeof EkaReschedule>, 'doc_id'> & { doctor_id?: string };

/** The most times one appointment's lineage may be rescheduled (the `prev_aids` a record carries). */
export const MAX_RESCHEDULES = 100;

function invalid(field: string, message: string): AppError {
  return new AppError(400, `${field}: ${message}`, { code: 'INVALID_REQUEST' });
}

const seconds = (ms: number) => Math.floor(ms / 1000);

/** Characters as a person counts them (code points): an emoji or a CJK extension letter is one, not two UTF-16 units. */
const characters = (text: string): number => [...text].length;

/** interface 2.8: string (<= 50 characters), integer or float values; keys <= 30 characters. */
function checkDisplayMeta(meta: FreeForm | undefined, field = 'display_meta'): void {
  if (meta === undefined) return;
  for (const [key, value] of Object.entries(meta)) {
    if (characters(key) > 30) throw invalid(field, `key "${[...key].slice(0, 40).join('')}" is longer than 30 characters`);
    if (typeof value === 'string') {
      if (characters(value) > 50) throw invalid(`${field}.${key}`, 'a string value is at most 50 characters');
    } else if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw invalid(`${field}.${key}`, 'must be a string, an integer or a float');
    }
  }
}

/** The DOB/AGE choice: at most one per request; `dob` a real date in the past. */
function checkPatientDetails(details: PatientDetails | undefined, timeZone: string, field = 'patient_details'): void {
  if (details === undefined) return;
  if (details.dob !== undefined && details.age !== undefined) {
    throw invalid(field, 'send either dob or age, not both');
  }
  if (details.dob !== undefined) {
    if (parseDate(details.dob) === null || details.dob < '1850-01-01') throw invalid(`${field}.dob`, 'must be a real date, YYYY-MM-DD');
    if (details.dob > today(timeZone)) throw invalid(`${field}.dob`, 'must be a date in the past');
  }
}

function pick<T extends object, K extends keyof T>(value: T, keys: readonly K[]): Pick<T, K> {
  const out = {} as Pick<T, K>;
  for (const key of keys) if (value[key] !== undefined) out[key] = value[key];
  return out;
}

const customAttributes = (value: CustomAttributes) => pick(value, ['label', 'tags']);
const videoConnect = (value: VideoConnect) => pick(value, ['vendor', 'url', 'pt_joined']);

export function toRecord(row: repo.AppointmentView): AppointmentRecord {
  // Built in the contract's key order; keys without a value are left out.
  return {
    appointment_id: row.id,
    ...(row.partner_appointment_id !== null && { partner_appointment_id: row.partner_appointment_id }),
    clinic_id: row.clinic_id,
    ...(row.partner_clinic_id !== null && { partner_clinic_id: row.partner_clinic_id }),
    doctor_id: row.doctor_id,
    ...(row.partner_doctor_id !== null && { partner_doctor_id: row.partner_doctor_id }),
    patient_id: row.patient_id,
    ...(row.partner_patient_id !== null && { partner_patient_id: row.partner_patient_id }),
    status: row.status,
    mode: row.mode === 'INCLINIC' ? 'in_clinic' : 'tele',
    start_time: seconds(row.start_time),
    end_time: seconds(row.end_time),
    ...(row.token !== null && { token: Number(row.token) }),
    patient_details: JSON.parse(row.patient_details) as PatientDetails,
    custom_attributes: JSON.parse(row.custom_attributes) as CustomAttributes,
    ...(row.video_connect !== null && { video_connect: JSON.parse(row.video_connect) as VideoConnect }),
    display_meta: JSON.parse(row.display_meta) as FreeForm,
    partner_meta: JSON.parse(row.partner_meta) as FreeForm,
    ...(row.notes !== null && { notes: row.notes }),
    created_at: seconds(row.created_at),
    updated_at: seconds(row.updated_at),
    ...(row.prev_aids !== null && { prev_aids: JSON.parse(row.prev_aids) as string[] }),
    ...(row.next_aid !== null && { next_aid: row.next_aid }),
  };
}

export interface AppointmentServiceDeps {
  db: Kysely<Database>;
  dialect: DialectName;
  /** CPS_TIMEZONE: the days of dob and of the list's dates. */
  timezone: string;
  /** CPS_PUBLIC_URL: the hosted review page's address. */
  publicUrl: string;
  clinics: ClinicService;
  patients: PatientService;
  /** Bookings of a pair with a schedule: slots, places and OPD tokens. */
  scheduling: Scheduling;
}

export class AppointmentService {
  readonly #deps: AppointmentServiceDeps;

  constructor(deps: AppointmentServiceDeps) {
    this.#deps = deps;
  }

  get #db() {
    return this.#deps.db;
  }

  get #dialect() {
    return this.#deps.dialect;
  }

  async book(principal: Principal, input: BookInput): Promise<string> {
    const businessId = principal.businessId;
    const details = input.appointment_details;
    if (details.end_time <= details.start_time) throw invalid('appointment_details.end_time', 'must be after start_time');
    checkDisplayMeta(input.display_meta);
    checkPatientDetails(input.patient_details, this.#deps.timezone);
    if (input.patient_details === undefined && input.patient_id === undefined && input.partner_patient_id === undefined) {
      throw invalid('patient_details', 'send patient_details, or patient_id (or partner_patient_id) of an existing patient');
    }
    if (input.patient_id !== undefined && input.partner_patient_id !== undefined) {
      throw invalid('partner_patient_id', 'send patient_id or partner_patient_id, not both');
    }
    const id = newId('apt');
    const [start, end] = [details.start_time * 1000, details.end_time * 1000];
    try {
      await this.#deps.scheduling.gated(businessId, input, start, end, () => this.#book(principal, input, id, start, end));
    } catch (error) {
      // Two bookings racing for one partner_appointment_id: the unique index decides.
      if (isUniqueViolation(error) && input.partner_appointment_id !== undefined) throw this.exists();
      throw error;
    }
    return id;
  }

  #book(principal: Principal, input: BookInput, id: string, start: number, end: number): Promise<void> {
    const businessId = principal.businessId;
    const details = input.appointment_details;
    return inRetriedTransaction(this.#db, async (trx) => {
      const placement = await this.#deps.clinics.placement(trx, businessId, input);
      const clinicId = resolved('clinic', input.clinic_id, input.partner_clinic_id, placement.clinic);
      const doctorId = resolved('doctor', input.doctor_id, input.partner_doctor_id, placement.doctor);
      if (!placement.assigned) {
        throw invalid(input.doctor_id !== undefined ? 'doctor_id' : 'partner_doctor_id', 'the doctor is not assigned to this clinic');
      }
      // A full slot refuses before any write or lock; the place is taken after the patient, in the
      // order an appointment change locks them.
      const checked = await this.#deps.scheduling.precheck(trx, businessId, clinicId, doctorId, start, end);
      if (checked !== null && input.token !== undefined) throw invalid('token', "is given by the doctor's schedule at this clinic: send none");
      // A partner_appointment_id already taken fails the insert below on the unique index (see the catch).
      const named = input.patient_id ?? input.partner_patient_id;
      const patient =
        named === undefined
          ? await this.#deps.patients.forBooking(trx, businessId, input.patient_details!)
          : await this.#deps.patients.forBookingExisting(
              trx,
              businessId,
              { id: named, byPartner: input.patient_id === undefined },
              input.patient_details ?? {},
            );
      const now = Date.now();
      // Written before its place is taken, which writes its token (see scheduling.ts).
      const row: repo.AppointmentRow = {
        id,
        business_id: businessId,
        partner_appointment_id: input.partner_appointment_id ?? null,
        clinic_id: clinicId,
        doctor_id: doctorId,
        patient_id: patient.id,
        status: 'BK',
        mode: bookedMode(details.mode),
        start_time: start,
        end_time: end,
        token: input.token ?? null,
        patient_details: JSON.stringify(patient.details),
        custom_attributes: JSON.stringify(customAttributes(details.custom_attributes ?? {})),
        video_connect: details.video_connect ? JSON.stringify(videoConnect(details.video_connect)) : null,
        display_meta: JSON.stringify(input.display_meta ?? {}),
        partner_meta: JSON.stringify(input.partner_meta ?? {}),
        notes: input.notes ?? null,
        review_token: randomToken(24),
        completed_at: null,
        created_at: now,
        updated_at: now,
        prev_aids: null,
        next_aid: null,
        // Its appointment.created below.
        event_sequence: 1,
      };
      await repo.insertAppointment(trx, row);
      const token = await this.#deps.scheduling.take(trx, businessId, clinicId, doctorId, start, end, id, checked);
      const created = viewOf({ ...row, token: token ?? row.token }, placement, patient.partner_patient_id);
      await this.lifecycleEvent(trx, principal, created, 'appointment.created', { action: 'created' });
    });
  }

  private exists(): AppError {
    return new AppError(409, 'partner_appointment_id: an appointment with this partner_appointment_id already exists', {
      code: 'APPOINTMENT_EXISTS',
    });
  }

  async get(businessId: string, id: string, byPartner: boolean): Promise<AppointmentRecord> {
    const row = await repo.findView(this.#db, this.#dialect, businessId, id, byPartner);
    if (!row) throw notFound();
    return toRecord(row);
  }

  async list(businessId: string, query: ListQuery): Promise<AppointmentRecord[]> {
    const timeZone = this.#deps.timezone;
    for (const field of ['start_date', 'end_date', 'date'] as const) {
      const value = query[field];
      if (value !== undefined && parseDate(value) === null) throw invalid(field, 'must be a real date, YYYY-MM-DD');
    }
    const statuses = query.status === undefined ? undefined : statusList(query.status);
    if (query.date !== undefined) {
      if (query.start_date !== undefined || query.end_date !== undefined) throw invalid('date', 'send date, or start_date and end_date, not both');
      query = { ...query, start_date: query.date, end_date: query.date };
    }
    if (query.start_date && query.end_date && query.end_date < query.start_date) throw invalid('end_date', 'must not be before start_date');
    const pageNo = query.page_no ?? 0;
    const rows = await repo.listViews(this.#db, this.#dialect, businessId, {
      clinicId: query.clinic_id,
      doctorId: query.doctor_id,
      patientId: query.patient_id,
      statuses,
      from: query.start_date ? startOfDay(query.start_date, timeZone) : undefined,
      to: query.end_date ? startOfDay(addDays(query.end_date, 1), timeZone) : undefined,
      limit: PAGE_SIZE,
      offset: pageNo * PAGE_SIZE,
    });
    return rows.map(toRecord);
  }

  /**
   * A patient's appointments (its service id), newest first, PAGE_SIZE a page; `next_token` (sent
   * back as `offset`) continues after the last one, null on the last page.
   */
  async listForPatient(
    businessId: string,
    patientId: string,
    offset?: string,
  ): Promise<{ appointments: AppointmentRecord[]; next_token: string | null }> {
    let before: { startTime: number; id: string } | null = null;
    if (offset !== undefined) {
      const match = /^(\d{1,16})\.(.+)$/s.exec(Buffer.from(offset, 'base64url').toString('utf8'));
      if (!match) throw invalid('offset', 'is not a page token of this listing');
      before = { startTime: Number(match[1]), id: match[2]! };
    }
    const rows = await repo.listForPatient(this.#db, businessId, patientId, before, PAGE_SIZE + 1);
    const page = rows.slice(0, PAGE_SIZE);
    const last = page.at(-1);
    const nextToken = rows.length > PAGE_SIZE && last ? Buffer.from(`${last.start_time}.${last.id}`).toString('base64url') : null;
    return { appointments: page.map(toRecord), next_token: nextToken };
  }

  async update(principal: Principal, id: string, byPartner: boolean, input: UpdateInput, expected: ExpectedIds = {}): Promise<AppointmentRecord> {
    if (!UPDATE_FIELDS.some((field) => input[field] !== undefined)) {
      throw new AppError(400, `The update is empty: send at least one of ${UPDATE_FIELDS.join(', ')}`, { code: 'INVALID_REQUEST' });
    }
    if (input.patient_details !== undefined && !PATIENT_FIELDS.some((field) => input.patient_details![field] !== undefined)) {
      throw invalid('patient_details', `name at least one of ${PATIENT_FIELDS.join(', ')}`);
    }
    checkDisplayMeta(input.display_meta);
    checkPatientDetails(input.patient_details, this.#deps.timezone);
    if (input.start_time !== undefined && input.end_time !== undefined && input.end_time <= input.start_time) {
      throw invalid('end_time', 'must be after start_time');
    }
    try {
      return await this.#update(principal, id, byPartner, input, expected);
    } catch (error) {
      // Two updates claiming one new partner_patient_id at once (PostgreSQL): the unique index decides,
      // and the loser changed nothing; sent again, it finds the winner's patient.
      if (isUniqueViolation(error) && input.patient_details?.partner_patient_id !== undefined) {
        throw AppError.conflict(
          'patient_details.partner_patient_id: another request gave this partner id to a patient at the same time; send the update again',
          'CONFLICT',
        );
      }
      throw error;
    }
  }

  async #update(principal: Principal, id: string, byPartner: boolean, input: UpdateInput, expected: ExpectedIds): Promise<AppointmentRecord> {
    return this.change(principal.businessId, id, byPartner, async (trx, row) => {
      for (const [field, value] of Object.entries(expected)) {
        if (value !== undefined && value !== row[field as keyof ExpectedIds]) {
          throw invalid(
            field,
            "is not the appointment's: a move to another clinic or doctor is a reschedule, another patient is patient_details.partner_patient_id",
          );
        }
      }
      const changes: Partial<repo.AppointmentRow> = {};
      let move: { start: number; end: number } | null = null;
      if (input.start_time !== undefined || input.end_time !== undefined) {
        const field = input.start_time !== undefined ? 'start_time' : 'end_time';
        if (row.status === 'RES') throw rescheduled(row);
        const state = { CM: 'a completed', CN: 'a cancelled', NS: 'a no-show' }[row.status as 'CM' | 'CN' | 'NS'];
        if (state) throw invalid(field, `${state} appointment cannot be rescheduled`);
        const start = input.start_time !== undefined ? input.start_time * 1000 : row.start_time;
        const end = input.end_time !== undefined ? input.end_time * 1000 : row.end_time;
        if (end <= start) throw invalid('end_time', 'must be after start_time');
        if (end > Date.now()) {
          // Held (shared) to the end, so a delete of the clinic or doctor cannot slip in between.
          const placement = await this.#deps.clinics.placement(trx, row.business_id, { clinic_id: row.clinic_id, doctor_id: row.doctor_id });
          if (placement.clinic.byId === null || placement.doctor.byId === null) {
            throw AppError.conflict(
              `The ${placement.clinic.byId === null ? 'clinic' : 'doctor'} was deleted: the appointment cannot move into the future.`,
            );
          }
        }
        if (start !== row.start_time || end !== row.end_time) move = { start, end };
        changes.start_time = start;
        changes.end_time = end;
      }
      let partnerPatientId = row.partner_patient_id;
      if (input.patient_details !== undefined) {
        const known = JSON.parse(row.patient_details) as PatientDetails;
        const locked = lockedPatient(row);
        const patient = await this.#deps.patients.forUpdate(trx, row.business_id, locked, known, input.patient_details);
        changes.patient_id = patient.id;
        changes.patient_details = JSON.stringify(patient.details);
        partnerPatientId = patient.partner_patient_id;
      }
      // The place is taken after the patient, in the order a booking locks them.
      if (move !== null) {
        const token = await this.#deps.scheduling.take(trx, row.business_id, row.clinic_id, row.doctor_id, move.start, move.end, row.id);
        if (token !== null) changes.token = token;
      }
      if (input.token !== undefined) {
        if (row.scheduled) {
          throw invalid('token', "is given by the doctor's schedule at this clinic: send none");
        }
        changes.token = input.token;
      }
      if (input.custom_attributes !== undefined) changes.custom_attributes = JSON.stringify(customAttributes(input.custom_attributes));
      if (input.video_connect !== undefined) changes.video_connect = JSON.stringify(videoConnect(input.video_connect));
      if (input.display_meta !== undefined) changes.display_meta = JSON.stringify(input.display_meta);
      if (input.partner_meta !== undefined) changes.partner_meta = JSON.stringify(input.partner_meta);
      if (input.mode !== undefined) changes.mode = bookedMode(input.mode);
      if (input.notes !== undefined) changes.notes = input.notes;
      const changed = APPOINTMENT_FIELDS.filter((field) => changes[field] !== undefined && changes[field] !== row[field]);
      const view = { partner_patient_id: partnerPatientId };
      changes.updated_at = Date.now();
      // appointment.updated names the fields the change altered; none altered, no event.
      if (changed.length === 0) return this.write(trx, row, changes, view);
      return this.writeWithEvent(trx, principal, row, changes, view, 'appointment.updated', { action: 'modified', changed });
    });
  }

  async noShow(principal: Principal, id: string, byPartner: boolean): Promise<AppointmentRecord> {
    return this.change(principal.businessId, id, byPartner, async (trx, row) => {
      if (row.status === 'RES') throw rescheduled(row);
      if (row.status === 'NS') return {};
      return this.changeStatus(trx, principal, row, { status: 'NS', updated_at: Date.now() }, 'no_show');
    });
  }

  /** Parks a booked appointment (Eka's PA: out of the queue for now); parking a parked one changes nothing. */
  async park(principal: Principal, id: string, byPartner: boolean): Promise<AppointmentRecord> {
    return this.change(principal.businessId, id, byPartner, async (trx, row) => {
      if (row.status === 'RES') throw rescheduled(row);
      if (row.status === 'PA') return {};
      const state = { CM: 'a completed', CN: 'a cancelled', NS: 'a no-show' }[row.status as 'CM' | 'CN' | 'NS'];
      if (state) throw invalid('appointment_id', `${state} appointment cannot be parked`);
      return this.changeStatus(trx, principal, row, { status: 'PA', updated_at: Date.now() }, 'parked');
    });
  }

  /**
   * Sets custom attributes (Eka's custom_attribute operation): the keys sent replace those stored, a
   * null removes one, the others stay; label and tags are attributes too.
   */
  async setCustomAttributes(
    principal: Principal,
    id: string,
    byPartner: boolean,
    sent: Static<typeof CustomAttributesBody>,
  ): Promise<AppointmentRecord> {
    if (Object.keys(sent).length === 0) throw invalid('custom_attributes', 'send at least one attribute');
    for (const key of ['label', 'tags'] as const) {
      if (sent[key] !== undefined && sent[key] !== null && !Array.isArray(sent[key])) throw invalid(key, 'must be an array of strings');
    }
    return this.change(principal.businessId, id, byPartner, async (trx, row) => {
      const attributes: Record<string, unknown> = JSON.parse(row.custom_attributes);
      for (const [key, value] of Object.entries(sent)) {
        if (key.length === 0 || key.length > 50) throw invalid('custom_attributes', `a name is 1 to 50 characters ("${key.slice(0, 60)}")`);
        if (value === null) delete attributes[key];
        else attributes[key] = value;
      }
      if (Object.keys(attributes).length > MAX_CUSTOM_ATTRIBUTES) throw invalid('custom_attributes', `at most ${MAX_CUSTOM_ATTRIBUTES} attributes`);
      const changes = { custom_attributes: JSON.stringify(attributes), updated_at: Date.now() };
      if (changes.custom_attributes === row.custom_attributes) return {};
      return this.writeWithEvent(trx, principal, row, changes, {}, 'appointment.updated', { action: 'modified', changed: ['custom_attributes'] });
    });
  }

  async cancel(principal: Principal, id: string, byPartner: boolean): Promise<AppointmentRecord> {
    return this.change(principal.businessId, id, byPartner, async (trx, row) => {
      if (row.status === 'RES') throw rescheduled(row);
      if (row.status === 'CN') return {};
      return this.changeStatus(trx, principal, row, { status: 'CN', updated_at: Date.now() }, 'cancelled');
    });
  }

  /** From any state; a completed appointment stays as it is. Only the first completion asks for a review. */
  async complete(principal: Principal, id: string, byPartner: boolean): Promise<AppointmentRecord> {
    return this.change(principal.businessId, id, byPartner, async (trx, row) => {
      if (row.status === 'CM') return {};
      if (row.status === 'RES') throw rescheduled(row);
      const now = Date.now();
      const changed = await this.changeStatus(
        trx,
        principal,
        row,
        { status: 'CM', completed_at: row.completed_at ?? now, updated_at: now },
        'completed',
      );
      if (row.completed_at === null) await this.reviewEvent(trx, principal, row, now, 'google_review.request');
      return changed;
    });
  }

  async requestReview(principal: Principal, id: string, byPartner: boolean): Promise<string> {
    let eventId = '';
    await this.change(principal.businessId, id, byPartner, async (trx, row) => {
      if (row.status === 'CN') throw invalid('appointment_id', 'a cancelled appointment cannot be reviewed');
      eventId = await this.reviewEvent(trx, principal, row, Date.now(), 'google_review.request_manual');
      return {};
    });
    return eventId;
  }

  /**
   * A reschedule makes a new appointment (status BK) at the new time, for the same patient, with the
   * old one's partner ids and metadata, at the same clinic and doctor unless others are named; the old
   * one is marked RES, frees its place and names its successor (`next_aid`), and the new one lists its
   * predecessors (`prev_aids`). The new time follows the booking rules (a slot with a place left where
   * the pair has a schedule). The old partner_appointment_id moves to the new appointment, unless a new
   * one is given for it (then the old one keeps its own). A lineage holds at most MAX_RESCHEDULES
   * predecessors: each record carries them all, so an endless chain would make every reschedule, read and
   * listing of it cost more.
   */
  async reschedule(principal: Principal, id: string, byPartner: boolean, input: RescheduleInput): Promise<AppointmentRecord> {
    if (input.end_time <= input.start_time) throw invalid('end_time', 'must be after start_time');
    const businessId = principal.businessId;
    const nextId = newId('apt');
    try {
      return await inRetriedTransaction(this.#db, async (trx) => {
        const row = await repo.findForUpdate(trx, this.#dialect, businessId, id, byPartner);
        if (!row) throw notFound();
        if (row.status === 'RES') throw rescheduled(row);
        const state = { CM: 'a completed', CN: 'a cancelled', NS: 'a no-show' }[row.status as 'CM' | 'CN' | 'NS'];
        if (state) throw invalid('appointment_id', `${state} appointment cannot be rescheduled`);
        const earlier = row.prev_aids === null ? [] : (JSON.parse(row.prev_aids) as string[]);
        if (earlier.length >= MAX_RESCHEDULES) {
          throw invalid('appointment_id', `was rescheduled ${MAX_RESCHEDULES} times, as often as one appointment may be: cancel it and book anew`);
        }
        const sent = {
          clinic_id: input.clinic_id ?? (input.partner_clinic_id === undefined ? row.clinic_id : undefined),
          partner_clinic_id: input.partner_clinic_id,
          doctor_id: input.doctor_id ?? (input.partner_doctor_id === undefined ? row.doctor_id : undefined),
          partner_doctor_id: input.partner_doctor_id,
        };
        const placement = await this.#deps.clinics.placement(trx, businessId, sent);
        const clinicId = resolved('clinic', sent.clinic_id, sent.partner_clinic_id, placement.clinic);
        const doctorId = resolved('doctor', sent.doctor_id, sent.partner_doctor_id, placement.doctor);
        if (!placement.assigned) {
          throw invalid(sent.doctor_id !== undefined ? 'doctor_id' : 'partner_doctor_id', 'the doctor is not assigned to this clinic');
        }
        const now = Date.now();
        // The old one lets go of its place and its partner id before the new one takes them.
        const movesPartnerId = input.partner_appointment_id === undefined;
        const retired = { status: 'RES', next_aid: nextId, updated_at: now, ...(movesPartnerId && { partner_appointment_id: null }) };
        await this.changeStatus(trx, principal, row, retired, 'rescheduled');
        const start = input.start_time * 1000;
        const end = input.end_time * 1000;
        const prevAids = [...earlier, row.id];
        // Written before its place is taken, which writes its token (see scheduling.ts).
        const next: repo.AppointmentRow = {
          id: nextId,
          business_id: businessId,
          partner_appointment_id: movesPartnerId ? row.partner_appointment_id : input.partner_appointment_id!,
          clinic_id: clinicId,
          doctor_id: doctorId,
          patient_id: row.patient_id,
          status: 'BK',
          mode: row.mode,
          start_time: start,
          end_time: end,
          token: row.token,
          patient_details: row.patient_details,
          custom_attributes: row.custom_attributes,
          video_connect: row.video_connect,
          display_meta: row.display_meta,
          partner_meta: row.partner_meta,
          notes: row.notes,
          review_token: randomToken(24),
          completed_at: null,
          created_at: now,
          updated_at: now,
          prev_aids: JSON.stringify(prevAids),
          next_aid: null,
          event_sequence: 1,
        };
        await repo.insertAppointment(trx, next);
        const token = await this.#deps.scheduling.take(trx, businessId, clinicId, doctorId, start, end, nextId);
        const created = viewOf({ ...next, token: token ?? next.token }, placement, row.partner_patient_id);
        await this.lifecycleEvent(trx, principal, created, 'appointment.created', { action: 'created' });
        return toRecord(created);
      });
    } catch (error) {
      if (isUniqueViolation(error) && input.partner_appointment_id !== undefined) throw this.exists();
      throw error;
    }
  }

  /** `ekaName`: Eka's event for the same request, the completion's or a manual one's. */
  private async reviewEvent(
    trx: Transaction<Database>,
    principal: Principal,
    row: repo.AppointmentRow,
    now: number,
    ekaName: 'google_review.request' | 'google_review.request_manual',
  ): Promise<string> {
    const links = await repo.reviewLinks(trx, row.business_id, row.clinic_id, row.doctor_id);
    const link = links.doctor ?? links.clinic ?? `${this.#deps.publicUrl}/reviews/${row.review_token}`;
    // Not ordered with the appointment's events: its body (interface 6) has no sequence to follow.
    const eventId = await recordEvent(trx, {
      businessId: row.business_id,
      type: 'external_review.request',
      payload: {
        ...envelope('external_review.request', principal, now),
        data: { doctor_id: row.doctor_id, external_review_link: link, patient_id: row.patient_id, appointment_id: row.id, clinic_id: row.clinic_id },
      },
    });
    // The same request in Eka's name and body, for subscriptions that name it.
    await recordEvent(trx, {
      businessId: row.business_id,
      type: ekaName,
      payload: {
        ...envelope(ekaName, principal, now),
        data: { doctor_id: row.doctor_id, google_review_link: link, patient_id: row.patient_id, appointment_id: row.id, clinic_id: row.clinic_id },
      },
    });
    return eventId;
  }

  /**
   * Records an appointment event from `view`, the appointment as this transaction left it (the read
   * row with the changes written, so no second read), numbered by the view's `event_sequence` (written
   * with the change by writeWithEvent, or 1 in a new row). The appointment's lock orders its events.
   */
  private async lifecycleEvent<N extends 'appointment.created' | 'appointment.updated' | 'appointment.statuschange'>(
    trx: Transaction<Database>,
    principal: Principal,
    view: repo.AppointmentView,
    type: N,
    /** What the event adds to eventData (its schema in src/events.ts; the tests validate every body against it). */
    extra: Record<string, unknown>,
  ): Promise<void> {
    await recordEvent(trx, {
      businessId: principal.businessId,
      orderingKey: appointmentKey(view.id),
      sequence: Number(view.event_sequence),
      type,
      payload: {
        service: 'appointment',
        ...envelope<EventName>(type, principal, Date.now()),
        data: { ...eventData(view), ...extra },
      } as EventInput<N>,
    });
  }

  /**
   * Writes a change of status of `row` (as read before it) and its `appointment.statuschange`. The
   * reschedule operation sends it too, with `rescheduled`.
   */
  private changeStatus(
    trx: Transaction<Database>,
    principal: Principal,
    row: repo.AppointmentView,
    changes: Partial<repo.AppointmentRow>,
    transition: StatusTransition,
  ): Promise<Partial<repo.AppointmentView>> {
    return this.writeWithEvent(trx, principal, row, changes, {}, 'appointment.statuschange', { transition, previous_status: row.status as Status });
  }

  /**
   * Reads the appointment locked, applies `work`, and answers the record, all in one transaction.
   * `work` answers what it changed of the view (see `write`): the record is the row read with those
   * changes, so no second read is needed.
   */
  private async change(
    businessId: string,
    id: string,
    byPartner: boolean,
    work: (trx: Transaction<Database>, row: repo.LockedAppointment) => Promise<Partial<repo.AppointmentView>>,
  ): Promise<AppointmentRecord> {
    return inRetriedTransaction(this.#db, async (trx) => {
      const row = await repo.findForUpdate(trx, this.#dialect, businessId, id, byPartner);
      if (!row) throw notFound();
      const changed = await work(trx, row);
      return toRecord({ ...row, ...changed });
    });
  }

  /** Writes `changes` to the locked appointment; answers them with `view`, what else the record shows differently. */
  private async write(
    trx: Transaction<Database>,
    row: repo.AppointmentView,
    changes: Partial<repo.AppointmentRow>,
    view: Partial<repo.AppointmentView> = {},
  ): Promise<Partial<repo.AppointmentView>> {
    await repo.updateAppointment(trx, row.business_id, row.id, changes);
    return { ...changes, ...view };
  }

  /**
   * As `write`, and records the change's event of `type` from the appointment as written: the row takes
   * the event's number, its key's next.
   */
  private async writeWithEvent<N extends 'appointment.updated' | 'appointment.statuschange'>(
    trx: Transaction<Database>,
    principal: Principal,
    row: repo.AppointmentView,
    changes: Partial<repo.AppointmentRow>,
    view: Partial<repo.AppointmentView>,
    type: N,
    extra: Record<string, unknown>,
  ): Promise<Partial<repo.AppointmentView>> {
    const written = await this.write(trx, row, { ...changes, event_sequence: Number(row.event_sequence) + 1 }, view);
    await this.lifecycleEvent(trx, principal, { ...row, ...written }, type, extra);
    return written;
  }
}

/** What every appointment event says of the appointment (src/events.ts); a partner id not set is empty. */
function eventData(view: repo.AppointmentView) {
  return {
    appointment_id: view.id,
    partner_appointment_id: view.partner_appointment_id ?? '',
    doctor_id: view.doctor_id,
    partner_doctor_id: view.partner_doctor_id ?? '',
    patient_id: view.patient_id,
    partner_patient_id: view.partner_patient_id ?? '',
    clinic_id: view.clinic_id,
    partner_clinic_id: view.partner_clinic_id ?? '',
    status: view.status as Status,
    mode: view.mode === 'INCLINIC' ? ('in_clinic' as const) : ('tele' as const),
    start_time: seconds(Number(view.start_time)),
    end_time: seconds(Number(view.end_time)),
    created_at: seconds(Number(view.created_at)),
    modified_at: seconds(Number(view.updated_at)),
    custom_attributes: JSON.parse(view.custom_attributes) as CustomAttributes,
    partner_meta: JSON.parse(view.partner_meta) as FreeForm,
    sa_ids: [] as string[],
    ...(view.prev_aids !== null && rescheduledFrom(JSON.parse(view.prev_aids) as string[])),
    ...(view.next_aid !== null && { next_aid: view.next_aid }),
  };
}

/** The predecessors of a rescheduled appointment, and the last of them as `p_aid`, which Eka's SDKs read. */
function rescheduledFrom(prevAids: string[]): { prev_aids: string[]; p_aid?: string } {
  const last = prevAids.at(-1);
  return last === undefined ? { prev_aids: prevAids } : { prev_aids: prevAids, p_aid: last };
}

/** A new appointment's view, as `repo.findView` would read it, from its row and the partner ids already known. */
function viewOf(row: repo.AppointmentRow, placement: Placement, partnerPatientId: string | null): repo.AppointmentView {
  return {
    ...row,
    partner_clinic_id: placement.clinic.partnerId,
    partner_doctor_id: placement.doctor.partnerId,
    partner_patient_id: partnerPatientId,
  };
}

/** The clinic or doctor a booking names, from what `placement` found; unknown is a 400 naming the field. */
function resolved(kind: 'clinic' | 'doctor', id: string | undefined, partnerId: string | undefined, found: Placement['clinic']): string {
  if (id === undefined && partnerId === undefined) throw invalid(`${kind}_id`, `send ${kind}_id or partner_${kind}_id`);
  if (id !== undefined && !found.byId) throw invalid(`${kind}_id`, `unknown ${kind}`);
  if (partnerId !== undefined && !found.byPartner) throw invalid(`partner_${kind}_id`, `unknown ${kind}`);
  if (found.byId && found.byPartner && found.byId !== found.byPartner)
    throw invalid(`partner_${kind}_id`, `names a different ${kind} than ${kind}_id`);
  return (found.byId ?? found.byPartner)!;
}

/** The patient row the locked read carried. */
function lockedPatient(row: repo.LockedAppointment): LockedPatient {
  const patient = { id: row.patient_id, partner_patient_id: row.partner_patient_id } as Record<string, unknown>;
  for (const column of LOCKED_PATIENT_COLUMNS) patient[column] = row[`patient_${column}`];
  return patient as LockedPatient;
}

/** A rescheduled appointment is history: it cannot change state or time again; its successor can. */
function rescheduled(row: repo.AppointmentRow): AppError {
  return new AppError(409, `The appointment was rescheduled to ${row.next_aid}: change that one instead.`, { code: 'APPOINTMENT_RESCHEDULED' });
}

/** A status filter: one status or several, comma-separated. */
function statusList(value: string): Status[] {
  const statuses = value.split(',').map((status) => status.trim().toUpperCase());
  for (const status of statuses) {
    if (!STATUSES.includes(status as Status)) throw invalid('status', `must be one or more of ${STATUSES.join(', ')}, comma-separated`);
  }
  return [...new Set(statuses)] as Status[];
}

function notFound(): AppError {
  return new AppError(404, 'Appointment not found', { code: 'APPOINTMENT_NOT_FOUND' });
}
