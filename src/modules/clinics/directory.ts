/**
 * Eka's directory reads (`doc-tool.yaml`: `/dr/v1/business/clinic/{clinic_id}`, `/dr/v1/doctor/{doctor_id}`,
 * `/dr/v1/business/entities`) over the clinics and doctors of this module. Eka's shapes hold fields the
 * service does not keep (coordinates, degrees, languages, photos): a field Eka requires is sent empty,
 * an optional one is left out, and so is every null.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../errors.ts';
import type { BusinessService } from '../businesses/service.ts';
import * as repo from './repo.ts';

export interface EkaClinicAddress {
  line1: string;
  city?: string;
  state?: string;
  pincode?: string;
}

export interface EkaClinic {
  clinic_id: string;
  partner_id?: string;
  name: string;
  address: EkaClinicAddress;
}

export interface EkaDoctorClinic {
  id: string;
  partner_id?: string;
  name: string;
  contacts: Array<{ name: string; number: string }>;
  address: { line1: string; city: string; country: string; state: string; pin: string };
}

export interface EkaDoctor {
  id: string;
  partner_id?: string;
  profile: {
    personal: { salutation: string; first_name: string; middle_name: string; last_name: string; dob: string; gender: string; email?: string };
    professional: {
      active: boolean;
      about: string;
      language: Array<{ code: string; language: string }>;
      degree: Array<{ name: string; branch_name: string; college_name: string; start_year: string; end_year: string }>;
      major_speciality: { name: string; code: string };
      speciality: Array<{ name: string }>;
      clinics: EkaDoctorClinic[];
      default_clinic: string;
    };
  };
}

export interface EkaEntities {
  clinics: Array<{ clinic_id: string; partner_id?: string; name: string; doctors: string[] }>;
  doctors: Array<{ doctor_id: string; partner_id?: string; name: string }>;
  business: { business_id: string; name: string };
}

const partner = (id: string | null) => (id === null ? {} : { partner_id: id });

/** Eka names a doctor with the salutation, as in its entities example ("Dr. GP Physician"). */
const doctorName = (row: repo.DoctorRow) => `Dr. ${row.firstname} ${row.lastname}`;

function clinicOf(row: repo.ClinicRow): EkaClinic {
  return {
    clinic_id: row.id,
    ...partner(row.partner_id),
    name: row.name,
    address: {
      line1: row.address,
      ...(row.city !== null && { city: row.city }),
      ...(row.state !== null && { state: row.state }),
      ...(row.pincode !== null && { pincode: row.pincode }),
    },
  };
}

function doctorClinicOf(row: repo.ClinicRow): EkaDoctorClinic {
  return {
    id: row.id,
    ...partner(row.partner_id),
    name: row.name,
    contacts: row.contact === null ? [] : [{ name: 'Phone', number: row.contact }],
    address: { line1: row.address, city: row.city ?? '', country: '', state: row.state ?? '', pin: row.pincode ?? '' },
  };
}

function doctorOf(row: repo.DoctorRow, clinics: repo.ClinicRow[]): EkaDoctor {
  const specialisations = JSON.parse(row.specialisations) as string[];
  return {
    id: row.id,
    ...partner(row.partner_id),
    profile: {
      personal: {
        salutation: 'Dr.',
        first_name: row.firstname,
        middle_name: '',
        last_name: row.lastname,
        dob: '',
        gender: row.gender ?? '',
        ...(row.email !== null && { email: row.email }),
      },
      professional: {
        active: true,
        about: '',
        language: [],
        degree: [],
        major_speciality: { name: specialisations[0] ?? '', code: '' },
        speciality: specialisations.map((name) => ({ name })),
        clinics: clinics.map(doctorClinicOf),
        default_clinic: clinics[0]?.id ?? '',
      },
    },
  };
}

export interface DirectoryServiceDeps {
  db: Kysely<Database>;
  businesses: BusinessService;
}

export class DirectoryService {
  readonly #deps: DirectoryServiceDeps;
  constructor(deps: DirectoryServiceDeps) {
    this.#deps = deps;
  }

  async clinic(businessId: string, id: string, byPartner: boolean): Promise<EkaClinic> {
    const row = await repo.find(this.#deps.db, 'clinics', businessId, id, byPartner);
    if (!row) throw AppError.notFound('Clinic not found', 'NOT_FOUND');
    return clinicOf(row);
  }

  async doctor(businessId: string, id: string, byPartner: boolean): Promise<EkaDoctor> {
    const db = this.#deps.db;
    const row = await repo.find(db, 'doctors', businessId, id, byPartner);
    if (!row) throw AppError.notFound('Doctor not found', 'NOT_FOUND');
    const links = await repo.clinicIdsOfDoctors(db, businessId, [row.id]);
    const rows = new Map(
      (
        await repo.clinicsByIds(
          db,
          businessId,
          links.map((link) => link.clinic_id),
        )
      ).map((clinic) => [clinic.id, clinic]),
    );
    return doctorOf(
      row,
      links.flatMap((link) => rows.get(link.clinic_id) ?? []),
    );
  }

  /** Every clinic and doctor of the business, oldest first, with each clinic's doctors. */
  async entities(businessId: string): Promise<EkaEntities> {
    const db = this.#deps.db;
    const [clinics, doctors, assignments, business] = await Promise.all([
      repo.list(db, 'clinics', businessId),
      repo.list(db, 'doctors', businessId),
      repo.businessAssignments(db, businessId),
      this.#deps.businesses.find(businessId),
    ]);
    const doctorsOf = new Map<string, string[]>();
    for (const { clinic_id, doctor_id } of assignments) {
      const ids = doctorsOf.get(clinic_id);
      if (ids) ids.push(doctor_id);
      else doctorsOf.set(clinic_id, [doctor_id]);
    }
    return {
      clinics: clinics.map((row) => ({ clinic_id: row.id, ...partner(row.partner_id), name: row.name, doctors: doctorsOf.get(row.id) ?? [] })),
      doctors: doctors.map((row) => ({ doctor_id: row.id, ...partner(row.partner_id), name: doctorName(row) })),
      business: { business_id: businessId, name: business?.name ?? '' },
    };
  }
}
