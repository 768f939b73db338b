/** Cases `/mr/api/v1/cases` (contract 6): list with paging and incremental sync, create, read, update, delete. */
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { App } from '../../http/app-type.ts';
import { principalOf } from '../../http/auth.ts';
import { AppError } from '../../errors.ts';
import { CasesError, FREE_FORM_DESCRIPTION, FREE_FORM_LIMITS, MAX_ID_LENGTH, type RouteConfig } from '../../http/schemas.ts';
import { HI_TYPES, type CasesService, type CaseChanges, type HiType, type NewCase, type PatientScope } from './service.ts';

const MAX_PATIENT_REF = MAX_ID_LENGTH;

// Declared for the documentation; the preParsing hook below has already answered a missing one.
const PatientHeader = Type.Object({
  'x-pt-id': Type.String({ maxLength: MAX_ID_LENGTH, description: "The patient's id within the business (the service's or the partner's)." }),
});
const CaseId = Type.String({ minLength: 1, maxLength: MAX_ID_LENGTH, 'x-message': `must be a string of 1 to ${MAX_ID_LENGTH} characters` });
const Epoch = Type.Integer({
  minimum: 0,
  maximum: 253_402_300_799,
  description: 'epoch seconds',
  'x-message': 'must be an integer epoch in seconds',
});
const DisplayName = Type.String({ minLength: 1, maxLength: 200, 'x-message': 'must be a string of 1 to 200 characters' });
const HI_TYPE_MESSAGE = `must be one of ${HI_TYPES.join(', ')}`;
const HiTypeSchema = Type.Unsafe<HiType>({ type: 'string', enum: [...HI_TYPES], 'x-message': HI_TYPE_MESSAGE });
const NullableHiType = Type.Unsafe<HiType | null>({
  type: ['string', 'null'],
  enum: [...HI_TYPES, null],
  'x-message': `${HI_TYPE_MESSAGE}, or null`,
});
const CaseType = Type.String({ maxLength: 100, 'x-message': 'must be a string of at most 100 characters' });
const NullableCaseType = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  maxLength: 100,
  'x-message': 'must be a string of at most 100 characters, or null',
});
const PartnerMeta = Type.Object({}, { additionalProperties: true, ...FREE_FORM_LIMITS, description: `free-form object. ${FREE_FORM_DESCRIPTION}` });

const CaseItem = Type.Object({
  display_name: Type.String(),
  type: Type.Optional(Type.String()),
  hi_type: Type.Optional(Type.String()),
  partner_meta: PartnerMeta,
  created_at: Type.Integer(),
  occurred_at: Type.Integer(),
});
const Case = Type.Object({
  id: Type.String(),
  status: Type.String({ description: 'A (active) or D (deleted; item omitted)' }),
  updated_at: Type.Integer(),
  item: Type.Optional(CaseItem),
});

const ListQuery = Type.Object({
  offset: Type.Optional(Type.String({ maxLength: 2048, description: 'next_token of the previous page' })),
  u_at__gt: Type.Optional(Type.Integer({ minimum: 0, maximum: 253_402_300_799, description: 'only cases with updated_at greater than this epoch' })),
});
const CreateBody = Type.Object({
  id: CaseId,
  display_name: DisplayName,
  occurred_at: Epoch,
  type: Type.Optional(CaseType),
  hi_type: Type.Optional(HiTypeSchema),
  partner_meta: Type.Optional(PartnerMeta),
});
const UpdateBody = Type.Object({
  display_name: Type.Optional(DisplayName),
  occurred_at: Type.Optional(Epoch),
  type: Type.Optional(NullableCaseType),
  hi_type: Type.Optional(NullableHiType),
  partner_meta: Type.Optional(PartnerMeta),
});
const IdParams = Type.Object({ id: Type.String({ maxLength: MAX_ID_LENGTH }) });

const errors = { 400: CasesError, 401: CasesError, 403: CasesError };

/** The X-Pt-Id, checked right after authentication so that its absence is the first 400. */
function patientRefOf(request: FastifyRequest): string {
  const raw = request.headers['x-pt-id'];
  const value = typeof raw === 'string' ? raw.trim() : '';
  if (value === '') throw new AppError(400, 'X-Pt-Id header is required', { code: 'INVALID_REQUEST' });
  if ([...value].length > MAX_PATIENT_REF) {
    throw new AppError(400, `X-Pt-Id must be at most ${MAX_PATIENT_REF} characters`, { code: 'INVALID_REQUEST' });
  }
  return value;
}

export function casesRoutes(service: CasesService) {
  const scopeOf = (request: FastifyRequest): Promise<PatientScope> => {
    const principal = principalOf(request);
    return service.patientScope(principal.businessId, patientRefOf(request), principal.clientId);
  };
  return async function plugin(app: App): Promise<void> {
    const read: RouteConfig = { family: 'cases', auth: { anyOf: ['cases:read', 'cases:write'] } };
    const write: RouteConfig = { family: 'cases', auth: { anyOf: ['cases:write'] } };

    // Runs after authentication (the routes' onRequest hooks) and before parsing and validation.
    app.addHook('preParsing', async (request) => {
      patientRefOf(request);
    });

    app.get(
      '/mr/api/v1/cases',
      {
        config: read,
        schema: {
          tags: ['cases'],
          summary: "List a patient's cases, oldest update first, 50 a page; u_at__gt for incremental sync",
          description:
            'A write is listed once the second of its updated_at is over (within 2 s of being acknowledged); ' +
            'a client that reads to the last page and then lists with u_at__gt = the largest updated_at it saw misses no change.',
          headers: PatientHeader,
          querystring: ListQuery,
          response: { 200: Type.Object({ cases: Type.Array(Case), next_token: Type.Union([Type.String(), Type.Null()]) }), ...errors },
        },
      },
      async (request) => service.list(await scopeOf(request), { offset: request.query.offset, updatedAfter: request.query.u_at__gt }),
    );

    app.post(
      '/mr/api/v1/cases',
      {
        config: { ...write, idempotent: true },
        schema: {
          tags: ['cases'],
          summary: 'Create a case for the patient',
          headers: PatientHeader,
          body: CreateBody,
          response: { 201: Type.Object({ id: Type.String() }), ...errors, 409: CasesError },
        },
      },
      async (request, reply) => reply.code(201).send(await service.create(await scopeOf(request), request.body as NewCase)),
    );

    app.get(
      '/mr/api/v1/cases/:id',
      {
        config: read,
        schema: {
          tags: ['cases'],
          summary: 'Read one case (deleted cases are 404)',
          headers: PatientHeader,
          params: IdParams,
          response: { 200: Case, ...errors, 404: CasesError },
        },
      },
      async (request) => service.get(await scopeOf(request), request.params.id),
    );

    app.patch(
      '/mr/api/v1/cases/:id',
      {
        config: write,
        schema: {
          tags: ['cases'],
          summary: 'Change the fields sent (partner_meta is replaced, not merged)',
          headers: PatientHeader,
          params: IdParams,
          body: UpdateBody,
          response: { 204: Type.Null(), ...errors, 404: CasesError },
        },
      },
      async (request, reply) => {
        await service.update(await scopeOf(request), request.params.id, request.body as CaseChanges);
        return reply.code(204).send(null);
      },
    );

    app.delete(
      '/mr/api/v1/cases/:id',
      {
        config: write,
        schema: {
          tags: ['cases'],
          summary: 'Delete a case: it stays listed as status D without item',
          headers: PatientHeader,
          params: IdParams,
          response: { 204: Type.Null(), ...errors, 404: CasesError },
        },
      },
      async (request, reply) => {
        await service.delete(await scopeOf(request), request.params.id);
        return reply.code(204).send(null);
      },
    );
  };
}
