/**
 * Eka's directory reads (`doc-tool.yaml`: `/dr/v1/business/clinic/{clinic_id}`, `/dr/v1/doctor/{doctor_id}`,
 * `/dr/v1/business/entities`) over the clinics and doctors of this module. Eka's shapes hold fields the
 * service does not keep (coordinates, degrees, languages, photos): a field Eka requires is sent empty,
 * an optional one is left out, and so is every null.
 */
import type { Kysely } from 'kysely';
import { type Static, Type } from 'typebox';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../errors.ts';
import type { BusinessService } from '../businesses/service.ts';
import * as repo from './repo.ts';

/* Eka's shapes (doc-tool.yaml); partner_id is the service's addition, where the record has one. */
const PartnerId = Type.Optional(Type.String());
export const EkaClinic = Type.Object({
  clinic_id: Type.String(),
  partner_id: PartnerId,
  name: Type.String(),
  address: Type.Object({
    line1: Type.String(),
    city: Type.Optional(Type.String()),
    state: Type.Optional(Type.String()),
    pincode: Type.Optional(Type.String()),
  }),
});
export const EkaClinicRead = Type.Object({ success: Type.Literal(true), data: Type.Object({ clinic: EkaClinic }) });
export const EkaDoctorRead = Type.Object({
  id: Type.String(),
  partner_id: PartnerId,
  profile: Type.Object({
    personal: Type.Object({
      salutation: Type.String(),
      first_name: Type.String(),
      middle_name: Type.String(),
      last_name: Type.String(),
      dob: Type.String({ description: 'Not kept: always empty' }),
      gender: Type.String(),
      email: Type.Optional(Type.String()),
    }),
    professional: Type.Object({
      active: Type.Boolean(),
      about: Type.String(),
      language: Type.Array(Type.Object({ code: Type.String(), language: Type.String() })),
      degree: Type.Array(
        Type.Object({
          name: Type.String(),
          branch_name: Type.String(),
          college_name: Type.String(),
          start_year: Type.String(),
          end_year: Type.String(),
        }),
      ),
      major_speciality: Type.Object({ name: Type.String({ description: 'The first specialisation' }), code: Type.String() }),
      speciality: Type.Array(Type.Object({ name: Type.String() })),
      clinics: Type.Array(
        Type.Object({
          id: Type.String(),
          partner_id: PartnerId,
          name: Type.String(),
          contacts: Type.Array(Type.Object({ name: Type.String(), number: Type.String() })),
          address: Type.Object({ line1: Type.String(), city: Type.String(), country: Type.String(), state: Type.String(), pin: Type.String() }),
        }),
      ),
      default_clinic: Type.String({ description: 'The first clinic assigned, or empty' }),
    }),
  }),
});
export const EkaEntities = Type.Object({
  status_code: Type.Literal(200),
  success: Type.Literal(true),
  data: Type.Object({
    clinics: Type.Array(Type.Object({ clinic_id: Type.String(), partner_id: PartnerId, name: Type.String(), doctors: Type.Array(Type.String()) })),
    doctors: Type.Array(
      Type.Object({
        doctor_id: Type.String(),
        partner_id: PartnerId,
        name: Type.String(),
        clinics: Type.Array(Type.Object({ clinic_id: Type.String(), name: Type.String() }), {
          description:
            "The doctor's clinics, as eka-mcp-sdk's doctor profile reads them (Eka's example leaves it out; clinics[].doctors says the same)",
        }),
      }),
    ),
    business: Type.Object({ business_id: Type.String(), name: Type.String() }),
  }),
});

export type EkaClinic = Static<typeof EkaClinic>;
export type EkaDoctor = Static<typeof EkaDoctorRead>;
type EkaDoctorClinic = EkaDoctor['profile']['professional']['clinics'][number];
type EkaEntitiesData = Static<typeof EkaEntities>['data'];

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
  async entities(businessId: string): Promise<EkaEntitiesData> {
    const db = this.#deps.db;
    const [clinics, doctors, assignments, business] = await Promise.all([
      repo.list(db, 'clinics', businessId),
      repo.list(db, 'doctors', businessId),
      repo.businessAssignments(db, businessId),
      this.#deps.businesses.find(businessId),
    ]);
    const doctorsOf = new Map<string, string[]>();
    const clinicsOf = new Map<string, Array<{ clinic_id: string; name: string }>>();
    const clinicNames = new Map(clinics.map((row) => [row.id, row.name]));
    const add = <V>(map: Map<string, V[]>, key: string, value: V) => {
      const values = map.get(key);
      if (values) values.push(value);
      else map.set(key, [value]);
    };
    for (const { clinic_id, doctor_id } of assignments) {
      add(doctorsOf, clinic_id, doctor_id);
      const name = clinicNames.get(clinic_id);
      if (name !== undefined) add(clinicsOf, doctor_id, { clinic_id, name });
    }
    return {
      clinics: clinics.map((row) => ({ clinic_id: row.id, ...partner(row.partner_id), name: row.name, doctors: doctorsOf.get(row.id) ?? [] })),
      doctors: doctors.map((row) => ({ doctor_id: row.id, ...partner(row.partner_id), name: doctorName(row), clinics: clinicsOf.get(row.id) ?? [] })),
      business: { business_id: businessId, name: business?.name ?? '' },
    };
  }
}
