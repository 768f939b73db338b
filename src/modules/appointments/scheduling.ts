/**
 * Booking against a doctor's schedule at a clinic (the schedules module keeps the rules): a booking or
 * a move of a scheduled pair must name one of the schedule's slots exactly and find a place left in it,
 * else 409 SLOT_UNAVAILABLE; it then gets the next OPD token of the slot's session. A pair without a
 * schedule books at any time, as before.
 *
 * Why it cannot double-book: the appointment is written first (new, or at its new times), without a
 * token; then the pair's lock row, which outlives the versions of its schedule, is locked until the
 * transaction ends (PostgreSQL; SQLite runs one writer at a time) and the session's token counter counted on; then one statement writes the counted
 * token to the appointment only if the others holding a place that overlaps the slot (counted from the
 * appointments themselves; cancelled and rescheduled ones hold none) leave a place. Every booking of the
 * pair waits for the one before it to commit, whichever session or version of the schedule it read
 * (overlapping sessions, an edit racing the booking: an edit waits for the bookings in flight; a schedule
 * deleted and created again under a booking in flight), and that
 * statement (a new one, hence a new snapshot under READ COMMITTED) sees that booking. A refused booking
 * rolls back and gives its token number back, so tokens follow the order of the bookings that stand,
 * never twice. On PostgreSQL the lock and the counter travel with that statement (writeWithNext), so the
 * lock is held for one round trip: the COMMIT, which carries the event, follows.
 */
import type { Kysely } from 'kysely';
import type { Db } from '../../db/index.ts';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../errors.ts';
import type { ClinicService, PlacementInput } from '../clinics/service.ts';
import { addDays, dayClock, daysBetween, localIso, parseDate, zonedInstant } from '../../time.ts';
import { placesTaken, slotAt, slotsOfDay, type ScheduleService } from '../schedules/service.ts';
import * as repo from './repo.ts';

/** Eka serves today and tomorrow; the service any range up to this many days. */
export const MAX_SLOT_DAYS = 31;

export interface EkaSlot {
  available: boolean;
  conf_id: string;
  s: string;
  e: string;
  slots_booked: number;
  start_time: number;
  end_time: number;
  capacity: number;
  places_left: number;
}

/** A clinic's services with their slots: the shape of Eka's example, which Eka's clients read. */
export interface EkaClinicService {
  service_type: string;
  service_name: string;
  conf_id: string;
  fee: number | null;
  slots: EkaSlot[];
}

export interface EkaSlots {
  success: 'true';
  status_code: 200;
  data: {
    schedule: Record<string, Record<string, EkaSlot[]> | EkaClinicService[]>;
    services: Record<
      string,
      {
        allow_patient_booking: boolean;
        appointment_type: string;
        c_at: string;
        conf_id: string;
        mode: string[];
        owner_id: string;
        post_pay: boolean;
        pre_pay: boolean;
        price: number | null;
        service_name: string;
        timezone: string;
        slot_minutes: number;
        capacity: number;
      }
    >;
  };
}

/**
 * The answer as UTF-8 JSON, the same bytes JSON.stringify would give, written in a third of its time for the
 * megabytes of a month of a busy schedule: each day's slots are written once, as bytes, and the clinic's shape,
 * which lists the same slots again, reuses them; bytes join without the copies that joining large strings costs.
 */
export function slotsJsonBytes(answer: EkaSlots): Buffer {
  const chunks: Buffer[] = [];
  const write = (text: string) => chunks.push(Buffer.from(text));
  // A day's list by its first slot: its bytes and length, for the clinic's shape to find.
  const written = new Map<EkaSlot, { bytes: Buffer; slots: EkaSlot[] }>();
  const writeList = (slots: EkaSlot[]) => {
    const bytes = Buffer.from(JSON.stringify(slots));
    if (slots.length > 0) written.set(slots[0]!, { bytes, slots });
    chunks.push(bytes);
  };
  const sameRun = (all: EkaSlot[], from: number, run: EkaSlot[]) => {
    if (from + run.length > all.length) return false;
    for (let i = 0; i < run.length; i++) if (all[from + i] !== run[i]) return false;
    return true;
  };
  const writeSlotsAgain = (slots: EkaSlot[]) => {
    write('[');
    for (let at = 0; at < slots.length; ) {
      if (at > 0) write(',');
      const day = written.get(slots[at]!);
      if (day && sameRun(slots, at, day.slots)) {
        chunks.push(day.bytes.subarray(1, -1));
        at += day.slots.length;
      } else {
        write(JSON.stringify(slots[at]));
        at += 1;
      }
    }
    write(']');
  };
  write(`{"success":${JSON.stringify(answer.success)},"status_code":${JSON.stringify(answer.status_code)},"data":{"schedule":{`);
  Object.entries(answer.data.schedule).forEach(([key, value], index) => {
    write(`${index > 0 ? ',' : ''}${JSON.stringify(key)}:`);
    if (Array.isArray(value)) {
      write('[');
      value.forEach(({ slots, ...service }, at) => {
        const head = JSON.stringify(service);
        write(`${at > 0 ? ',' : ''}${head === '{}' ? '{' : `${head.slice(0, -1)},`}"slots":`);
        writeSlotsAgain(slots);
        write('}');
      });
      write(']');
    } else {
      write('{');
      Object.entries(value).forEach(([date, slots], at) => {
        write(`${at > 0 ? ',' : ''}${JSON.stringify(date)}:`);
        writeList(slots);
      });
      write('}');
    }
  });
  write(`},"services":${JSON.stringify(answer.data.services)}}}`);
  return Buffer.concat(chunks);
}

export interface SchedulingDeps {
  db: Kysely<Database>;
  clinics: ClinicService;
  schedules: ScheduleService;
}

/** A pair's schedule and the slot of a booking's times, as `precheck` found them. */
type Checked = NonNullable<Awaited<ReturnType<Scheduling['precheck']>>>;

export class Scheduling {
  readonly #deps: SchedulingDeps;
  readonly #gate = new SlotGate();

  constructor(deps: SchedulingDeps) {
    this.#deps = deps;
  }

  /** Runs `work`, a booking of [start, end) with the clinic and doctor as the request names them, through the slot's gate (see SlotGate). */
  gated<T>(businessId: string, named: PlacementInput, start: number, end: number, work: () => Promise<T>): Promise<T> {
    const key = [businessId, named.clinic_id, named.partner_clinic_id, named.doctor_id, named.partner_doctor_id, start, end].join('\u0000');
    return this.#gate.run(key, work);
  }

  /**
   * The pair's slot for [start, end), checked without a lock: 409 when no slot has these times or the
   * slot is already full, so that a booking bound to fail does no more work and waits for no lock.
   * Null when the pair has no schedule. `take` checks again under the pair's lock.
   */
  async precheck(db: Db, businessId: string, clinicId: string, doctorId: string, start: number, end: number, excludeId: string | null = null) {
    const schedule = await this.#deps.schedules.forPair(db, businessId, clinicId, doctorId);
    if (!schedule) return null;
    const slot = slotAt(schedule, start, end);
    if (!slot) {
      throw unavailable(
        `No slot of the doctor's schedule at this clinic starts and ends at these times (${localIso(start, schedule.timezone)} to ${localIso(end, schedule.timezone)}): pick one from the slots endpoint.`,
      );
    }
    const checked = { schedule, slot };
    await this.#refuseIfFull(db, businessId, clinicId, doctorId, checked, excludeId);
    return checked;
  }

  /**
   * Takes a place for [start, end) (epoch milliseconds) with the pair, in `trx`, for `appointmentId`,
   * written already in `trx` (new, or moving; its own place does not count): the OPD token, written to
   * the appointment, or null when the pair has no schedule. `checked` is what `precheck` answered for
   * the same times, when it ran.
   */
  async take(
    trx: Db,
    businessId: string,
    clinicId: string,
    doctorId: string,
    start: number,
    end: number,
    appointmentId: string,
    checked?: Checked | null,
  ) {
    const found = checked === undefined ? await this.precheck(trx, businessId, clinicId, doctorId, start, end, appointmentId) : checked;
    if (!found) return null;
    const { slot } = found;
    await this.#deps.schedules.lockForBooking(trx, { businessId, clinicId, doctorId });
    await this.#deps.schedules.countTokenOn(
      trx,
      { businessId, clinicId, doctorId },
      { start: slot.sessionStart, end: slot.sessionEnd },
      appointmentId,
    );
    const observedAt = performance.now();
    const token = await repo.placeWithNextToken(
      trx,
      { businessId, clinicId, doctorId, start: slot.start, end: slot.end, sessionStart: slot.sessionStart },
      slot.capacity,
      appointmentId,
    );
    if (token === null) throw full(found, observedAt);
    return token;
  }

  async #refuseIfFull(db: Db, businessId: string, clinicId: string, doctorId: string, checked: Checked, excludeId: string | null) {
    const observedAt = performance.now();
    const held = await repo.countHolding(db, businessId, clinicId, doctorId, checked.slot.start, checked.slot.end, excludeId);
    if (held >= checked.slot.capacity) throw full(checked, observedAt);
  }

  /** The slots of the pair from `startDate` to `endDate` (inclusive, in the schedule's zone), in Eka's shape. */
  async slots(businessId: string, doctorId: string, clinicId: string, byPartner: boolean, startDate: string, endDate: string, now = Date.now()) {
    for (const [field, value] of [
      ['start_date', startDate],
      ['end_date', endDate],
    ] as const) {
      if (parseDate(value) === null) throw invalid(field, 'must be a real date, YYYY-MM-DD');
    }
    if (endDate < startDate) throw invalid('end_date', 'must not be before start_date');
    if (daysBetween(startDate, endDate) + 1 > MAX_SLOT_DAYS) throw invalid('end_date', `the range is at most ${MAX_SLOT_DAYS} days`);
    const db = this.#deps.db;
    const placement = await this.#deps.clinics.placement(
      db,
      businessId,
      byPartner ? { partner_clinic_id: clinicId, partner_doctor_id: doctorId } : { clinic_id: clinicId, doctor_id: doctorId },
    );
    const doctor = byPartner ? placement.doctor.byPartner : placement.doctor.byId;
    const clinic = byPartner ? placement.clinic.byPartner : placement.clinic.byId;
    if (!doctor) throw new AppError(404, 'Doctor not found', { code: 'NOT_FOUND' });
    if (!clinic) throw new AppError(404, 'Clinic not found', { code: 'NOT_FOUND' });
    if (!placement.assigned) throw invalid('doctor_id', 'the doctor is not assigned to this clinic');
    const answer: EkaSlots = { success: 'true', status_code: 200, data: { schedule: {}, services: {} } };
    const schedule = await this.#deps.schedules.forPair(db, businessId, clinic, doctor);
    if (!schedule) return answer;
    const dates = Array.from({ length: daysBetween(startDate, endDate) + 1 }, (_, day) => addDays(startDate, day));
    const clocks = dates.map((date) => dayClock(date, schedule.timezone));
    const slotsByDay = dates.map((date, day) => slotsOfDay(schedule, date, clocks[day]));
    const from = clocks[0]!.instant(0);
    const to = zonedInstant(addDays(endDate, 1), 0, schedule.timezone);
    const taken = placesTaken(slotsByDay.flat(), await repo.holdingBetween(db, businessId, clinic, doctor, from, to));
    const days: Record<string, EkaSlot[]> = {};
    let index = 0;
    slotsByDay.forEach((slots, day) => {
      const clock = clocks[day]!;
      days[dates[day]!] = slots.map((slot) => {
        const booked = taken[index++]!;
        const left = Math.max(0, slot.capacity - booked);
        return {
          available: left > 0 && slot.start > now,
          conf_id: schedule.id,
          s: clock.iso(slot.start),
          e: clock.iso(slot.end),
          slots_booked: booked,
          start_time: slot.start / 1000,
          end_time: slot.end / 1000,
          capacity: slot.capacity,
          places_left: left,
        };
      });
    });
    answer.data.schedule[doctor] = days;
    // Eka's schema keys the slots by a doctor and a date, its example (and so its clients) by the clinic
    // as the request named it: both are served, under their own keys.
    answer.data.schedule[clinicId] = [
      {
        service_type: 'consultation',
        service_name: schedule.serviceName,
        conf_id: schedule.id,
        fee: schedule.price,
        slots: Object.values(days).flat(),
      },
    ];
    answer.data.services[schedule.id] = {
      allow_patient_booking: true,
      appointment_type: 'REGULAR',
      c_at: new Date(schedule.createdAt).toISOString(),
      conf_id: schedule.id,
      mode: ['in-clinic'],
      owner_id: doctor,
      post_pay: false,
      pre_pay: false,
      price: schedule.price,
      service_name: schedule.serviceName,
      timezone: schedule.timezone,
      slot_minutes: schedule.slot_minutes,
      capacity: schedule.capacity,
    };
    return answer;
  }
}

/** A slot found full by a count that started at `observedAt` (performance.now()). */
export class SlotFull extends AppError {
  readonly observedAt: number;
  constructor(message: string, observedAt: number) {
    super(409, message, { code: 'SLOT_UNAVAILABLE' });
    this.observedAt = observedAt;
  }
}

function full({ schedule, slot }: Checked, observedAt: number): SlotFull {
  return new SlotFull(
    `The slot at ${localIso(slot.start, schedule.timezone)} is full (${slot.capacity} of ${slot.capacity} places taken).`,
    observedAt,
  );
}

/** Bookings of one slot that one process lets run at once; the slot's lock lets one at a time commit anyway. */
const BOOKINGS_AT_ONCE = 4;

interface GatedSlot {
  running: number;
  /** Bookings waiting for one of the running ones to end; `wake(false)` refuses one without a turn. */
  waiting: Array<{ arrivedAt: number; wake: (turn: boolean) => void }>;
  /** The latest finding that the slot is full. */
  full: SlotFull | null;
}

/**
 * Bookings of one slot, as the requests name it, in this process: at most BOOKINGS_AT_ONCE run at a
 * time and the rest wait here, holding neither a connection nor the event loop. Once a booking finds
 * the slot full, a waiting booking that arrived before that count began is refused with the same
 * answer at once: the slot was full while it was in flight, which is what the database would have
 * told it. One arriving after the count runs and counts again. When a thousand clients book the last
 * places of one slot at once, the refusals so cost no statement, and the bookings that win keep the
 * pool and the cores.
 */
export class SlotGate {
  readonly #slots = new Map<string, GatedSlot>();

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const arrivedAt = performance.now();
    let slot = this.#slots.get(key);
    if (slot === undefined) {
      slot = { running: 0, waiting: [], full: null };
      this.#slots.set(key, slot);
    }
    const gated = slot;
    if (gated.running < limitOf(gated)) gated.running++;
    else if (!(await new Promise<boolean>((wake) => gated.waiting.push({ arrivedAt, wake })))) {
      throw new SlotFull(gated.full!.message, gated.full!.observedAt);
    }
    try {
      return await work();
    } catch (error) {
      if (error instanceof SlotFull && (gated.full === null || error.observedAt > gated.full.observedAt)) {
        gated.full = error;
        const waited = gated.waiting;
        gated.waiting = waited.filter((waiter) => waiter.arrivedAt > error.observedAt);
        for (const waiter of waited) if (waiter.arrivedAt <= error.observedAt) waiter.wake(false);
      }
      throw error;
    } finally {
      if (gated.waiting.length > 0 && gated.running <= limitOf(gated)) gated.waiting.shift()!.wake(true);
      else if (--gated.running === 0) this.#slots.delete(key);
    }
  }
}

/** A slot found full lets one booking at a time count again: its count answers all that wait. */
function limitOf(slot: GatedSlot): number {
  return slot.full === null ? BOOKINGS_AT_ONCE : 1;
}

function unavailable(message: string): AppError {
  return new AppError(409, message, { code: 'SLOT_UNAVAILABLE' });
}

function invalid(field: string, message: string): AppError {
  return new AppError(400, `${field}: ${message}`, { code: 'INVALID_REQUEST' });
}
