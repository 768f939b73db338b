/** The patient record in the shapes of Eka's two families: the doctor tool's and the patient directory's. */
import { addressOf, birthDate, currentAge, extrasOf, type PatientRow, splitMobile } from './service.ts';

const seconds = (ms: number) => Math.floor(Number(ms) / 1000);

/** `/dr/v1/patient/{patient_id}`: keys without a value are left out. */
export function drPatient(row: PatientRow, timeZone: string) {
  const address = addressOf(row);
  const age = row.dob === null ? currentAge(row, timeZone) : undefined;
  return {
    patient_id: row.id,
    ...(row.partner_patient_id !== null && { partner_patient_id: row.partner_patient_id }),
    ...(row.designation !== null && { designation: row.designation }),
    ...(row.first_name !== null && { first_name: row.first_name }),
    ...(row.middle_name !== null && { middle_name: row.middle_name }),
    ...(row.last_name !== null && { last_name: row.last_name }),
    ...(row.gender !== null && { gender: row.gender }),
    ...(row.dob !== null && { dob: row.dob }),
    ...(age !== undefined && { age }),
    ...(row.email !== null && { email: row.email }),
    ...(row.mobile !== null && { mobile: row.mobile }),
    ...(row.blood_group !== null && { blood_group: row.blood_group }),
    // Eka's doctor tool answers the pincode as a string.
    ...(address !== undefined && {
      address: { ...address, ...(address.pincode !== undefined && { pincode: String(address.pincode) }) } as Record<string, string>,
    }),
    ...(row.abha_number !== null && { abha_number: row.abha_number }),
    ...(row.abha_address !== null && { abha_address: row.abha_address }),
    partner_meta: extrasOf(row),
    archived: row.archived_at !== null,
    ...(row.merged_into !== null && { merged_into: row.merged_into }),
    created_at: seconds(row.created_at),
    updated_at: seconds(row.updated_at),
  };
}

function fullName(row: PatientRow): string | undefined {
  const name = [row.first_name, row.middle_name, row.last_name].filter((part) => part !== null && part !== '').join(' ');
  return name === '' ? undefined : name;
}

function phone(row: PatientRow) {
  if (row.mobile === null) return {};
  const { ccd, number } = splitMobile(row.mobile);
  return { mobile: number, ccd };
}

/** `/profiles/v1/patient/{oid}`: Eka's PatientProfile, plus abha_number, extras, arc and merged_into. */
export function profile(row: PatientRow, timeZone: string) {
  const dob = birthDate(row, timeZone);
  const fln = fullName(row);
  return {
    oid: row.id,
    wid: row.business_id,
    ps: 'P',
    c_ate: seconds(row.created_at),
    u_ate: seconds(row.updated_at),
    ...(row.gender !== null && { gen: row.gender }),
    ...(dob !== undefined && { dob, is_age: row.dob === null }),
    ...(row.first_name !== null && { fn: row.first_name }),
    ...(row.middle_name !== null && { mn: row.middle_name }),
    ...(row.last_name !== null && { ln: row.last_name }),
    ...(fln !== undefined && { fln }),
    ...(row.designation !== null && { s: row.designation }),
    ...(row.blood_group !== null && { bg: row.blood_group }),
    ...phone(row),
    ...(row.email !== null && { email: row.email }),
    ...(row.partner_patient_id !== null && { username: row.partner_patient_id }),
    ...(row.abha_address !== null && { abha: row.abha_address }),
    ...(row.abha_number !== null && { abha_number: row.abha_number }),
    extras: extrasOf(row),
    arc: row.archived_at !== null,
    ...(row.merged_into !== null && { merged_into: row.merged_into }),
  };
}

export type MinField = 'abha' | 'c_ate' | 'dob' | 'gen' | 'u_ate' | 'is_age';

/** `/profiles/v1/patient/minified/`: oid, mobile, username and fln always, the `select`ed fields, arc when asked. */
export function profileMin(row: PatientRow, timeZone: string, fields: Set<MinField>, withArc: boolean) {
  const dob = fields.has('dob') ? birthDate(row, timeZone) : undefined;
  const isAge = fields.has('is_age') && birthDate(row, timeZone) !== undefined ? row.dob === null : undefined;
  const fln = fullName(row);
  return {
    oid: row.id,
    wid: row.business_id,
    ...phone(row),
    ...(row.partner_patient_id !== null && { username: row.partner_patient_id }),
    ...(fln !== undefined && { fln }),
    ...(fields.has('abha') && row.abha_address !== null && { abha: row.abha_address }),
    ...(fields.has('c_ate') && { c_ate: seconds(row.created_at) }),
    ...(dob !== undefined && { dob }),
    ...(isAge !== undefined && { is_age: isAge }),
    ...(fields.has('gen') && row.gender !== null && { gen: row.gender }),
    ...(fields.has('u_ate') && { u_ate: seconds(row.updated_at) }),
    ...(withArc && { arc: row.archived_at !== null }),
  };
}

/** A look-up's match (by mobile, by ABHA): Eka's minimal profile, or the full one. */
export function match(row: PatientRow, timeZone: string, full: boolean) {
  if (full) return profile(row, timeZone);
  const dob = birthDate(row, timeZone);
  const fln = fullName(row);
  return {
    oid: row.id,
    ...(row.partner_patient_id !== null && { username: row.partner_patient_id }),
    ...(fln !== undefined && { fln }),
    ...(row.gender !== null && { gen: row.gender }),
    ...(dob !== undefined && { dob }),
    ...(row.abha_address !== null && { abha: row.abha_address }),
    ...(row.abha_number !== null && { abha_number: row.abha_number }),
    ...phone(row),
    ps: 'P',
    ...(row.archived_at !== null && { arc: true }),
  };
}

/** `/dr/v1/business/patients/search`: doc-tool.yaml's Patient, each field a string ('' when unknown). */
export function drSearchPatient(row: PatientRow, timeZone: string) {
  return {
    patient_id: row.id,
    name: fullName(row) ?? '',
    clinic_id: null,
    ...(row.partner_patient_id !== null && { partner_patient_id: row.partner_patient_id }),
    patient_profile: {
      patient_id: row.id,
      first_name: row.first_name ?? '',
      middle_name: row.middle_name ?? '',
      last_name: row.last_name ?? '',
      dob: birthDate(row, timeZone) ?? '',
      email: row.email ?? '',
      gen: row.gender ?? '',
      mobile: row.mobile ?? '',
      created_at: new Date(Number(row.created_at)).toISOString(),
    },
  };
}
