/** Clinics and doctors `/cdr/v1` (contract section 5): DRF-style error bodies, header `auth`. */
import type { FastifyError, FastifyRequest } from 'fastify';
import { Type, type TSchema } from 'typebox';
import type { App } from '../../http/app-type.ts';
import type { AppContext } from '../../context.ts';
import { principalOf, type RouteAuth } from '../../http/auth.ts';
import { validationProblem, type ErrorFamily } from '../../http/errors.ts';
import { ClinicsError, ClinicsNotFound } from '../../http/schemas.ts';
import { ClinicService, type FieldProblems } from './service.ts';

interface RouteConfig { family: ErrorFamily; auth: RouteAuth }

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

const Text = (maxLength: number) => Type.String({ maxLength });
const Ids = Type.Array(Type.String({ maxLength: 200 }), { maxItems: 500 });
const HttpsUrl = Type.String({ maxLength: 2000, format: 'uri', pattern: '^https://[^\\s/?#]+', 'x-message': 'Enter a valid https URL.' });

const clinicFields = {
  name: Text(200),
  address: Text(1000),
  partner_id: Type.String({ maxLength: 200 }),
  pincode: Text(20),
  contact: Type.String({ pattern: '^\\d{10,11}$', 'x-message': 'Ensure this value has 10 or 11 digits.' }),
  doctor_ids: Ids,
  partner_doctor_ids: Ids,
  city: Text(200),
  state: Text(200),
  review_link: HttpsUrl,
};

const ClinicCreate = Type.Object({
  ...clinicFields,
  partner_id: Type.Optional(clinicFields.partner_id),
  pincode: Type.Optional(clinicFields.pincode),
  contact: Type.Optional(clinicFields.contact),
  doctor_ids: Type.Optional(Ids),
  partner_doctor_ids: Type.Optional(Ids),
  city: Type.Optional(clinicFields.city),
  state: Type.Optional(clinicFields.state),
  review_link: Type.Optional(HttpsUrl),
});
const ClinicUpdate = Type.Partial(Type.Object(clinicFields));

const doctorFields = {
  firstname: Text(200),
  lastname: Text(200),
  gender: Text(20),
  mobile: Type.String({ pattern: '^\\+?\\d{7,15}$', 'x-message': 'Enter a valid phone number: 7 to 15 digits, optionally after +.' }),
  email: Type.String({ format: 'email', maxLength: 320, 'x-message': 'Enter a valid email address.' }),
  specialisations: Type.Array(Type.String({ maxLength: 200 }), { maxItems: 50 }),
  partner_id: Type.String({ maxLength: 200 }),
  review_link: HttpsUrl,
  clinic_ids: Ids,
  partner_clinic_ids: Ids,
};
const DoctorCreate = Type.Object({
  firstname: doctorFields.firstname,
  lastname: doctorFields.lastname,
  ...Object.fromEntries(Object.entries(doctorFields).filter(([k]) => k !== 'firstname' && k !== 'lastname').map(([k, v]) => [k, Type.Optional(v)])),
});
const DoctorUpdate = Type.Partial(Type.Object(doctorFields));

const DoctorSummary = Type.Object({ id: Type.String(), firstname: Type.String(), lastname: Type.String(), partner_id: Nullable(Type.String()) });
const Clinic = Type.Object({
  id: Type.String(),
  name: Type.String(),
  address: Type.String(),
  pincode: Nullable(Type.String()),
  contact: Nullable(Type.String()),
  city: Nullable(Type.String()),
  state: Nullable(Type.String()),
  partner_id: Nullable(Type.String()),
  review_link: Nullable(Type.String()),
  doctors: Type.Array(DoctorSummary),
});
const Doctor = Type.Object({
  id: Type.String(),
  firstname: Type.String(),
  lastname: Type.String(),
  gender: Nullable(Type.String()),
  mobile: Nullable(Type.String()),
  email: Nullable(Type.String()),
  specialisations: Type.Array(Type.String()),
  partner_id: Nullable(Type.String()),
  review_link: Nullable(Type.String()),
  clinic_ids: Type.Array(Type.String()),
});

const Created = Type.Object({ status: Type.Literal('success'), svcid: Type.String() });
const IdParams = Type.Object({ id: Type.String({ maxLength: 200 }) });
const ByPartner = Type.Object({ partner_id: Type.Optional(Type.String({ description: '1: the path holds the partner\'s id' })) });
const Page = Type.Object({ page_no: Type.Optional(Type.Integer({ minimum: 0, maximum: 100_000, default: 0 })) });

const errors = { 400: ClinicsError, 401: ClinicsError, 403: ClinicsError };

/**
 * Write routes take schema failures as data (attachValidation) so that the service can report them
 * together with the rules that need the database: every problem in one answer.
 */
function schemaProblems(request: FastifyRequest): FieldProblems {
  const error = request.validationError as FastifyError | undefined;
  if (!error) return {};
  // A bad path or query stops here: the service would otherwise look the record up with it.
  if (error.validationContext !== 'body') throw error;
  return validationProblem(error).fields ?? {};
}

export function clinicRoutes(ctx: AppContext) {
  const service = new ClinicService(ctx.storage.db);
  return async function plugin(app: App): Promise<void> {
    const read: RouteConfig = { family: 'clinics', auth: { anyOf: [] } };
    const write: RouteConfig = { family: 'clinics', auth: { anyOf: ['clinic:write'] } };

    app.post('/cdr/v1/clinic', {
      config: write,
      attachValidation: true,
      schema: { tags: ['clinics'], summary: 'Create a clinic', body: ClinicCreate, response: { 201: Created, ...errors } },
    }, async (request, reply) => {
      const id = await service.createClinic(principalOf(request).businessId, request.body, schemaProblems(request));
      return reply.code(201).send({ status: 'success', svcid: id });
    });

    app.get('/cdr/v1/clinic', {
      config: read,
      schema: {
        tags: ['clinics'], summary: 'List clinics (50 a page)', querystring: Page,
        response: { 200: Type.Object({ status: Type.Literal('success'), clinics: Type.Array(Clinic) }), ...errors },
      },
    }, async (request) => ({ status: 'success' as const, clinics: await service.listClinics(principalOf(request).businessId, request.query.page_no ?? 0) }));

    app.get('/cdr/v1/clinic/:id', {
      config: read,
      schema: {
        tags: ['clinics'], summary: 'Read a clinic with its doctors', params: IdParams, querystring: ByPartner,
        response: { 200: Type.Object({ status: Type.Literal('success'), clinic: Clinic }), ...errors, 404: ClinicsNotFound },
      },
    }, async (request) => ({
      status: 'success' as const,
      clinic: await service.getClinic(principalOf(request).businessId, request.params.id, request.query.partner_id === '1'),
    }));

    app.patch('/cdr/v1/clinic/:id', {
      config: write,
      attachValidation: true,
      schema: {
        tags: ['clinics'], summary: 'Change the fields sent; doctor ids sent are added', params: IdParams, querystring: ByPartner, body: ClinicUpdate,
        response: { 200: Type.Object({ status: Type.Literal('success'), clinic: Clinic }), ...errors, 404: ClinicsNotFound },
      },
    }, async (request) => ({
      status: 'success' as const,
      clinic: await service.updateClinic(principalOf(request).businessId, String(request.params.id), partnerQuery(request), request.body, schemaProblems(request)),
    }));

    app.post('/cdr/v1/doctor', {
      config: write,
      attachValidation: true,
      schema: { tags: ['clinics'], summary: 'Create a doctor', body: DoctorCreate, response: { 201: Created, ...errors } },
    }, async (request, reply) => {
      const id = await service.createDoctor(principalOf(request).businessId, request.body, schemaProblems(request));
      return reply.code(201).send({ status: 'success', svcid: id });
    });

    app.get('/cdr/v1/doctor', {
      config: read,
      schema: {
        tags: ['clinics'], summary: 'List doctors (50 a page)', querystring: Page,
        response: { 200: Type.Object({ status: Type.Literal('success'), doctors: Type.Array(Doctor) }), ...errors },
      },
    }, async (request) => ({ status: 'success' as const, doctors: await service.listDoctors(principalOf(request).businessId, request.query.page_no ?? 0) }));

    app.get('/cdr/v1/doctor/:id', {
      config: read,
      schema: {
        tags: ['clinics'], summary: 'Read a doctor', params: IdParams, querystring: ByPartner,
        response: { 200: Type.Object({ status: Type.Literal('success'), doctor: Doctor }), ...errors, 404: ClinicsNotFound },
      },
    }, async (request) => ({
      status: 'success' as const,
      doctor: await service.getDoctor(principalOf(request).businessId, request.params.id, request.query.partner_id === '1'),
    }));

    app.patch('/cdr/v1/doctor/:id', {
      config: write,
      attachValidation: true,
      schema: {
        tags: ['clinics'], summary: 'Change the fields sent; clinic ids sent are added', params: IdParams, querystring: ByPartner, body: DoctorUpdate,
        response: { 200: Type.Object({ status: Type.Literal('success'), doctor: Doctor }), ...errors, 404: ClinicsNotFound },
      },
    }, async (request) => ({
      status: 'success' as const,
      doctor: await service.updateDoctor(principalOf(request).businessId, String(request.params.id), partnerQuery(request), request.body, schemaProblems(request)),
    }));
  };
}

/** With attachValidation the query is unchecked, so read it defensively. */
function partnerQuery(request: FastifyRequest): boolean {
  return (request.query as { partner_id?: unknown } | undefined)?.partner_id === '1';
}
