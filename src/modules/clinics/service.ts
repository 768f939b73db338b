/**
 * Clinics and doctors (contract section 5). Validation reports every problem at once, in the
 * DRF-style body of the clinics family: the schema's findings (passed in by the route) merged with
 * the cross-field rules checked here (doctor_ids xor partner_doctor_ids, unknown ids, a partner_id
 * already used).
 */
import type { Kysely } from 'kysely';
import { inTransaction, isUniqueViolation, type Db } from '../../db/index.ts';
import { newId } from '../../db/ids.ts';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../errors.ts';
import * as repo from './repo.ts';

export const PAGE_SIZE = 50;

export type FieldProblems = Record<string, string[]>;

class Problems {
  readonly fields: FieldProblems;
  constructor(initial: FieldProblems = {}) {
    this.fields = Object.assign(Object.create(null) as FieldProblems, Object.fromEntries(Object.entries(initial).map(([k, v]) => [k, [...v]])));
  }
  add(field: string, message: string): void {
    (this.fields[field] ??= []).push(message);
  }
  has(field: string): boolean {
    return (this.fields[field]?.length ?? 0) > 0;
  }
  throwIfAny(): void {
    const entries = Object.entries(this.fields);
    if (entries.length === 0) return;
    const [field, messages] = entries[0]!;
    throw new AppError(400, field === 'message' ? messages[0]! : `${field}: ${messages[0]}`, { fields: this.fields, code: 'INVALID_REQUEST' });
  }
}

type Body = Record<string, unknown>;

function asBody(value: unknown): Body {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Body) : {};
}

function stringList(value: unknown): string[] | null {
  return Array.isArray(value) && value.every((v) => typeof v === 'string') ? [...new Set(value as string[])] : null;
}

/** Required text that the schema let through as a string must not be blank (DRF's wording). */
function checkBlank(problems: Problems, body: Body, fields: readonly string[]): void {
  for (const field of fields) {
    const value = body[field];
    if (typeof value === 'string' && value.trim() === '' && !problems.has(field)) problems.add(field, 'This field may not be blank.');
  }
}

function optionalText(body: Body, field: string): string | null | undefined {
  const value = body[field];
  return typeof value === 'string' ? value.trim() || null : undefined;
}

interface Link {
  /** Service ids of the other side to assign (already checked to exist in the business). */
  ids: string[];
}

/**
 * Resolves `idsField` xor `partnerField` to service ids of `kind`, reporting unknown ones under the
 * field that named them.
 */
async function resolveLinks(db: Db, businessId: string, body: Body, problems: Problems, kind: 'doctor' | 'clinic', idsField: string, partnerField: string): Promise<Link> {
  const given = [idsField, partnerField].filter((field) => body[field] !== undefined);
  if (given.length === 2) {
    problems.add('message', `Only one of ${idsField} or ${partnerField} should be provided, not both.`);
    return { ids: [] };
  }
  const field = given[0];
  // A list the schema refused (too long, not strings) is reported as such and never looked up.
  if (!field || problems.has(field)) return { ids: [] };
  const wanted = stringList(body[field]);
  if (!wanted) return { ids: [] };
  const byPartner = field === partnerField;
  const lookup = kind === 'doctor' ? repo.doctorsByIds : repo.clinicsByIds;
  const found = await lookup(db, businessId, wanted, byPartner);
  const known = new Set(found.map((row) => (byPartner ? row.partner_id : row.id)));
  for (const id of wanted) {
    if (!known.has(id)) problems.add(field, `Unknown ${byPartner ? 'partner ' : ''}${kind} id: ${id}`);
  }
  return { ids: found.map((row) => row.id) };
}

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

const CLINIC_TEXT = ['pincode', 'contact', 'city', 'state', 'review_link'] as const;
const DOCTOR_TEXT = ['gender', 'mobile', 'email', 'review_link'] as const;

export class ClinicService {
  readonly db: Kysely<Database>;
  constructor(db: Kysely<Database>) {
    this.db = db;
  }

  async createClinic(businessId: string, rawBody: unknown, schemaProblems: FieldProblems = {}): Promise<string> {
    const body = asBody(rawBody);
    const id = newId('cli');
    await this.guardPartnerId('clinic', () => inTransaction(this.db, async (trx) => {
      const problems = new Problems(schemaProblems);
      checkBlank(problems, body, ['name', 'address', 'partner_id']);
      const doctors = await resolveLinks(trx, businessId, body, problems, 'doctor', 'doctor_ids', 'partner_doctor_ids');
      const partnerId = optionalText(body, 'partner_id');
      if (partnerId && !problems.has('partner_id') && (await repo.clinicPartnerIdTaken(trx, businessId, partnerId))) {
        problems.add('partner_id', 'A clinic with this partner_id already exists.');
      }
      problems.throwIfAny();
      const now = Date.now();
      await repo.insertClinic(trx, {
        id,
        business_id: businessId,
        partner_id: partnerId ?? null,
        name: String(body.name).trim(),
        address: String(body.address).trim(),
        pincode: optionalText(body, 'pincode') ?? null,
        contact: optionalText(body, 'contact') ?? null,
        city: optionalText(body, 'city') ?? null,
        state: optionalText(body, 'state') ?? null,
        review_link: optionalText(body, 'review_link') ?? null,
        created_at: now,
        updated_at: now,
      });
      await repo.assign(trx, businessId, doctors.ids.map((doctorId) => ({ clinic_id: id, doctor_id: doctorId })));
    }));
    return id;
  }

  async updateClinic(businessId: string, id: string, byPartner: boolean, rawBody: unknown, schemaProblems: FieldProblems = {}): Promise<ClinicView> {
    const body = asBody(rawBody);
    await this.guardPartnerId('clinic', () => inTransaction(this.db, async (trx) => {
      const clinic = await repo.findClinic(trx, businessId, id, byPartner);
      const problems = new Problems(schemaProblems);
      checkBlank(problems, body, ['name', 'address', 'partner_id']);
      const doctors = await resolveLinks(trx, businessId, body, problems, 'doctor', 'doctor_ids', 'partner_doctor_ids');
      const partnerId = optionalText(body, 'partner_id');
      if (partnerId && !problems.has('partner_id') && (await repo.clinicPartnerIdTaken(trx, businessId, partnerId, clinic?.id))) {
        problems.add('partner_id', 'A clinic with this partner_id already exists.');
      }
      problems.throwIfAny();
      if (!clinic) throw AppError.notFound('Clinic not found');
      const changes: Partial<repo.ClinicRow> = {};
      for (const field of ['name', 'address', 'partner_id', ...CLINIC_TEXT] as const) {
        const value = optionalText(body, field);
        if (value !== undefined) (changes as Record<string, unknown>)[field] = value;
      }
      if (Object.keys(changes).length > 0) await repo.updateClinic(trx, businessId, clinic.id, { ...changes, updated_at: Date.now() });
      await repo.assign(trx, businessId, doctors.ids.map((doctorId) => ({ clinic_id: clinic.id, doctor_id: doctorId })));
      id = clinic.id;
    }));
    return (await this.getClinic(businessId, id, false));
  }

  async getClinic(businessId: string, id: string, byPartner: boolean): Promise<ClinicView> {
    const clinic = await repo.findClinic(this.db, businessId, id, byPartner);
    if (!clinic) throw AppError.notFound('Clinic not found');
    return (await this.clinicViews(businessId, [clinic]))[0]!;
  }

  async listClinics(businessId: string, pageNo: number): Promise<ClinicView[]> {
    const rows = await repo.listClinics(this.db, businessId, PAGE_SIZE, pageNo * PAGE_SIZE);
    return this.clinicViews(businessId, rows);
  }

  private async clinicViews(businessId: string, rows: repo.ClinicRow[]): Promise<ClinicView[]> {
    const doctors = await repo.doctorsOfClinics(this.db, businessId, rows.map((row) => row.id));
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
      doctors: doctors.filter((d) => d.clinic_id === row.id)
        .map((d) => ({ id: d.id, firstname: d.firstname, lastname: d.lastname, partner_id: d.partner_id })),
    }));
  }

  async createDoctor(businessId: string, rawBody: unknown, schemaProblems: FieldProblems = {}): Promise<string> {
    const body = asBody(rawBody);
    const id = newId('doc');
    await this.guardPartnerId('doctor', () => inTransaction(this.db, async (trx) => {
      const problems = new Problems(schemaProblems);
      checkBlank(problems, body, ['firstname', 'lastname', 'partner_id']);
      const clinics = await resolveLinks(trx, businessId, body, problems, 'clinic', 'clinic_ids', 'partner_clinic_ids');
      const partnerId = optionalText(body, 'partner_id');
      if (partnerId && !problems.has('partner_id') && (await repo.doctorPartnerIdTaken(trx, businessId, partnerId))) {
        problems.add('partner_id', 'A doctor with this partner_id already exists.');
      }
      problems.throwIfAny();
      const now = Date.now();
      await repo.insertDoctor(trx, {
        id,
        business_id: businessId,
        partner_id: partnerId ?? null,
        firstname: String(body.firstname).trim(),
        lastname: String(body.lastname).trim(),
        gender: optionalText(body, 'gender') ?? null,
        mobile: optionalText(body, 'mobile') ?? null,
        email: optionalText(body, 'email') ?? null,
        specialisations: JSON.stringify(stringList(body.specialisations) ?? []),
        review_link: optionalText(body, 'review_link') ?? null,
        created_at: now,
        updated_at: now,
      });
      await repo.assign(trx, businessId, clinics.ids.map((clinicId) => ({ clinic_id: clinicId, doctor_id: id })));
    }));
    return id;
  }

  async updateDoctor(businessId: string, id: string, byPartner: boolean, rawBody: unknown, schemaProblems: FieldProblems = {}): Promise<DoctorView> {
    const body = asBody(rawBody);
    await this.guardPartnerId('doctor', () => inTransaction(this.db, async (trx) => {
      const doctor = await repo.findDoctor(trx, businessId, id, byPartner);
      const problems = new Problems(schemaProblems);
      checkBlank(problems, body, ['firstname', 'lastname', 'partner_id']);
      const clinics = await resolveLinks(trx, businessId, body, problems, 'clinic', 'clinic_ids', 'partner_clinic_ids');
      const partnerId = optionalText(body, 'partner_id');
      if (partnerId && !problems.has('partner_id') && (await repo.doctorPartnerIdTaken(trx, businessId, partnerId, doctor?.id))) {
        problems.add('partner_id', 'A doctor with this partner_id already exists.');
      }
      problems.throwIfAny();
      if (!doctor) throw AppError.notFound('Doctor not found');
      const changes: Partial<repo.DoctorRow> = {};
      for (const field of ['firstname', 'lastname', 'partner_id', ...DOCTOR_TEXT] as const) {
        const value = optionalText(body, field);
        if (value !== undefined) (changes as Record<string, unknown>)[field] = value;
      }
      const specialisations = stringList(body.specialisations);
      if (specialisations) changes.specialisations = JSON.stringify(specialisations);
      if (Object.keys(changes).length > 0) await repo.updateDoctor(trx, businessId, doctor.id, { ...changes, updated_at: Date.now() });
      await repo.assign(trx, businessId, clinics.ids.map((clinicId) => ({ clinic_id: clinicId, doctor_id: doctor.id })));
      id = doctor.id;
    }));
    return this.getDoctor(businessId, id, false);
  }

  async getDoctor(businessId: string, id: string, byPartner: boolean): Promise<DoctorView> {
    const doctor = await repo.findDoctor(this.db, businessId, id, byPartner);
    if (!doctor) throw AppError.notFound('Doctor not found');
    return (await this.doctorViews(businessId, [doctor]))[0]!;
  }

  async listDoctors(businessId: string, pageNo: number): Promise<DoctorView[]> {
    const rows = await repo.listDoctors(this.db, businessId, PAGE_SIZE, pageNo * PAGE_SIZE);
    return this.doctorViews(businessId, rows);
  }

  private async doctorViews(businessId: string, rows: repo.DoctorRow[]): Promise<DoctorView[]> {
    const links = await repo.clinicIdsOfDoctors(this.db, businessId, rows.map((row) => row.id));
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
  }

  /** Two writers racing for one partner_id: the unique index decides, and the loser hears why. */
  private async guardPartnerId(kind: 'clinic' | 'doctor', work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      const message = `A ${kind} with this partner_id already exists.`;
      throw new AppError(400, `partner_id: ${message}`, { fields: { partner_id: [message] }, code: 'INVALID_REQUEST' });
    }
  }
}
