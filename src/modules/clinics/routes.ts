/**
 * Clinics and doctors `/cdr/v1` (contract section 5): DRF-style error bodies, header `auth`. `?partner_id=1`
 * makes the path's `{id}` the partner's id. Eka's directory reads under `/dr/v1` (`directory.ts`) answer
 * in Eka's shapes, with the error bodies of the `/dr` family.
 */
import type { FastifyError, FastifyRequest } from 'fastify';
import { Type, type TSchema } from 'typebox';
import type { App } from '../../http/app-type.ts';
import { principalOf } from '../../http/auth.ts';
import { validationProblem } from '../../http/errors.ts';
import { byPartner, ClinicsError, ClinicsNotFound, MAX_ID_LENGTH, type RouteConfig, StandardError } from '../../http/schemas.ts';
import { EkaClinicRead, EkaDoctorRead, EkaEntities, type DirectoryService } from './directory.ts';
import { ClinicCreate, ClinicUpdate, DoctorCreate, DoctorUpdate } from './schemas.ts';
import type { ClinicService, FieldProblems } from './service.ts';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

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
const ByPartner = Type.Object({ partner_id: Type.Optional(Type.String({ description: "1: the path holds the partner's id" })) });
const Page = Type.Object({ page_no: Type.Optional(Type.Integer({ minimum: 0, maximum: 100_000, default: 0 })) });

const ClinicRead = Type.Object({ status: Type.Literal('success'), clinic: Clinic });
const DoctorRead = Type.Object({ status: Type.Literal('success'), doctor: Doctor });

const Deleted = Type.Object({ status: Type.Literal('success'), message: Type.String() });

const drErrors = { 400: StandardError, 401: StandardError, 403: StandardError, 404: StandardError };

const errors = { 400: ClinicsError, 401: ClinicsError, 403: ClinicsError };
const tags = ['clinics'];
const read: RouteConfig = { family: 'clinics', auth: { anyOf: [] } };
const write: RouteConfig = { family: 'clinics', auth: { anyOf: ['clinic:write'] } };
const directoryRead: RouteConfig = { family: 'appointments', auth: read.auth };

/*
 * Writes take what the schema refused as data (attachValidation), so that the service reports it
 * together with the rules that need the database: every problem in one answer (contract 5).
 */
const createRoute = <B extends TSchema>(summary: string, body: B) => ({
  config: { ...write, idempotent: true },
  attachValidation: true,
  schema: { tags, summary, body, response: { 201: Created, ...errors } },
});

const updateRoute = <B extends TSchema, R extends TSchema>(summary: string, body: B, record: R) => ({
  config: write,
  attachValidation: true,
  schema: { tags, summary, params: IdParams, querystring: ByPartner, body, response: { 200: record, ...errors, 404: ClinicsNotFound } },
});

const listRoute = <R extends TSchema>(summary: string, records: R) => ({
  config: read,
  schema: { tags, summary, querystring: Page, response: { 200: records, ...errors } },
});

const getRoute = <R extends TSchema>(summary: string, record: R) => ({
  config: read,
  schema: { tags, summary, params: IdParams, querystring: ByPartner, response: { 200: record, ...errors, 404: ClinicsNotFound } },
});

const deleteRoute = <P extends TSchema>(summary: string, params: P) => ({
  config: write,
  schema: { tags, summary, params, querystring: ByPartner, response: { 200: Deleted, ...errors, 404: ClinicsNotFound, 409: ClinicsError } },
});

const directoryRoute = <P extends TSchema, R extends TSchema>(summary: string, params: P, record: R) => ({
  config: directoryRead,
  schema: { tags, summary, params, querystring: ByPartner, response: { 200: record, ...drErrors } },
});

const PathId = Type.String({ maxLength: MAX_ID_LENGTH });

/**
 * A write's body with what the schema refused of it (field -> messages). A refused path or query stops
 * here: the service would otherwise look the record up with it. When the body was refused, the query
 * was not validated: `partner_id` is read as sent, and only `'1'` means the partner's id.
 */
function submitted<T>(request: { body: T; validationError?: FastifyRequest['validationError'] }): [T, FieldProblems] {
  const error = request.validationError as FastifyError | undefined;
  if (!error) return [request.body, {}];
  if (error.validationContext !== 'body') throw error;
  const body: unknown = request.body;
  // A body refused as a whole (not an object) has no fields left for the service's rules.
  const fields = (body !== null && typeof body === 'object' && !Array.isArray(body) ? body : {}) as T;
  return [fields, validationProblem(error).fields ?? {}];
}

const businessOf = (request: FastifyRequest) => principalOf(request).businessId;

export function clinicRoutes(service: ClinicService, directory: DirectoryService) {
  return async function plugin(app: App): Promise<void> {
    app.post('/cdr/v1/clinic', createRoute('Create a clinic', ClinicCreate), async (request, reply) =>
      reply.code(201).send({ status: 'success', svcid: await service.create('clinic', businessOf(request), ...submitted(request)) }),
    );

    app.get(
      '/cdr/v1/clinic',
      listRoute('List clinics (50 a page)', Type.Object({ status: Type.Literal('success'), clinics: Type.Array(Clinic) })),
      async (request) => ({ status: 'success' as const, clinics: await service.list('clinic', businessOf(request), request.query.page_no ?? 0) }),
    );

    app.get('/cdr/v1/clinic/:id', getRoute('Read a clinic with its doctors', ClinicRead), async (request) => ({
      status: 'success' as const,
      clinic: await service.get('clinic', businessOf(request), request.params.id, byPartner(request.query)),
    }));

    app.patch('/cdr/v1/clinic/:id', updateRoute('Change the fields sent; doctor ids sent are added', ClinicUpdate, ClinicRead), async (request) => ({
      status: 'success' as const,
      clinic: await service.update('clinic', businessOf(request), request.params.id, byPartner(request.query), ...submitted(request)),
    }));

    app.post('/cdr/v1/doctor', createRoute('Create a doctor', DoctorCreate), async (request, reply) =>
      reply.code(201).send({ status: 'success', svcid: await service.create('doctor', businessOf(request), ...submitted(request)) }),
    );

    app.get(
      '/cdr/v1/doctor',
      listRoute('List doctors (50 a page)', Type.Object({ status: Type.Literal('success'), doctors: Type.Array(Doctor) })),
      async (request) => ({ status: 'success' as const, doctors: await service.list('doctor', businessOf(request), request.query.page_no ?? 0) }),
    );

    app.get('/cdr/v1/doctor/:id', getRoute('Read a doctor', DoctorRead), async (request) => ({
      status: 'success' as const,
      doctor: await service.get('doctor', businessOf(request), request.params.id, byPartner(request.query)),
    }));

    app.patch('/cdr/v1/doctor/:id', updateRoute('Change the fields sent; clinic ids sent are added', DoctorUpdate, DoctorRead), async (request) => ({
      status: 'success' as const,
      doctor: await service.update('doctor', businessOf(request), request.params.id, byPartner(request.query), ...submitted(request)),
    }));

    const deleteSummary = (kind: string) =>
      `Delete a ${kind} (soft): refused (409) while an appointment not cancelled and not yet over names it; its appointments stay readable and its partner id is free again`;
    app.delete('/cdr/v1/clinic/:clinic_id', deleteRoute(deleteSummary('clinic'), Type.Object({ clinic_id: PathId })), async (request) => {
      await service.delete('clinic', businessOf(request), request.params.clinic_id, byPartner(request.query));
      return { status: 'success' as const, message: 'Clinic Deleted Successfully' };
    });

    app.delete('/cdr/v1/doctor/:doc_id', deleteRoute(deleteSummary('doctor'), Type.Object({ doc_id: PathId })), async (request) => {
      await service.delete('doctor', businessOf(request), request.params.doc_id, byPartner(request.query));
      return { status: 'success' as const, message: 'Doctor Deleted Successfully' };
    });

    app.get(
      '/dr/v1/business/clinic/:clinic_id',
      directoryRoute("Read a clinic (Eka's shape)", Type.Object({ clinic_id: PathId }), EkaClinicRead),
      async (request) => ({
        success: true as const,
        data: { clinic: await directory.clinic(businessOf(request), request.params.clinic_id, byPartner(request.query)) },
      }),
    );

    app.get(
      '/dr/v1/doctor/:doctor_id',
      directoryRoute("Read a doctor's profile (Eka's shape)", Type.Object({ doctor_id: PathId }), EkaDoctorRead),
      async (request) => directory.doctor(businessOf(request), request.params.doctor_id, byPartner(request.query)),
    );

    app.get(
      '/dr/v1/business/entities',
      {
        config: directoryRead,
        schema: { tags, summary: "The business's clinics and doctors (Eka's shape)", response: { 200: EkaEntities, ...drErrors } },
      },
      async (request) => ({ status_code: 200 as const, success: true as const, data: await directory.entities(businessOf(request)) }),
    );
  };
}
