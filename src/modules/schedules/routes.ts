/**
 * Schedules `/cdr/v1/doctor/{doctor_id}/clinic/{clinic_id}/schedule`: the clinics family (DRF-style bodies,
 * every problem of a write at once), scope `clinic:write` for writes. `?partner_id=1` makes both path ids
 * the partner's.
 */
import type { FastifyError, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { App } from '../../http/app-type.ts';
import { principalOf } from '../../http/auth.ts';
import { validationProblem } from '../../http/errors.ts';
import { byPartner, ClinicsError, ClinicsNotFound, MAX_ID_LENGTH, type RouteConfig, StandardError } from '../../http/schemas.ts';
import { ScheduleBody, ScheduleException, Session } from './schemas.ts';
import type { ScheduleInput, ScheduleService } from './service.ts';

const Schedule = Type.Object({
  schedule_id: Type.String(),
  doctor_id: Type.String(),
  clinic_id: Type.String(),
  timezone: Type.String(),
  slot_minutes: Type.Integer(),
  capacity: Type.Integer(),
  buffer_minutes: Type.Integer(),
  sessions: Type.Array(Session),
  exceptions: Type.Array(ScheduleException),
  service_name: Type.Union([Type.String(), Type.Null()]),
  price: Type.Union([Type.Number(), Type.Null()]),
  currency: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
});
const ScheduleRead = Type.Object({ status: Type.Literal('success'), schedule: Schedule });

/** Eka's `GetDoctorServices` (`doc-tool.yaml`): one service per schedule of the doctor. */
const DoctorServices = Type.Object({
  data: Type.Object({
    services: Type.Array(
      Type.Object({
        conf_id: Type.String({ description: 'The schedule id' }),
        clinic_id: Type.String(),
        service_name: Type.String(),
        appointment_type: Type.Literal('REGULAR'),
        archive: Type.Boolean(),
        created_at: Type.Integer({ description: 'Epoch seconds' }),
        currency: Type.Optional(Type.String({ description: 'Absent when the schedule states none' })),
        duration: Type.Integer({ description: 'Slot length, minutes' }),
        mode: Type.Array(Type.Literal('in-clinic')),
        pre_pay: Type.Boolean(),
        price: Type.Optional(Type.Number({ description: 'Absent when the schedule states none' })),
      }),
    ),
  }),
});

const PathId = Type.String({ maxLength: MAX_ID_LENGTH });
const Params = Type.Object({ doctor_id: PathId, clinic_id: PathId });
const ByPartner = Type.Object({ partner_id: Type.Optional(Type.String({ description: "1: doctor_id and clinic_id are the partner's ids" })) });

const errors = { 400: ClinicsError, 401: ClinicsError, 403: ClinicsError, 404: ClinicsNotFound };
const drErrors = { 400: StandardError, 401: StandardError, 403: StandardError, 404: StandardError };
const tags = ['schedules'];
const read: RouteConfig = { family: 'clinics', auth: { anyOf: [] } };
/** Eka's doctor-tool reads answer in the appointments family, as the doctor profile does. */
const directoryRead: RouteConfig = { family: 'appointments', auth: read.auth };
const write: RouteConfig = { family: 'clinics', auth: { anyOf: ['clinic:write'] } };
const PATH = '/cdr/v1/doctor/:doctor_id/clinic/:clinic_id/schedule';

/** The body with what the schema refused of it; a refused path or query stops here. */
function submitted(request: FastifyRequest): [ScheduleInput, Record<string, string[]>] {
  const error = request.validationError as FastifyError | undefined;
  if (!error) return [request.body as ScheduleInput, {}];
  if (error.validationContext !== 'body') throw error;
  const body: unknown = request.body;
  const fields = (body !== null && typeof body === 'object' && !Array.isArray(body) ? body : {}) as ScheduleInput;
  return [fields, validationProblem(error).fields ?? {}];
}

export function scheduleRoutes(service: ScheduleService) {
  return async function plugin(app: App): Promise<void> {
    app.put(
      PATH,
      {
        config: write,
        attachValidation: true,
        schema: {
          tags,
          summary: "Set the doctor's schedule at the clinic (creates or replaces it); bookings of the pair must then fit a free slot",
          params: Params,
          querystring: ByPartner,
          body: ScheduleBody,
          response: { 200: ScheduleRead, ...errors },
        },
      },
      async (request) => {
        const { doctor_id, clinic_id } = request.params;
        const schedule = await service.put(principalOf(request), doctor_id, clinic_id, byPartner(request.query), ...submitted(request));
        return { status: 'success' as const, schedule };
      },
    );

    app.get(
      PATH,
      {
        config: read,
        schema: {
          tags,
          summary: "Read the doctor's schedule at the clinic",
          params: Params,
          querystring: ByPartner,
          response: { 200: ScheduleRead, ...errors },
        },
      },
      async (request) => {
        const { doctor_id, clinic_id } = request.params;
        return {
          status: 'success' as const,
          schedule: await service.get(principalOf(request).businessId, doctor_id, clinic_id, byPartner(request.query)),
        };
      },
    );

    app.get(
      '/dr/v1/doctor/service/:doctor_id',
      {
        config: directoryRead,
        schema: {
          tags,
          summary: "The doctor's services and fees (Eka's shape): one per schedule, across the business's clinics",
          params: Type.Object({ doctor_id: PathId }),
          querystring: ByPartner,
          response: { 200: DoctorServices, ...drErrors },
        },
      },
      async (request) => ({
        data: { services: await service.servicesOfDoctor(principalOf(request).businessId, request.params.doctor_id, byPartner(request.query)) },
      }),
    );

    app.delete(
      PATH,
      {
        config: write,
        schema: {
          tags,
          summary: "Delete the doctor's schedule at the clinic: the pair books at any time again",
          params: Params,
          querystring: ByPartner,
          response: { 200: Type.Object({ status: Type.Literal('success'), message: Type.String() }), ...errors },
        },
      },
      async (request) => {
        const { doctor_id, clinic_id } = request.params;
        await service.delete(principalOf(request), doctor_id, clinic_id, byPartner(request.query));
        return { status: 'success' as const, message: 'Schedule Deleted Successfully' };
      },
    );
  };
}
