/**
 * Clinics and doctors (contract section 5): one logic over a descriptor of each kind. A write answers
 * every problem at once, in the DRF-style body of the clinics family: what the schema refused (the
 * route passes it in) together with the rules checked here (ids xor partner ids, unknown ids, blank
 * names, a partner_id already used).
 */
import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { inTransaction, isUniqueViolation, type Db } from '../../db/index.ts';
import { newId } from '../../db/ids.ts';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../errors.ts';
import * as repo from './repo.ts';
import type { ClinicCreate, DoctorCreate } from './schemas.ts';

export const PAGE_SIZE = 50;

/** Field -> messages, as the clinics family renders them. */
export type FieldProblems = Record<string, string[]>;

/** A clinic as the client creates it: the route's body schema's type. */
export type ClinicInput = Static<typeof ClinicCreate>;

/** A doctor as the client creates it: the route's body schema's type. */
export type DoctorInput = Static<typeof DoctorCreate>;

export interface ClinicView {
  id: string;
  name: string;
  address: string;
  pincode: string | null;
  contact: string | null;
  city: string | null;
  state: string | null;
  partner_id: string | null;
  review_link: string | null;
  doctors: Array<{ id: string; firstname: string; lastname: string; partner_id: string | null }>;
}

export interface DoctorView {
  id: string;
  firstname: string;
  lastname: string;
  gender: string | null;
  mobile: string | null;
  email: string | null;
  specialisations: string[];
  partner_id: string | null;
  review_link: string | null;
  clinic_ids: string[];
}

interface Kinds {
  clinic: { table: 'clinics'; input: ClinicInput; view: ClinicView };
  doctor: { table: 'doctors'; input: DoctorInput; view: DoctorView };
}
export type KindName = keyof Kinds;
type Input<K extends KindName> = Kinds[K]['input'];
type Row<K extends KindName> = Database[Kinds[K]['table']];
type View<K extends KindName> = Kinds[K]['view'];
type Field<K extends KindName> = keyof Input<K> & string;

/** What differs between a clinic and a doctor; the rules and the flow are shared. */
interface Kind<K extends KindName> {
  readonly name: K;
  readonly table: Kinds[K]['table'];
  readonly idPrefix: string;
  readonly notFound: string;
  /** Required text, never blank. */
  readonly names: ReadonlyArray<Field<K>>;
  /** Every text field, stored under its own name: trimmed, and null when sent blank or not at all. */
  readonly text: ReadonlyArray<Field<K>>;
  /** The other side of the assignments, named by service ids or by partner ids (one field of the two). */
  readonly other: { readonly kind: KindName; readonly ids: Field<K>; readonly partnerIds: Field<K> };
  readonly assignment: (id: string, otherId: string) => repo.Assignment;
  /** Columns other than text, from the fields sent; `creating` fills the ones not sent. */
  readonly columns?: (input: Partial<Input<K>>, creating: boolean) => Partial<Row<K>>;
  readonly views: (db: Db, businessId: string, rows: Array<Row<K>>) => Promise<Array<View<K>>>;
}

const KINDS: { readonly [K in KindName]: Kind<K> } = {
  clinic: {
    name: 'clinic',
    table: 'clinics',
    idPrefix: 'cli',
    notFound: 'Clinic not found',
    names: ['name', 'address'],
    text: ['name', 'address', 'partner_id', 'pincode', 'contact', 'city', 'state', 'review_link'],
    other: { kind: 'doctor', ids: 'doctor_ids', partnerIds: 'partner_doctor_ids' },
    assignment: (clinicId, doctorId) => ({ clinic_id: clinicId, doctor_id: doctorId }),
    async views(db, businessId, rows) {
      const doctors = await repo.doctorsOfClinics(
        db,
        businessId,
        rows.map((row) => row.id),
      );
      return rows.map((row) => ({
        id: row.id,
        name: row.name,
        address: row.address,
        pincode: row.pincode,
        contact: row.contact,
        city: row.city,
        state: row.state,
        partner_id: row.partner_id,
        review_link: row.review_link,
        doctors: doctors
          .filter((d) => d.clinic_id === row.id)
          .map((d) => ({ id: d.id, firstname: d.firstname, lastname: d.lastname, partner_id: d.partner_id })),
      }));
    },
  },
  doctor: {
    name: 'doctor',
    table: 'doctors',
    idPrefix: 'doc',
    notFound: 'Doctor not found',
    names: ['firstname', 'lastname'],
    text: ['firstname', 'lastname', 'partner_id', 'gender', 'mobile', 'email', 'review_link'],
    other: { kind: 'clinic', ids: 'clinic_ids', partnerIds: 'partner_clinic_ids' },
    assignment: (doctorId, clinicId) => ({ clinic_id: clinicId, doctor_id: doctorId }),
    columns: (input, creating) => {
      if (input.specialisations !== undefined) return { specialisations: JSON.stringify(distinct(input.specialisations)) };
      return creating ? { specialisations: '[]' } : {};
    },
    async views(db, businessId, rows) {
      const links = await repo.clinicIdsOfDoctors(
        db,
        businessId,
        rows.map((row) => row.id),
      );
      return rows.map((row) => ({
        id: row.id,
        firstname: row.firstname,
        lastname: row.lastname,
        gender: row.gender,
        mobile: row.mobile,
        email: row.email,
        specialisations: JSON.parse(row.specialisations) as string[],
        partner_id: row.partner_id,
        review_link: row.review_link,
        clinic_ids: links.filter((link) => link.doctor_id === row.id).map((link) => link.clinic_id),
      }));
    },
  },
};

class Problems {
  readonly fields: FieldProblems;
  constructor(initial: FieldProblems) {
    this.fields = Object.assign(Object.create(null) as FieldProblems, Object.fromEntries(Object.entries(initial).map(([k, v]) => [k, [...v]])));
  }
  add(field: string, message: string): void {
    (this.fields[field] ??= []).push(message);
  }
  has(field: string): boolean {
    return (this.fields[field]?.length ?? 0) > 0;
  }
  /** A problem with the field or with a part of it (`clinic_ids.0`, as the schema names an item). */
  hasWithin(field: string): boolean {
    return this.has(field) || Object.keys(this.fields).some((key) => key.startsWith(`${field}.`) && this.has(key));
  }
  throwIfAny(): void {
    const entries = Object.entries(this.fields);
    if (entries.length === 0) return;
    const [field, messages] = entries[0]!;
    throw new AppError(400, field === 'message' ? messages[0]! : `${field}: ${messages[0]}`, { fields: this.fields, code: 'INVALID_REQUEST' });
  }
}

function distinct(values: readonly string[]): string[] {
  return [...new Set(values)];
}

/** Text as stored: trimmed, and null when blank. */
function stored(value: string): string | null {
  return value.trim() || null;
}

/** The text and other columns of the fields sent. */
function columnsOf<K extends KindName>(kind: Kind<K>, input: Partial<Input<K>>, creating: boolean): Partial<Row<K>> {
  const columns: Record<string, string | null> = {};
  for (const field of kind.text) {
    const value = input[field] as string | undefined;
    if (value !== undefined) columns[field] = stored(value);
    else if (creating) columns[field] = null;
  }
  return { ...columns, ...kind.columns?.(input, creating) } as Partial<Row<K>>;
}

export interface PlacementInput {
  clinic_id?: string;
  partner_clinic_id?: string;
  doctor_id?: string;
  partner_doctor_id?: string;
}

/** The service ids found for the ids sent (null: not sent, or unknown), and the partner id of each found. */
export interface Placement {
  clinic: { byId: string | null; byPartner: string | null; partnerId: string | null };
  doctor: { byId: string | null; byPartner: string | null; partnerId: string | null };
  assigned: boolean;
}

export interface ClinicServiceDeps {
  db: Kysely<Database>;
}

export class ClinicService {
  readonly #deps: ClinicServiceDeps;
  constructor(deps: ClinicServiceDeps) {
    this.#deps = deps;
  }

  /**
   * `refused` is what the schema refused of the body (field -> messages): when there is any, the
   * input is as sent, the rules here skip the fields refused, and the call ends in a 400 naming it all.
   */
  async create<K extends KindName>(name: K, businessId: string, input: Input<K>, refused: FieldProblems = {}): Promise<string> {
    const kind: Kind<K> = KINDS[name];
    const id = newId(kind.idPrefix);
    await this.#guardPartnerId(name, () =>
      inTransaction(this.#deps.db, async (trx) => {
        const others = await this.#check(trx, kind, businessId, input, refused);
        const now = Date.now();
        await repo.insert(trx, kind.table, {
          ...columnsOf(kind, input, true),
          id,
          business_id: businessId,
          created_at: now,
          updated_at: now,
        } as Row<K>);
        await repo.assign(
          trx,
          businessId,
          others.map((otherId) => kind.assignment(id, otherId)),
        );
      }),
    );
    return id;
  }

  /** Changes the fields sent and adds the assignments sent; the input is checked before existence. */
  async update<K extends KindName>(
    name: K,
    businessId: string,
    id: string,
    byPartner: boolean,
    input: Partial<Input<K>>,
    refused: FieldProblems = {},
  ): Promise<View<K>> {
    const kind: Kind<K> = KINDS[name];
    const row = await this.#guardPartnerId(name, () =>
      inTransaction(this.#deps.db, async (trx) => {
        const row = await repo.find(trx, kind.table, businessId, id, byPartner);
        const others = await this.#check(trx, kind, businessId, input, refused, row?.id);
        if (!row) throw AppError.notFound(kind.notFound);
        const changes = columnsOf(kind, input, false);
        if (Object.keys(changes).length > 0) await repo.update(trx, kind.table, businessId, row.id, { ...changes, updated_at: Date.now() });
        await repo.assign(
          trx,
          businessId,
          others.map((otherId) => kind.assignment(row.id, otherId)),
        );
        return row;
      }),
    );
    return this.get(name, businessId, row.id, false);
  }

  async get<K extends KindName>(name: K, businessId: string, id: string, byPartner: boolean): Promise<View<K>> {
    const kind: Kind<K> = KINDS[name];
    const row = await repo.find(this.#deps.db, kind.table, businessId, id, byPartner);
    if (!row) throw AppError.notFound(kind.notFound);
    return (await kind.views(this.#deps.db, businessId, [row]))[0]!;
  }

  async list<K extends KindName>(name: K, businessId: string, pageNo: number): Promise<Array<View<K>>> {
    const kind: Kind<K> = KINDS[name];
    const rows = await repo.list(this.#deps.db, kind.table, businessId, { limit: PAGE_SIZE, offset: pageNo * PAGE_SIZE });
    return kind.views(this.#deps.db, businessId, rows);
  }

  /**
   * A soft delete: the record is then unknown to every read, write and booking, its assignments are
   * removed, and the appointments that name it keep reading as they were. Refused (409) while an
   * appointment not cancelled and not yet over names it. The row is locked first, so a booking in
   * flight either commits before (and is seen here) or finds the record gone (see `repo.placement`).
   */
  async delete(name: KindName, businessId: string, id: string, byPartner: boolean): Promise<void> {
    const kind = KINDS[name];
    await inTransaction(this.#deps.db, async (trx) => {
      const row = await repo.find(trx, kind.table, businessId, id, byPartner, true);
      if (!row) throw AppError.notFound(kind.notFound);
      const now = Date.now();
      if (await repo.hasUpcomingAppointment(trx, kind.table, businessId, row.id, now)) {
        throw AppError.conflict(`This ${name} has upcoming appointments that are not cancelled: cancel them first.`);
      }
      await repo.softDelete(trx, kind.table, businessId, row.id, now);
    });
  }

  /**
   * The clinic and doctor a booking names, each by the service's id and/or the partner's (undefined:
   * not sent): the service ids found for each id sent, and whether the clinic and doctor found are
   * assigned; one statement in the caller's transaction.
   */
  async placement(trx: Db, businessId: string, sent: PlacementInput): Promise<Placement> {
    const row = await repo.placement(trx, businessId, {
      clinicId: sent.clinic_id ?? null,
      partnerClinicId: sent.partner_clinic_id ?? null,
      doctorId: sent.doctor_id ?? null,
      partnerDoctorId: sent.partner_doctor_id ?? null,
    });
    return {
      clinic: { byId: row.clinic_by_id, byPartner: row.clinic_by_partner, partnerId: row.clinic_partner_id },
      doctor: { byId: row.doctor_by_id, byPartner: row.doctor_by_partner, partnerId: row.doctor_partner_id },
      assigned: Boolean(row.assigned),
    };
  }

  /**
   * The rules of a write, reported with what the schema refused; answers the service ids of the other
   * kind to assign. `selfId` is the record being changed, which keeps its own partner_id.
   */
  async #check<K extends KindName>(
    trx: Db,
    kind: Kind<K>,
    businessId: string,
    input: Partial<Input<K>>,
    refused: FieldProblems,
    selfId?: string,
  ): Promise<string[]> {
    const problems = new Problems(refused);
    const value = (field: Field<K> | 'partner_id') => (input as Record<string, unknown>)[field];
    for (const field of [...kind.names, 'partner_id'] as const) {
      const text = value(field);
      if (typeof text === 'string' && text.trim() === '' && !problems.has(field)) problems.add(field, 'This field may not be blank.');
    }
    const others = await this.#resolveOthers(trx, kind, businessId, input, problems);
    const sentPartnerId = value('partner_id');
    const partnerId = typeof sentPartnerId === 'string' ? stored(sentPartnerId) : null;
    if (partnerId && !problems.has('partner_id') && (await repo.partnerIdTaken(trx, kind.table, businessId, partnerId, selfId))) {
      problems.add('partner_id', `A ${kind.name} with this partner_id already exists.`);
    }
    problems.throwIfAny();
    return others;
  }

  /** The ids xor the partner ids of the other kind, as service ids; unknown ones are reported under the field that named them. */
  async #resolveOthers<K extends KindName>(
    trx: Db,
    kind: Kind<K>,
    businessId: string,
    input: Partial<Input<K>>,
    problems: Problems,
  ): Promise<string[]> {
    const { ids, partnerIds } = kind.other;
    const sent = [ids, partnerIds].filter((field) => input[field] !== undefined);
    if (sent.length === 2) {
      problems.add('message', `Only one of ${ids} or ${partnerIds} should be provided, not both.`);
      return [];
    }
    const field = sent[0];
    // A list the schema refused, whole or an item of it (not a string, a NUL, an unpaired surrogate), is
    // reported as such and never looked up: PostgreSQL refuses a NUL in a query's text (500).
    if (!field || problems.hasWithin(field)) return [];
    const wanted = input[field] as unknown[];
    if (!wanted.every((item) => typeof item === 'string')) return [];
    const byPartner = field === partnerIds;
    const found = await repo.byIds(trx, KINDS[kind.other.kind].table, businessId, distinct(wanted as string[]), byPartner);
    const known = new Set(found.map((row) => (byPartner ? row.partner_id : row.id)));
    for (const id of distinct(wanted as string[])) {
      if (!known.has(id)) problems.add(field, `Unknown ${byPartner ? 'partner ' : ''}${kind.other.kind} id: ${id}`);
    }
    return found.map((row) => row.id);
  }

  /** Two writers racing for one partner_id: the unique index decides, and the loser hears why. */
  async #guardPartnerId<T>(kind: KindName, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      const message = `A ${kind} with this partner_id already exists.`;
      throw new AppError(400, `partner_id: ${message}`, { fields: { partner_id: [message] }, code: 'INVALID_REQUEST' });
    }
  }
}
