/**
 * Schedules: per doctor and clinic, weekly sessions, slot length, places per slot, buffers and
 * exceptions, in the clinics family (every problem of a write at once). The appointments module asks
 * for a pair's rules when it books, for the lock that serialises a pair's bookings (`lockForBooking`)
 * and for the next OPD token of a session (`countTokenOn`).
 */
import { envelope } from '../../events.ts';
import type { Kysely } from 'kysely';
import type { Principal } from '../../auth/principal.ts';
import { inTransaction, type Db } from '../../db/index.ts';
import { newId } from '../../db/ids.ts';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../errors.ts';
import { recordEvent } from '../../jobs/outbox.ts';
import type { ClinicService } from '../clinics/service.ts';
import * as repo from './repo.ts';
import { checkRules, type FieldProblems, type ScheduleInput } from './rules.ts';
import type { ScheduleException, ScheduleRules, Session } from './slots.ts';
import { WEEKDAY_NAMES } from '../../time.ts';

export type { ScheduleRules, Slot } from './slots.ts';
export { placesTaken, slotAt, slotsOfDay } from './slots.ts';

export type { ScheduleInput } from './rules.ts';

export interface ScheduleView {
  schedule_id: string;
  doctor_id: string;
  clinic_id: string;
  timezone: string;
  slot_minutes: number;
  capacity: number;
  buffer_minutes: number;
  sessions: Session[];
  exceptions: ScheduleException[];
  service_name: string | null;
  price: number | null;
  currency: string | null;
  created_at: number;
  updated_at: number;
}

/** The service a schedule books, in the shape of Eka's doctor services (`conf_id` is the schedule id). */
export interface DoctorService {
  conf_id: string;
  clinic_id: string;
  service_name: string;
  appointment_type: 'REGULAR';
  archive: false;
  created_at: number;
  /** Absent when the schedule states none, as Eka's schema has it (a string). */
  currency?: string;
  duration: number;
  mode: ['in-clinic'];
  pre_pay: false;
  /** Absent when the schedule states none, as Eka's schema has it (a number). */
  price?: number;
}

/** A schedule that names no service books this one. */
export const DEFAULT_SERVICE_NAME = 'consultation';

/** A pair's schedule as bookings use it. */
export interface PairSchedule extends ScheduleRules {
  id: string;
  /** Epoch milliseconds. */
  createdAt: number;
  serviceName: string;
  price: number | null;
  currency: string | null;
}

export interface ScheduleServiceDeps {
  db: Kysely<Database>;
  /** CPS_TIMEZONE: the zone of a schedule that names none. */
  timezone: string;
  clinics: ClinicService;
}

interface Pair {
  clinicId: string;
  doctorId: string;
}

/** Who changes a schedule: the business, and the API client its events name. */
type Caller = Pick<Principal, 'businessId' | 'clientId'>;

export class ScheduleService {
  readonly #deps: ScheduleServiceDeps;

  constructor(deps: ScheduleServiceDeps) {
    this.#deps = deps;
  }

  /** Creates or replaces the schedule of the pair (service ids, or partner ids when `byPartner`). */
  async put(principal: Caller, doctorId: string, clinicId: string, byPartner: boolean, input: ScheduleInput, refused: FieldProblems = {}) {
    const { businessId } = principal;
    const problems = checkRules(input, refused);
    if (Object.keys(problems).length > 0) throw invalid(problems);
    return inTransaction(this.#deps.db, async (trx) => {
      const pair = await this.#pair(trx, businessId, doctorId, clinicId, byPartner, true);
      await repo.lockPair(trx, { businessId, ...pair });
      const now = Date.now();
      const id = newId('sch');
      const row = await repo.upsert(trx, {
        id,
        business_id: businessId,
        clinic_id: pair.clinicId,
        doctor_id: pair.doctorId,
        timezone: input.timezone ?? this.#deps.timezone,
        slot_minutes: input.slot_minutes,
        capacity: input.capacity ?? 1,
        buffer_minutes: input.buffer_minutes ?? 0,
        sessions: JSON.stringify(input.sessions.map(session)),
        exceptions: JSON.stringify((input.exceptions ?? []).map(exception)),
        service_name: input.service_name?.trim() || null,
        price: input.price ?? null,
        currency: input.currency ?? null,
        created_at: now,
        updated_at: now,
      });
      const view = toView(row);
      await recordEvent(trx, {
        businessId,
        type: 'schedule.updated',
        payload: {
          ...envelope('schedule.updated', principal, now),
          data: {
            action: row.id === id ? 'created' : 'replaced',
            schedule_id: row.id,
            doctor_id: row.doctor_id,
            clinic_id: row.clinic_id,
            schedule: { ...view },
          },
        },
      });
      return view;
    });
  }

  async get(businessId: string, doctorId: string, clinicId: string, byPartner: boolean): Promise<ScheduleView> {
    const pair = await this.#pair(this.#deps.db, businessId, doctorId, clinicId, byPartner, false);
    const row = await repo.find(this.#deps.db, businessId, pair.clinicId, pair.doctorId);
    if (!row) throw AppError.notFound('Schedule not found');
    return toView(row);
  }

  /** Bookings of the pair are then taken at any time again; booked appointments stay as they are. */
  async delete(principal: Caller, doctorId: string, clinicId: string, byPartner: boolean): Promise<void> {
    const { businessId } = principal;
    await inTransaction(this.#deps.db, async (trx) => {
      const pair = await this.#pair(trx, businessId, doctorId, clinicId, byPartner, false);
      await repo.lockPair(trx, { businessId, ...pair });
      const row = await repo.find(trx, businessId, pair.clinicId, pair.doctorId);
      if (!row) throw AppError.notFound('Schedule not found');
      await repo.remove(trx, businessId, row.id);
      await recordEvent(trx, {
        businessId,
        type: 'schedule.deleted',
        payload: {
          ...envelope('schedule.deleted', principal, Date.now()),
          data: { schedule_id: row.id, doctor_id: row.doctor_id, clinic_id: row.clinic_id },
        },
      });
    });
  }

  /** The pair's schedule (service ids), or null: the pair books at any time. */
  async forPair(db: Db, businessId: string, clinicId: string, doctorId: string): Promise<PairSchedule | null> {
    const row = await repo.find(db, businessId, clinicId, doctorId);
    return row ? { id: row.id, createdAt: Number(row.created_at), ...serviceOf(row), ...rulesOf(row) } : null;
  }

  /**
   * The doctor's services (service id, or partner id when `byPartner`): one per schedule, across the
   * business's clinics, oldest first. A doctor of another business, or none, is not found.
   */
  async servicesOfDoctor(businessId: string, doctorId: string, byPartner: boolean): Promise<DoctorService[]> {
    const db = this.#deps.db;
    const placement = await this.#deps.clinics.placement(db, businessId, byPartner ? { partner_doctor_id: doctorId } : { doctor_id: doctorId });
    const doctor = byPartner ? placement.doctor.byPartner : placement.doctor.byId;
    if (!doctor) throw AppError.notFound('Doctor not found', 'NOT_FOUND');
    const rows = await repo.listOfDoctor(db, businessId, doctor);
    return rows.map((row) => {
      const { serviceName, price, currency } = serviceOf(row);
      return {
        conf_id: row.id,
        clinic_id: row.clinic_id,
        service_name: serviceName,
        appointment_type: 'REGULAR' as const,
        archive: false as const,
        created_at: Math.floor(Number(row.created_at) / 1000),
        ...(currency !== null && { currency }),
        duration: Number(row.slot_minutes),
        mode: ['in-clinic'] as ['in-clinic'],
        pre_pay: false as const,
        ...(price !== null && { price }),
      };
    });
  }

  /** Locks the pair for a booking until `trx` ends, whichever version of its schedule the booking read (see repo.lockForBooking). */
  lockForBooking(trx: Db, pair: { businessId: string; clinicId: string; doctorId: string }): Promise<void> {
    return repo.lockForBooking(trx, pair);
  }

  /** Counts the session's OPD tokens on by one for `appointmentId` (see repo.countTokenOn). */
  countTokenOn(
    trx: Db,
    pair: { businessId: string; clinicId: string; doctorId: string },
    session: { start: number; end: number },
    appointmentId: string,
  ): Promise<void> {
    return repo.countTokenOn(trx, pair, session, appointmentId);
  }

  /** Unknown doctor or clinic: 404 in the clinics family; not assigned: 400 for a write, 404 for a read. */
  async #pair(db: Db, businessId: string, doctorId: string, clinicId: string, byPartner: boolean, writing: boolean): Promise<Pair> {
    const placement = await this.#deps.clinics.placement(
      db,
      businessId,
      byPartner ? { partner_clinic_id: clinicId, partner_doctor_id: doctorId } : { clinic_id: clinicId, doctor_id: doctorId },
    );
    const doctor = byPartner ? placement.doctor.byPartner : placement.doctor.byId;
    const clinic = byPartner ? placement.clinic.byPartner : placement.clinic.byId;
    if (!doctor) throw AppError.notFound('Doctor not found');
    if (!clinic) throw AppError.notFound('Clinic not found');
    if (!placement.assigned) {
      if (!writing) throw AppError.notFound('Schedule not found');
      throw invalid({ message: ['The doctor is not assigned to this clinic.'] });
    }
    return { clinicId: clinic, doctorId: doctor };
  }
}

function invalid(fields: FieldProblems): AppError {
  const [field, messages] = Object.entries(fields)[0]!;
  return new AppError(400, field === 'message' ? messages[0]! : `${field}: ${messages[0]}`, { fields, code: 'INVALID_REQUEST' });
}

const session = (value: Session): Session => ({ days: [...new Set(value.days)], start: value.start, end: value.end });

function exception(value: ScheduleException): ScheduleException {
  return {
    type: value.type,
    start_date: value.start_date,
    end_date: value.end_date,
    ...(value.start_time !== undefined && { start_time: value.start_time }),
    ...(value.end_time !== undefined && { end_time: value.end_time }),
    ...(value.note !== undefined && { note: value.note }),
  };
}

function rulesOf(row: repo.ScheduleRow): ScheduleRules {
  return {
    timezone: row.timezone,
    slot_minutes: Number(row.slot_minutes),
    capacity: Number(row.capacity),
    buffer_minutes: Number(row.buffer_minutes),
    sessions: JSON.parse(row.sessions) as Session[],
    exceptions: JSON.parse(row.exceptions) as ScheduleException[],
  };
}

function serviceOf(row: repo.ScheduleRow): { serviceName: string; price: number | null; currency: string | null } {
  return { serviceName: row.service_name ?? DEFAULT_SERVICE_NAME, price: row.price === null ? null : Number(row.price), currency: row.currency };
}

function toView(row: repo.ScheduleRow): ScheduleView {
  return {
    schedule_id: row.id,
    doctor_id: row.doctor_id,
    clinic_id: row.clinic_id,
    ...rulesOf(row),
    service_name: row.service_name,
    price: row.price === null ? null : Number(row.price),
    currency: row.currency,
    created_at: Math.floor(Number(row.created_at) / 1000),
    updated_at: Math.floor(Number(row.updated_at) / 1000),
  };
}

export const WEEKDAYS = WEEKDAY_NAMES;
