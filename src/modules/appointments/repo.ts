/** SQL for appointments; every query is scoped by business. */
import { CompiledQuery, sql } from 'kysely';
import { writeWithNext, type Db, type DialectName } from '../../db/index.ts';
import { isAnyOfQuery, isPostgres } from '../../db/dialect.ts';
import type { AppointmentsTable, PatientsTable } from '../../db/schema.ts';
import { LOCKED_PATIENT_COLUMNS } from '../patients/service.ts';

export type AppointmentRow = AppointmentsTable;

/** An appointment with the partner ids of its clinic, doctor and patient, as the record shows them. */
export interface AppointmentView extends AppointmentRow {
  partner_clinic_id: string | null;
  partner_doctor_id: string | null;
  partner_patient_id: string | null;
}

export interface ListFilter {
  clinicId?: string;
  doctorId?: string;
  patientId?: string;
  statuses?: readonly string[];
  /** Epoch milliseconds, inclusive. */
  from?: number;
  /** Epoch milliseconds, exclusive. */
  to?: number;
  limit: number;
  offset: number;
}

/** Sent with the transaction's next statement (writeWithNext); a taken partner_appointment_id fails that one. */
export function insertAppointment(db: Db, row: AppointmentRow): Promise<void> {
  return writeWithNext(db, db.insertInto('appointments').values(row));
}

type LockedColumn = (typeof LOCKED_PATIENT_COLUMNS)[number];

/**
 * An appointment as a change reads it: the record's view and its patient's own row (the columns the
 * patients service changes, prefixed `patient_`), both locked. The appointment keeps its own copy of
 * the details in `patient_details`. `scheduled`: whether its clinic and doctor book by a schedule (a
 * row of the schedules module's table for the pair), read here so an update that sends a token
 * costs no statement more while it holds the lock.
 */
export type LockedAppointment = AppointmentView & { [C in LockedColumn as `patient_${C}`]: PatientsTable[C] } & { scheduled: boolean };

const LOCKED_SELECTION = LOCKED_PATIENT_COLUMNS.map((column) => `p.${column} as patient_${column}` as const);

/**
 * The appointment by the service's id (or the partner's, when `byPartner`) with what its answer and
 * a patient update need, locked on PostgreSQL with its patient row until the transaction ends, so that
 * concurrent changes check their rules one after another. SQLite runs one transaction at a time on
 * its single connection.
 */
export async function findForUpdate(
  db: Db,
  dialect: DialectName,
  businessId: string,
  id: string,
  byPartner: boolean,
): Promise<LockedAppointment | undefined> {
  const key = byPartner ? 'a.partner_appointment_id' : 'a.id';
  // Kysely types each alias of a mapped selection as every column's type: the row type is stated.
  const locked = compiledOnce<Omit<LockedAppointment, 'scheduled'> & { scheduled: boolean | number }>(`locked ${dialect} ${byPartner}`, () =>
    views(db, BUSINESS)
      .select(LOCKED_SELECTION)
      .select((eb) =>
        eb
          .exists(
            eb
              .selectFrom('schedules as s')
              .select('s.id')
              .whereRef('s.business_id', '=', 'a.business_id')
              .whereRef('s.clinic_id', '=', 'a.clinic_id')
              .whereRef('s.doctor_id', '=', 'a.doctor_id'),
          )
          .as('scheduled'),
      )
      .where(key, '=', ID)
      .$if(dialect === 'postgres', (q) => q.forUpdate(['a', 'p'])),
  );
  // Bounded: an appointment whose view never matches would otherwise be read forever.
  for (let attempt = 0; attempt < 3; attempt++) {
    const row = await run(db, locked, businessId, id);
    // SQLite answers EXISTS as 0 or 1.
    if (row) {
      row.scheduled = Boolean(row.scheduled);
      return row as LockedAppointment;
    }
    // PostgreSQL rechecks a row changed while it waited for the lock against its new version: when
    // that change moved the appointment to another patient, the join no longer matches and the
    // read comes back empty although the appointment exists. A new read sees the committed move.
    const exists = await db
      .selectFrom('appointments as a')
      .select('a.id')
      .where('a.business_id', '=', businessId)
      .where(key, '=', id)
      .executeTakeFirst();
    if (!exists) return undefined;
  }
  return undefined;
}

/** Sent with the transaction's next statement, often its COMMIT (writeWithNext). */
export function updateAppointment(db: Db, businessId: string, id: string, changes: Partial<AppointmentRow>): Promise<void> {
  return writeWithNext(db, db.updateTable('appointments').set(changes).where('business_id', '=', businessId).where('id', '=', id));
}

function views(db: Db, businessId: string) {
  return joined(db).where('a.business_id', '=', businessId);
}

/** Appointments with their clinic, doctor and patient, of every business. */
function joined(db: Db) {
  return db
    .selectFrom('appointments as a')
    .innerJoin('clinics as c', 'c.id', 'a.clinic_id')
    .innerJoin('doctors as d', 'd.id', 'a.doctor_id')
    .innerJoin('patients as p', 'p.id', 'a.patient_id')
    .selectAll('a')
    .select(['c.partner_id as partner_clinic_id', 'd.partner_id as partner_doctor_id', 'p.partner_patient_id']);
}

export async function findView(
  db: Db,
  dialect: DialectName,
  businessId: string,
  id: string,
  byPartner: boolean,
): Promise<AppointmentView | undefined> {
  const query = compiledOnce(`view ${dialect} ${byPartner}`, () =>
    views(db, BUSINESS).where(byPartner ? 'a.partner_appointment_id' : 'a.id', '=', ID),
  );
  return run(db, query, businessId, id);
}

/*
 * The reads of one appointment are built and compiled once per dialect and shape, and run with the
 * request's values: building and compiling a query cost the server more than PostgreSQL takes to
 * run these. They are built with the placeholders below in place of the business and the id.
 */
const BUSINESS = '\u0000business';
const ID = '\u0000id';
const compiled = new Map<string, CompiledQuery>();

function compiledOnce<R>(key: string, build: () => { compile(): CompiledQuery<R> }): CompiledQuery<R> {
  let query = compiled.get(key);
  if (query === undefined) {
    query = build().compile();
    compiled.set(key, query);
  }
  return query as CompiledQuery<R>;
}

async function run<R>(db: Db, query: CompiledQuery<R>, businessId: string, id: string): Promise<R | undefined> {
  const parameters = query.parameters.map((value) => (value === BUSINESS ? businessId : value === ID ? id : value));
  const { rows } = await db.executeQuery(CompiledQuery.raw(query.sql, parameters) as CompiledQuery<R>);
  return rows[0];
}

/**
 * A page of appointments by start time. The page is chosen among the appointments alone, and only its rows
 * are joined to their clinic, doctor and patient: joined first, PostgreSQL joined and sorted every
 * appointment of the range (a whole day's) for each page of 50. So the clinic, doctor and patient filters,
 * which match the service's id or the partner's, read the ids they name first. Compiled once per dialect
 * and set of filters given (and count of statuses), as the reads of one appointment are.
 */
export async function listViews(db: Db, dialect: DialectName, businessId: string, filter: ListFilter): Promise<AppointmentView[]> {
  const given = (value: unknown) => (value === undefined ? '-' : '+');
  const { clinicId, doctorId, patientId, statuses, from, to } = filter;
  const shape = `list ${dialect} ${[clinicId, doctorId, patientId, from, to].map(given).join('')} ${statuses?.length ?? '-'}`;
  const query = compiledOnce(shape, () =>
    listQuery(db, BUSINESS, {
      clinicId: clinicId === undefined ? undefined : LISTED.clinicId,
      doctorId: doctorId === undefined ? undefined : LISTED.doctorId,
      patientId: patientId === undefined ? undefined : LISTED.patientId,
      statuses: statuses?.map((_, i) => `${LISTED.status}${i}`),
      // Placeholders too, strings where numbers go: the values replace them before the query runs.
      from: from === undefined ? undefined : (LISTED.from as unknown as number),
      to: to === undefined ? undefined : (LISTED.to as unknown as number),
      limit: LISTED.limit as unknown as number,
      offset: LISTED.offset as unknown as number,
    }),
  );
  const values = new Map<unknown, unknown>([
    [BUSINESS, businessId],
    [LISTED.clinicId, clinicId],
    [LISTED.doctorId, doctorId],
    [LISTED.patientId, patientId],
    [LISTED.from, from],
    [LISTED.to, to],
    [LISTED.limit, filter.limit],
    [LISTED.offset, filter.offset],
    ...(statuses ?? []).map((status, i) => [`${LISTED.status}${i}`, status] as const),
  ]);
  const parameters = query.parameters.map((value) => (values.has(value) ? values.get(value) : value));
  const { rows } = await db.executeQuery(CompiledQuery.raw(query.sql, parameters) as typeof query);
  return rows;
}

/** The listing's placeholders, one per value of its filter (`status` numbered, one per status). */
const LISTED = {
  clinicId: '\u0000clinic',
  doctorId: '\u0000doctor',
  patientId: '\u0000patient',
  status: '\u0000status',
  from: '\u0000from',
  to: '\u0000to',
  limit: '\u0000limit',
  offset: '\u0000offset',
} as const;

function listQuery(db: Db, businessId: string, filter: ListFilter) {
  const named = (table: 'clinics' | 'doctors', id: string) =>
    db
      .selectFrom(table)
      .select('id')
      .where('business_id', '=', businessId)
      .where((eb) => eb.or([eb('id', '=', id), eb('partner_id', '=', id)]));
  let page = db.selectFrom('appointments').select('id').where('business_id', '=', businessId);
  const { clinicId, doctorId, patientId } = filter;
  if (clinicId !== undefined) page = page.where((eb) => isAnyOfQuery(db, eb.ref('clinic_id'), named('clinics', clinicId)));
  if (doctorId !== undefined) page = page.where((eb) => isAnyOfQuery(db, eb.ref('doctor_id'), named('doctors', doctorId)));
  if (patientId !== undefined) {
    const patients = db
      .selectFrom('patients')
      .select('id')
      .where('business_id', '=', businessId)
      .where((eb) => eb.or([eb('id', '=', patientId), eb('partner_patient_id', '=', patientId)]));
    page = page.where((eb) => isAnyOfQuery(db, eb.ref('patient_id'), patients));
  }
  if (filter.statuses !== undefined) page = page.where('status', 'in', filter.statuses);
  if (filter.from !== undefined) page = page.where('start_time', '>=', filter.from);
  if (filter.to !== undefined) page = page.where('start_time', '<', filter.to);
  page = page.orderBy('start_time').orderBy('id').limit(filter.limit).offset(filter.offset);
  // The page holds the business's appointments only. Filtered on a.business_id once more, PostgreSQL
  // without statistics (a new database) planned a scan of the business's appointments for each row of the page.
  return joined(db).innerJoin(page.as('page'), 'page.id', 'a.id').orderBy('a.start_time').orderBy('a.id');
}

/** A patient's appointments, newest first, after the keyset position `before` (start_time, id). */
export async function listForPatient(
  db: Db,
  businessId: string,
  patientId: string,
  before: { startTime: number; id: string } | null,
  limit: number,
): Promise<AppointmentView[]> {
  let query = views(db, businessId).where('a.patient_id', '=', patientId);
  if (before !== null) {
    const { startTime, id } = before;
    query = query.where((eb) => eb.or([eb('a.start_time', '<', startTime), eb.and([eb('a.start_time', '=', startTime), eb('a.id', '<', id)])]));
  }
  return query.orderBy('a.start_time', 'desc').orderBy('a.id', 'desc').limit(limit).execute();
}

export async function reviewLinks(
  db: Db,
  businessId: string,
  clinicId: string,
  doctorId: string,
): Promise<{ clinic: string | null; doctor: string | null }> {
  const clinic = await db
    .selectFrom('clinics')
    .select('review_link')
    .where('business_id', '=', businessId)
    .where('id', '=', clinicId)
    .executeTakeFirst();
  const doctor = await db
    .selectFrom('doctors')
    .select('review_link')
    .where('business_id', '=', businessId)
    .where('id', '=', doctorId)
    .executeTakeFirst();
  return { clinic: clinic?.review_link ?? null, doctor: doctor?.review_link ?? null };
}

/** The statuses whose appointment holds its place in a slot: cancelled and rescheduled ones free it. */
export const HOLDING_STATUSES = ['BK', 'NS', 'CM'] as const;

/**
 * An appointment is long when it lasts more than a day: the short ones that hold a place in a slot
 * began at most this long before it, so their range on start_time stays bounded on both sides and the
 * doctor's index reads one day, not the doctor's history; the long ones (booked while the pair had no
 * schedule) are found apart, by the partial index `appointments_long_idx` (migration 0026) on when they end.
 */
const LONG_APPOINTMENT_MS = 86_400_000;

/**
 * The pair's appointments holding a place that overlap [from, to), as two disjoint queries: those that
 * began within a day of `from` (or after it), and the long ones that began before.
 */
function holding(db: Db, businessId: string, clinicId: string, doctorId: string, from: number, to: number) {
  const pair = db
    .selectFrom('appointments')
    .where('business_id', '=', businessId)
    .where('doctor_id', '=', doctorId)
    .where('clinic_id', '=', clinicId)
    .where('status', 'in', HOLDING_STATUSES)
    .where('end_time', '>', from);
  return {
    recent: pair.where('start_time', '<', to).where('start_time', '>', from - LONG_APPOINTMENT_MS),
    // The partial index's own condition, written as it is (no parameter), so that both databases use it.
    long: pair.where(sql<boolean>`end_time - start_time > ${sql.lit(LONG_APPOINTMENT_MS)}`).where('start_time', '<=', from - LONG_APPOINTMENT_MS),
  };
}

/** How many appointments of the pair holding a place overlap [start, end), other than `excludeId`. */
export async function countHolding(
  db: Db,
  businessId: string,
  clinicId: string,
  doctorId: string,
  start: number,
  end: number,
  excludeId: string | null,
): Promise<number> {
  const row = await db.selectNoFrom(heldCount(db, businessId, clinicId, doctorId, start, end, excludeId).as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The number of the pair's appointments holding a place that overlap [from, to), other than `excludeId`, as an expression. */
function heldCount(db: Db, businessId: string, clinicId: string, doctorId: string, from: number, to: number, excludeId: string | null) {
  const { recent, long } = holding(db, businessId, clinicId, doctorId, from, to);
  const count = (query: typeof recent) =>
    query.select((eb) => eb.fn.countAll().as('n')).$if(excludeId !== null, (q) => q.where('id', '<>', excludeId!));
  return sql<number>`(${count(recent)}) + (${count(long)})`;
}

/**
 * Writes the session's last counted token (schedules' `countTokenOn`, just before in the transaction)
 * to the appointment `id` if the pair's other appointments holding a place that overlap [start, end)
 * are fewer than `capacity`, in one statement; answers the token, or null when no place was left.
 */
export async function placeWithNextToken(
  db: Db,
  slot: { businessId: string; clinicId: string; doctorId: string; start: number; end: number; sessionStart: number },
  capacity: number,
  id: string,
): Promise<number | null> {
  const others = heldCount(db, slot.businessId, slot.clinicId, slot.doctorId, slot.start, slot.end, id);
  const counted = db
    .selectFrom('schedule_tokens')
    .select('last_token')
    .where('business_id', '=', slot.businessId)
    .where('clinic_id', '=', slot.clinicId)
    .where('doctor_id', '=', slot.doctorId)
    .where('session_start', '=', slot.sessionStart);
  const row = await db
    .updateTable('appointments')
    .set((eb) => ({ token: eb.selectFrom(counted.as('counted')).select('last_token') }))
    .where('business_id', '=', slot.businessId)
    .where('id', '=', id)
    .where((eb) => eb(others, '<', capacity))
    .returning('token')
    .executeTakeFirst();
  return row ? Number(row.token) : null;
}

/**
 * The times of the pair's appointments holding a place that overlap [from, to), with how many hold
 * each: appointments booked into slots share their times, so the rows grow with the slots, not with
 * the places taken.
 */
export async function holdingBetween(
  db: Db,
  businessId: string,
  clinicId: string,
  doctorId: string,
  from: number,
  to: number,
): Promise<Array<{ start: number; end: number; places: number }>> {
  const { recent, long } = holding(db, businessId, clinicId, doctorId, from, to);
  const grouped = (query: typeof recent) =>
    query.select((eb) => ['start_time', 'end_time', eb.fn.countAll<number>().as('places')]).groupBy(['start_time', 'end_time']);
  const rows = await grouped(recent).unionAll(grouped(long)).execute();
  return rows.map((row) => ({ start: Number(row.start_time), end: Number(row.end_time), places: Number(row.places) }));
}

/* ---- the patient compartment (src/compartment.ts) ---- */

/** Locks the patient's appointments until the transaction ends (PostgreSQL; SQLite runs one writer at a time). */
export async function lockAppointmentsOfPatient(db: Db, businessId: string, patientId: string): Promise<void> {
  if (!isPostgres(db)) return;
  await db.selectFrom('appointments').select('id').where('business_id', '=', businessId).where('patient_id', '=', patientId).forUpdate().execute();
}

/** A merge moves the duplicate's appointments to the survivor; answers how many moved. */
export async function moveAppointments(db: Db, businessId: string, from: string, to: string, now: number): Promise<number> {
  const result = await db
    .updateTable('appointments')
    .set({ patient_id: to, updated_at: now })
    .where('business_id', '=', businessId)
    .where('patient_id', '=', from)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** The appointments of the patients, by start time. */
export async function appointmentsOfPatients(db: Db, businessId: string, patientIds: string[]): Promise<AppointmentRow[]> {
  if (patientIds.length === 0) return [];
  return db
    .selectFrom('appointments')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('patient_id', 'in', patientIds)
    .orderBy('start_time')
    .orderBy('id')
    .execute();
}

/** Appointments keep their ids, clinic, doctor, times, status, mode and token; what they said of the person goes. */
export async function anonymiseAppointmentsOfPatients(db: Db, businessId: string, patientIds: string[], now: number): Promise<void> {
  if (patientIds.length === 0) return;
  await db
    .updateTable('appointments')
    .set({
      patient_details: '{}',
      custom_attributes: '{}',
      display_meta: '{}',
      partner_meta: '{}',
      video_connect: null,
      notes: null,
      updated_at: now,
    })
    .where('business_id', '=', businessId)
    .where('patient_id', 'in', patientIds)
    .execute();
}
