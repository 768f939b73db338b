/**
 * Patients as a resource, in Eka's two families of paths over one record:
 * - the doctor tool's `/dr/v1/patient` (header `auth`; the appointments family's error body);
 * - the patient directory's `/profiles/v1/patient` (the profiles family's error body).
 * A patient id in a path is the service's id or the partner's; `?partner_id=1` makes it the partner's only.
 */
import { type Static, Type } from 'typebox';
import { MergeMoved } from '../../events.ts';
import type { App } from '../../http/app-type.ts';
import { principalOf } from '../../http/auth.ts';
import type { ErrorFamily } from '../../http/errors.ts';
import { byPartner, Epoch, freeFormObject, Id, MAX_ID_LENGTH, type RouteConfig, StandardError } from '../../http/schemas.ts';
import { BLOOD_GROUPS, invalid, REMOVABLE_FIELDS, type MergeResult, type PatientInput, type PatientService, type RemovableField } from './service.ts';
import * as views from './views.ts';

const Name = Type.String({ maxLength: 100 });
const Gender = Type.Enum(['M', 'F', 'O']);
const Dob = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', 'x-message': 'must be a date, YYYY-MM-DD' });
const Age = Type.Integer({ minimum: 0, maximum: 150, description: 'Years; the alternative to dob. It grows with time.' });
const Mobile = Type.String({
  maxLength: 24,
  description: 'With the country code (+919812345678); 10 digits are taken as an Indian number',
});
const Email = Type.String({ maxLength: 254, format: 'email', 'x-message': 'must be an email address' });
const BloodGroup = Type.Enum([...BLOOD_GROUPS]);
const AbhaNumber = Type.String({ maxLength: 20, description: 'ABHA number: 14 digits, with or without dashes (XX-XXXX-XXXX-XXXX)' });
const AbhaAddress = Type.String({ maxLength: 64, description: 'ABHA address, e.g. name@abdm' });
const Text = Type.String({ maxLength: 200 });

const Address = Type.Object({
  line1: Type.Optional(Text),
  line2: Type.Optional(Text),
  city: Type.Optional(Type.String({ maxLength: 100 })),
  state: Type.Optional(Type.String({ maxLength: 100 })),
  country: Type.Optional(Type.String({ maxLength: 100 })),
  pincode: Type.Optional(Type.Integer({ minimum: 0, maximum: 9_999_999_999 })),
});

const drFields = {
  partner_patient_id: Type.Optional(Id),
  designation: Type.Optional(Type.String({ maxLength: 50, description: 'Mr., Ms., Mrs., Dr., B/O, ...' })),
  middle_name: Type.Optional(Name),
  last_name: Type.Optional(Name),
  mobile: Type.Optional(Mobile),
  dob: Type.Optional(Dob),
  age: Type.Optional(Age),
  address: Type.Optional(Address),
  email: Type.Optional(Email),
  blood_group: Type.Optional(BloodGroup),
  abha_number: Type.Optional(AbhaNumber),
  abha_address: Type.Optional(AbhaAddress),
  partner_meta: Type.Optional(freeFormObject('The partner\u2019s own fields; replaced when sent')),
};

const DrCreateBody = Type.Object({ ...drFields, first_name: Type.String({ minLength: 1, maxLength: 100 }), gender: Gender });
const DrPatchBody = Type.Object({
  ...drFields,
  first_name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  gender: Type.Optional(Gender),
});

const DrPatient = Type.Object({
  patient_id: Type.String(),
  partner_patient_id: Type.Optional(Type.String()),
  designation: Type.Optional(Type.String()),
  first_name: Type.Optional(Type.String()),
  middle_name: Type.Optional(Type.String()),
  last_name: Type.Optional(Type.String()),
  gender: Type.Optional(Type.String()),
  dob: Type.Optional(Type.String()),
  age: Type.Optional(Type.Integer({ description: 'Now, when an age was given instead of a dob' })),
  email: Type.Optional(Type.String()),
  mobile: Type.Optional(Type.String()),
  blood_group: Type.Optional(Type.String()),
  address: Type.Optional(
    Type.Object({
      line1: Type.Optional(Type.String()),
      line2: Type.Optional(Type.String()),
      city: Type.Optional(Type.String()),
      state: Type.Optional(Type.String()),
      country: Type.Optional(Type.String()),
      pincode: Type.Optional(Type.String()),
    }),
  ),
  abha_number: Type.Optional(Type.String()),
  abha_address: Type.Optional(Type.String()),
  partner_meta: Type.Object({}, { additionalProperties: true }),
  archived: Type.Boolean(),
  merged_into: Type.Optional(Type.String({ description: 'The patient this one was merged into: read that one instead' })),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
});

const ProfileFields = {
  fn: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'First name' })),
  mn: Type.Optional(Name),
  ln: Type.Optional(Name),
  fln: Type.Optional(Type.String({ minLength: 1, maxLength: 300, description: 'Full name, split at spaces when fn is not sent' })),
  s: Type.Optional(Type.String({ maxLength: 50, description: 'Salutation' })),
  dob: Type.Optional(Dob),
  age: Type.Optional(Age),
  gen: Type.Optional(Gender),
  bloodgroup: Type.Optional(BloodGroup),
  mobile: Type.Optional(Mobile),
  email: Type.Optional(Email),
  username: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_ID_LENGTH, description: 'The partner patient id, unique in the business' })),
  abha: Type.Optional(AbhaAddress),
  abha_number: Type.Optional(AbhaNumber),
  extras: Type.Optional(freeFormObject('The partner\u2019s own fields (keys starting with _ are ignored); replaced when sent')),
};
const ProfileCreateBody = Type.Object({ ...ProfileFields, gen: Gender });
const ProfilePatchBody = Type.Object(ProfileFields);

const profileProps = {
  oid: Type.String(),
  wid: Type.Optional(Type.String()),
  ps: Type.Optional(Type.String()),
  c_ate: Type.Optional(Type.Integer()),
  u_ate: Type.Optional(Type.Integer()),
  gen: Type.Optional(Type.String()),
  dob: Type.Optional(Type.String()),
  is_age: Type.Optional(Type.Boolean()),
  fn: Type.Optional(Type.String()),
  mn: Type.Optional(Type.String()),
  ln: Type.Optional(Type.String()),
  fln: Type.Optional(Type.String()),
  s: Type.Optional(Type.String()),
  bg: Type.Optional(Type.String()),
  mobile: Type.Optional(Type.String({ description: 'Without the country code (ccd)' })),
  ccd: Type.Optional(Type.String()),
  email: Type.Optional(Type.String()),
  username: Type.Optional(Type.String()),
  abha: Type.Optional(Type.String()),
  abha_number: Type.Optional(Type.String()),
  extras: Type.Optional(Type.Object({}, { additionalProperties: true })),
  arc: Type.Optional(Type.Boolean()),
  merged_into: Type.Optional(Type.String()),
};
const Profile = Type.Object(profileProps);
const Message = Type.Object({ message: Type.String() });

const BoolString = Type.Enum(['true', 'false']);
const ByPartner = Type.Object({ partner_id: Type.Optional(Type.String({ maxLength: 10, description: "1: the path id is the partner's id" })) });
const Arc = Type.Object({
  arc: Type.Optional(BoolString),
  partner_id: Type.Optional(Type.String({ maxLength: 10, description: "1: the path id is the partner's id" })),
});

const DrSearchPatient = Type.Object({
  patient_id: Type.String(),
  name: Type.String(),
  clinic_id: Type.Null({ description: 'Patients are not tied to one clinic here' }),
  partner_patient_id: Type.Optional(Type.String()),
  patient_profile: Type.Object({
    patient_id: Type.String(),
    first_name: Type.String(),
    middle_name: Type.String(),
    last_name: Type.String(),
    dob: Type.String({ description: "YYYY-MM-DD ('' when unknown; derived from an age when one was given)" }),
    email: Type.String(),
    gen: Type.String(),
    mobile: Type.String(),
    created_at: Type.String({ description: 'ISO 8601' }),
  }),
});

const MergeAnswer = Type.Object({
  patient_id: Type.String({ description: 'The surviving patient' }),
  merged_patient_id: Type.String({ description: 'The duplicate, now archived with merged_into = patient_id' }),
  moved: MergeMoved,
});

function mergeView(result: MergeResult): Static<typeof MergeAnswer> {
  return { patient_id: result.patient.id, merged_patient_id: result.merged.id, moved: result.moved };
}

const drErrors = { 400: StandardError, 401: StandardError, 403: StandardError, 404: StandardError, 500: StandardError };
const profileErrors = drErrors;

const archived = (query: { arc?: string }) => ({ archived: query.arc === 'true' });

type DrBody = Static<typeof DrPatchBody>;
type ProfileBody = Static<typeof ProfilePatchBody>;

function fromDr(body: DrBody): PatientInput {
  const { partner_meta, ...rest } = body;
  return { ...rest, ...(partner_meta !== undefined && { extras: partner_meta }) };
}

/** Eka's profile names: fn (with mn, ln) or fln; sending a name replaces the whole name. */
function fromProfile(body: ProfileBody, creating: boolean): PatientInput {
  const input: PatientInput = {};
  if (body.fn !== undefined) {
    Object.assign(input, { first_name: body.fn.trim(), middle_name: body.mn ?? null, last_name: body.ln ?? null });
  } else if (body.fln !== undefined) {
    const words = body.fln.trim().split(/\s+/);
    if (words[0] === '') throw invalid('fln', 'must name the patient');
    const [first, ...others] = words;
    const last = others.length > 0 ? others.pop()! : null;
    Object.assign(input, { first_name: first, middle_name: others.length > 0 ? others.join(' ') : null, last_name: last });
  } else if (creating || body.mn !== undefined || body.ln !== undefined) {
    throw invalid('fn', 'send fn (with mn and ln) or fln');
  }
  if (body.s !== undefined) input.designation = body.s;
  if (body.dob !== undefined) input.dob = body.dob;
  if (body.age !== undefined) input.age = body.age;
  if (body.gen !== undefined) input.gender = body.gen;
  if (body.bloodgroup !== undefined) input.blood_group = body.bloodgroup;
  if (body.mobile !== undefined) input.mobile = body.mobile;
  if (body.email !== undefined) input.email = body.email;
  if (body.username !== undefined) input.partner_patient_id = body.username;
  if (body.abha !== undefined) input.abha_address = body.abha;
  if (body.abha_number !== undefined) input.abha_number = body.abha_number;
  if (body.extras !== undefined) input.extras = body.extras;
  return input;
}

const MIN_OPTIONAL = ['abha', 'c_ate', 'dob', 'gen', 'u_ate', 'is_age'] as const;

function selected(select: string | undefined): Set<views.MinField> {
  const fields = new Set<views.MinField>();
  for (const raw of (select ?? '').split(',')) {
    const field = raw.trim();
    if (field === '' || ['mobile', 'oid', 'username', 'fln'].includes(field)) continue;
    if (!(MIN_OPTIONAL as readonly string[]).includes(field))
      throw invalid('select', `unknown field "${field.slice(0, 40)}"; choose from ${MIN_OPTIONAL.join(', ')}`);
    fields.add(field as views.MinField);
  }
  return fields;
}

/** The most oids one bulk read takes. */
const MAX_BULK = 100;

/** A query value sent under either of two names (Eka's document's and Eka's SDK's); both sent must agree. */
function either<Q extends Record<string, unknown>>(query: Q, documented: keyof Q & string, alias: keyof Q & string): number | undefined {
  const [a, b] = [query[documented] as number | undefined, query[alias] as number | undefined];
  if (a !== undefined && b !== undefined && a !== b) throw invalid(alias, `names another value than ${documented}: send one of them`);
  return a ?? b;
}

export function patientRoutes(patients: PatientService, doctorToolRoutes: (app: App) => Promise<void>) {
  return async function plugin(app: App): Promise<void> {
    const zone = patients.timezone;
    const config = (family: ErrorFamily, scope: 'read' | 'write'): RouteConfig => ({
      family,
      auth: { anyOf: scope === 'read' ? ['patient:read', 'patient:write'] : ['patient:write'] },
    });
    const dr = (scope: 'read' | 'write') => config('appointments', scope);
    const profiles = (scope: 'read' | 'write') => config('profiles', scope);
    const drTags = ['patients'];
    const profileTags = ['patient directory'];
    const PatientParams = Type.Object({ patient_id: Type.String({ maxLength: MAX_ID_LENGTH }) });
    const OidParams = Type.Object({ oid: Type.String({ maxLength: MAX_ID_LENGTH }) });

    /* ---- /dr/v1 ---- */

    app.post(
      '/dr/v1/patient',
      {
        config: { ...dr('write'), idempotent: true },
        schema: {
          tags: drTags,
          summary: 'Add a patient to the directory (dob or age)',
          body: DrCreateBody,
          response: {
            201: Type.Object({
              patient_id: Type.String(),
              duplicates: Type.Array(DrPatient, {
                description:
                  'Patients of the business probably the same person (same mobile, similar name, compatible birth): merge one into the other if so',
              }),
            }),
            ...drErrors,
            409: StandardError,
          },
        },
      },
      async (request, reply) => {
        const created = await patients.create(principalOf(request).businessId, fromDr(request.body));
        return reply.code(201).send({ patient_id: created.id, duplicates: created.duplicates.map((row) => views.drPatient(row, zone)) });
      },
    );

    app.get(
      '/dr/v1/patient/:patient_id',
      {
        config: dr('read'),
        schema: {
          tags: drTags,
          summary: 'Read a patient (archived ones with arc=true; a merged one names its survivor in merged_into)',
          params: PatientParams,
          querystring: Arc,
          response: { 200: DrPatient, ...drErrors },
        },
      },
      async (request) =>
        views.drPatient(
          await patients.get(principalOf(request).businessId, request.params.patient_id, byPartner(request.query), archived(request.query)),
          zone,
        ),
    );

    app.patch(
      '/dr/v1/patient/:patient_id',
      {
        config: dr('write'),
        schema: {
          tags: drTags,
          summary: 'Change the fields sent (address field by field; partner_meta replaced)',
          params: PatientParams,
          querystring: ByPartner,
          body: DrPatchBody,
          response: { 200: Type.Object({ patient_id: Type.String() }), ...drErrors, 409: StandardError },
        },
      },
      async (request) => ({
        patient_id: await patients.update(principalOf(request).businessId, request.params.patient_id, byPartner(request.query), fromDr(request.body)),
      }),
    );

    app.post(
      '/dr/v1/patient/:patient_id/merge',
      {
        config: { ...dr('write'), idempotent: true },
        schema: {
          tags: drTags,
          summary:
            'Merge a duplicate into this patient: its appointments, reviews, cases, devices and documents move here; it is archived with merged_into',
          params: PatientParams,
          querystring: ByPartner,
          body: Type.Object({ duplicate_patient_id: Id }),
          response: { 200: MergeAnswer, ...drErrors, 409: StandardError },
        },
      },
      async (request) =>
        mergeView(await patients.merge(principalOf(request), request.params.patient_id, request.body.duplicate_patient_id, byPartner(request.query))),
    );

    // Other modules' routes under the doctor tool's patient paths, listed with them in the API reference.
    await doctorToolRoutes(app);

    /* ---- /profiles/v1 ---- */

    app.post(
      '/profiles/v1/patient/',
      {
        config: { ...profiles('write'), idempotent: true },
        schema: {
          tags: profileTags,
          summary: 'Create a patient profile (fn or fln; gen; dob or age)',
          body: ProfileCreateBody,
          response: {
            201: Type.Object({
              oid: Type.String(),
              duplicates: Type.Array(Profile, {
                description:
                  'Profiles of the business probably the same person (same mobile, similar name, compatible birth): merge one into the other if so',
              }),
            }),
            ...profileErrors,
            409: StandardError,
          },
        },
      },
      async (request, reply) => {
        const created = await patients.create(principalOf(request).businessId, fromProfile(request.body, true));
        return reply.code(201).send({ oid: created.id, duplicates: created.duplicates.map((row) => views.profile(row, zone)) });
      },
    );

    app.get(
      '/profiles/v1/patient/minified/',
      {
        config: profiles('read'),
        schema: {
          tags: profileTags,
          summary:
            "List patient profiles by creation, pageSize a page (pages from 1); the page is in profiles and in data (Eka's document and Eka's directory SDK read one each)",
          querystring: Type.Object({
            pageNo: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'From 1 (0 reads as 1)' })),
            pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 2000, description: 'Default 500' })),
            page: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'pageNo as Eka’s directory SDK names it' })),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 2000, description: 'pageSize as Eka’s directory SDK names it' })),
            select: Type.Optional(Type.String({ maxLength: 200, description: 'More fields, comma-separated: abha, c_ate, dob, gen, u_ate, is_age' })),
            from: Type.Optional(Epoch),
            arc: Type.Optional(BoolString),
          }),
          response: {
            200: Type.Object({
              profiles: Type.Array(Type.Object(profileProps)),
              data: Type.Array(Type.Object(profileProps), { description: 'The same page as profiles' }),
              currPageMeta: Type.Object({
                currPageNo: Type.Integer(),
                pageSize: Type.Integer(),
                nextPage: Type.Integer({ description: '-1 on the last page' }),
              }),
            }),
            ...profileErrors,
          },
        },
      },
      async (request) => {
        const query = request.query;
        const fields = selected(query.select);
        const pageNo = Math.max(1, either(query, 'pageNo', 'page') ?? 1);
        const pageSize = either(query, 'pageSize', 'limit') ?? 500;
        const visibility = archived(query);
        const page = await patients.list(principalOf(request).businessId, {
          page: pageNo - 1,
          pageSize,
          ...(query.from !== undefined && { createdFrom: query.from * 1000 }),
          ...visibility,
        });
        const profiles = page.rows.map((row) => views.profileMin(row, zone, fields, visibility.archived));
        return {
          profiles,
          data: profiles,
          currPageMeta: { currPageNo: pageNo, pageSize, nextPage: page.more ? pageNo + 1 : -1 },
        };
      },
    );

    const MatchList = Type.Array(Profile);
    const lookup = {
      full_profile: Type.Optional(BoolString),
      arc: Type.Optional(BoolString),
    };

    app.get(
      '/profiles/v1/patient/by-mobile/',
      {
        config: profiles('read'),
        schema: {
          tags: profileTags,
          summary: 'Every patient on a mobile number (families share one)',
          querystring: Type.Object({ mob: Type.String({ minLength: 1, maxLength: 24 }), ...lookup }),
          response: { 200: MatchList, ...profileErrors },
        },
      },
      async (request) => {
        const rows = await patients.byMobile(principalOf(request).businessId, request.query.mob, archived(request.query));
        return rows.map((row) => views.match(row, zone, request.query.full_profile === 'true'));
      },
    );

    app.get(
      '/profiles/v1/patient/search',
      {
        config: profiles('read'),
        schema: {
          tags: profileTags,
          summary:
            'Search by name (spelling variants, initials, any word order), mobile number prefix (3 digits or more) or username (exact), best first',
          querystring: Type.Object({
            prefix: Type.String({ minLength: 1, maxLength: 100, description: 'A name, part of one, a mobile number or a username' }),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, description: 'Default 50' })),
            offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 150, description: 'Matches skipped: the next page' })),
            select: Type.Optional(Type.String({ maxLength: 200, description: 'More fields, comma-separated: abha, c_ate, dob, gen, u_ate' })),
            arc: Type.Optional(BoolString),
          }),
          response: { 200: Type.Array(Type.Object(profileProps)), ...profileErrors },
        },
      },
      async (request) => {
        const { prefix, limit = 50, offset = 0, select } = request.query;
        const fields = selected(select);
        const visibility = archived(request.query);
        const businessId = principalOf(request).businessId;
        const page = await patients.search(businessId, prefix, { limit, offset, includeArchived: visibility.archived });
        const rows = await patients.byIds(
          businessId,
          page.hits.map((hit) => hit.patientId),
        );
        return rows.map((row) => views.profileMin(row, zone, fields, visibility.archived));
      },
    );

    app.get(
      '/dr/v1/business/patients/search',
      {
        config: dr('read'),
        schema: {
          tags: drTags,
          summary: "The business's patients on a mobile number (10 digits, or with the country code)",
          querystring: Type.Object({ mobile: Type.String({ minLength: 1, maxLength: 24 }) }),
          response: {
            200: Type.Object({
              success: Type.Boolean(),
              status_code: Type.Integer(),
              data: Type.Object({ patients: Type.Array(DrSearchPatient) }),
            }),
            ...drErrors,
          },
        },
      },
      async (request) => {
        const rows = await patients.byMobile(principalOf(request).businessId, request.query.mobile, { archived: false });
        return { success: true, status_code: 200, data: { patients: rows.map((row) => views.drSearchPatient(row, zone)) } };
      },
    );

    app.get(
      '/profiles/v1/patient/by-abha/',
      {
        config: profiles('read'),
        schema: {
          tags: profileTags,
          summary: 'The patients with an ABHA address (abha) or ABHA number (abha_number); send one',
          querystring: Type.Object({ abha: Type.Optional(AbhaAddress), abha_number: Type.Optional(AbhaNumber), ...lookup }),
          response: { 200: MatchList, ...profileErrors },
        },
      },
      async (request) => {
        const { abha, abha_number } = request.query;
        const rows = await patients.byAbha(
          principalOf(request).businessId,
          { ...(abha !== undefined && { abha_address: abha }), ...(abha_number !== undefined && { abha_number }) },
          archived(request.query),
        );
        return rows.map((row) => views.match(row, zone, request.query.full_profile === 'true'));
      },
    );

    app.get(
      '/profiles/v1/patient/:username/username/',
      {
        config: profiles('read'),
        schema: {
          tags: profileTags,
          summary: 'The patient with a username (partner patient id), as a list of one',
          params: Type.Object({ username: Type.String({ maxLength: MAX_ID_LENGTH }) }),
          querystring: Type.Object({ flatten: Type.Optional(BoolString), arc: Type.Optional(BoolString) }),
          response: { 200: MatchList, ...profileErrors },
        },
      },
      async (request) => [
        views.profile(await patients.get(principalOf(request).businessId, request.params.username, true, archived(request.query)), zone),
      ],
    );

    app.get(
      '/profiles/v1/patient/bulk',
      {
        config: profiles('read'),
        schema: {
          tags: profileTags,
          summary: `Read up to ${MAX_BULK} patient profiles by oid, in the order asked; unknown ones (and archived ones without arc=true) are left out`,
          querystring: Type.Object({
            oid_list: Type.String({
              maxLength: MAX_BULK * (MAX_ID_LENGTH + 1),
              description: "Comma-separated oids; an empty list answers [] (Eka's directory SDK tests its connection with one)",
            }),
            arc: Type.Optional(BoolString),
          }),
          response: { 200: Type.Array(Profile), ...profileErrors },
        },
      },
      async (request) => {
        const ids = [...new Set(request.query.oid_list.split(',').map((id) => id.trim()))].filter((id) => id !== '');
        // TrinityProfilesSDK.testConnection() reads `bulk?oid_list=` and wants a 2xx.
        if (ids.length === 0) return [];
        if (ids.length > MAX_BULK) throw invalid('oid_list', `at most ${MAX_BULK} oids`);
        if (ids.some((id) => [...id].length > MAX_ID_LENGTH)) throw invalid('oid_list', `an oid is at most ${MAX_ID_LENGTH} characters`);
        const withArchived = archived(request.query).archived;
        const rows = await patients.byIds(principalOf(request).businessId, ids);
        return rows.filter((row) => withArchived || row.archived_at === null || row.merged_into !== null).map((row) => views.profile(row, zone));
      },
    );

    app.get(
      '/profiles/v1/patient/:oid',
      {
        config: profiles('read'),
        schema: {
          tags: profileTags,
          summary: 'Read a patient profile (archived ones with arc=true; a merged one names its survivor in merged_into)',
          params: OidParams,
          querystring: Arc,
          response: { 200: Profile, ...profileErrors },
        },
      },
      async (request) =>
        views.profile(
          await patients.get(principalOf(request).businessId, request.params.oid, byPartner(request.query), archived(request.query)),
          zone,
        ),
    );

    app.patch(
      '/profiles/v1/patient/:oid',
      {
        config: profiles('write'),
        schema: {
          tags: profileTags,
          summary: 'Change the fields sent (a name replaces the whole name; a new username must be free)',
          params: OidParams,
          querystring: ByPartner,
          body: ProfilePatchBody,
          response: { 200: Message, ...profileErrors, 409: StandardError },
        },
      },
      async (request) => {
        await patients.update(principalOf(request).businessId, request.params.oid, byPartner(request.query), fromProfile(request.body, false));
        return { message: 'Profile updated successfully' };
      },
    );

    app.delete(
      '/profiles/v1/patient/:oid',
      {
        config: profiles('write'),
        schema: {
          tags: profileTags,
          summary: 'Archive a patient profile (kept; read it with arc=true)',
          params: OidParams,
          querystring: ByPartner,
          response: { 200: Message, ...profileErrors, 409: StandardError },
        },
      },
      async (request) => {
        await patients.archive(principalOf(request).businessId, request.params.oid, byPartner(request.query));
        return { message: 'Profile archived successfully' };
      },
    );
    app.patch(
      '/profiles/v1/patient/:oid/unarchive',
      {
        config: profiles('write'),
        schema: {
          tags: profileTags,
          summary: 'Bring an archived patient profile back (a live one stays as it is; a merged one stays archived: 409)',
          params: OidParams,
          querystring: ByPartner,
          response: { 200: Profile, ...profileErrors, 409: StandardError },
        },
      },
      async (request) => views.profile(await patients.unarchive(principalOf(request).businessId, request.params.oid, byPartner(request.query)), zone),
    );

    app.patch(
      '/profiles/v1/patient/:oid/remove-fields',
      {
        config: profiles('write'),
        schema: {
          tags: profileTags,
          summary: `Clear fields of a patient profile: any of ${Object.keys(REMOVABLE_FIELDS).join(', ')} (the first name, gender and username stay)`,
          params: OidParams,
          querystring: ByPartner,
          body: Type.Object({
            fields: Type.Array(Type.String({ maxLength: 40 }), { minItems: 1, maxItems: 20, description: 'Profile field names' }),
          }),
          response: { 200: Message, ...profileErrors, 409: StandardError },
        },
      },
      async (request) => {
        const fields = request.body.fields.map((field, index) => {
          if (!Object.hasOwn(REMOVABLE_FIELDS, field)) {
            throw invalid(`fields.${index}`, `"${field}" cannot be removed; choose from ${Object.keys(REMOVABLE_FIELDS).join(', ')}`);
          }
          return field as RemovableField;
        });
        await patients.removeFields(principalOf(request).businessId, request.params.oid, byPartner(request.query), fields);
        return { message: 'Fields removed successfully' };
      },
    );

    app.post(
      '/profiles/v1/patient/:oid/merge',
      {
        config: { ...profiles('write'), idempotent: true },
        schema: {
          tags: profileTags,
          summary:
            'Merge a duplicate profile into this one: its appointments, reviews, cases, devices and documents move here; it is archived with merged_into',
          params: OidParams,
          querystring: ByPartner,
          body: Type.Object({ duplicate_oid: Id }),
          response: { 200: MergeAnswer, ...profileErrors, 409: StandardError },
        },
      },
      async (request) =>
        mergeView(await patients.merge(principalOf(request), request.params.oid, request.body.duplicate_oid, byPartner(request.query))),
    );
  };
}
