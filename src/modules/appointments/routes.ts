/**
 * Appointments `/dr/v1/appointment` (contract section 4), header `auth`. `?partner_id=1` makes every
 * `{appointment_id}` the partner's id.
 */
import { Type } from 'typebox';
import type { App } from '../../http/app-type.ts';
import { principalOf } from '../../http/auth.ts';
import { byPartner, MAX_ID_LENGTH, type RouteConfig, StandardError } from '../../http/schemas.ts';
import { MAX_SLOT_DAYS, slotsJsonBytes, type Scheduling } from './scheduling.ts';
import type { PatientService } from '../patients/service.ts';
import {
  BookBody,
  CustomAttributes,
  CustomAttributesBody,
  EkaReschedule,
  ListQuery,
  PatientDetails,
  Reschedule,
  UpdateBody,
  UpdateV2Body,
  VideoConnect,
} from './schemas.ts';
import type { AppointmentService } from './service.ts';

/** The appointment record (contract 4), as every appointment answer renders it. */
export const AppointmentRecordSchema = Type.Object({
  appointment_id: Type.String(),
  partner_appointment_id: Type.Optional(Type.String()),
  clinic_id: Type.String(),
  partner_clinic_id: Type.Optional(Type.String()),
  doctor_id: Type.String(),
  partner_doctor_id: Type.Optional(Type.String()),
  patient_id: Type.String(),
  partner_patient_id: Type.Optional(Type.String()),
  status: Type.String({ description: 'BK booked, PA parked, NS no-show, CM completed, CN cancelled, RES rescheduled (see next_aid)' }),
  mode: Type.String({ description: 'in_clinic or tele' }),
  start_time: Type.Integer(),
  end_time: Type.Integer(),
  token: Type.Optional(Type.Integer()),
  patient_details: PatientDetails,
  custom_attributes: Type.Object(CustomAttributes.properties, {
    additionalProperties: true,
    description: 'label and tags, and the attributes set by the custom_attribute operation',
  }),
  video_connect: Type.Optional(VideoConnect),
  display_meta: Type.Object({}, { additionalProperties: true }),
  partner_meta: Type.Object({}, { additionalProperties: true }),
  notes: Type.Optional(Type.String()),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
  prev_aids: Type.Optional(Type.Array(Type.String(), { description: 'The appointments this one was rescheduled from, oldest first' })),
  next_aid: Type.Optional(Type.String({ description: 'The appointment this one was rescheduled to' })),
});

const Params = Type.Object({ appointment_id: Type.String({ maxLength: MAX_ID_LENGTH }) });
const ByPartner = Type.Object({ partner_id: Type.Optional(Type.String({ description: "1: appointment_id is the partner's id" })) });
const errors = { 400: StandardError, 401: StandardError, 403: StandardError, 404: StandardError, 500: StandardError };

const write: RouteConfig = { family: 'appointments', auth: { anyOf: ['appointment:write'] } };
const read: RouteConfig = { family: 'appointments', auth: { anyOf: ['appointment:write', 'appointment:complete'] } };
const complete: RouteConfig = {
  family: 'appointments',
  auth: { anyOf: ['appointment:complete'], forbiddenCode: 'COMPLETE_NOT_ALLOWED' },
  idempotent: true,
};
// Creations and status changes accept an Idempotency-Key (src/http/idempotency.ts).
const change: RouteConfig = { ...write, idempotent: true };
const tags = ['appointments'];

export function appointmentRoutes(service: AppointmentService) {
  return async function plugin(app: App): Promise<void> {
    app.post(
      '/dr/v1/appointment',
      {
        config: change,
        schema: {
          tags,
          summary: 'Book an appointment (status BK)',
          body: BookBody,
          response: { 201: Type.Object({ appointment_id: Type.String() }), ...errors, 409: StandardError },
        },
      },
      async (request, reply) => reply.code(201).send({ appointment_id: await service.book(principalOf(request), request.body) }),
    );

    app.get(
      '/dr/v1/appointment',
      {
        config: read,
        schema: {
          tags,
          summary: 'List appointments by start time, 50 a page',
          querystring: ListQuery,
          response: { 200: Type.Object({ appointments: Type.Array(AppointmentRecordSchema) }), ...errors },
        },
      },
      async (request) => ({ appointments: await service.list(principalOf(request).businessId, request.query) }),
    );

    app.get(
      '/dr/v1/appointment/:appointment_id',
      {
        config: read,
        schema: {
          tags,
          summary: 'Read an appointment',
          params: Params,
          querystring: ByPartner,
          response: { 200: AppointmentRecordSchema, ...errors },
        },
      },
      async (request) => service.get(principalOf(request).businessId, request.params.appointment_id, byPartner(request.query)),
    );

    app.patch(
      '/dr/v1/appointment/:appointment_id',
      {
        config: write,
        schema: {
          tags,
          summary: 'Update an appointment (partial; partner_meta, custom_attributes, video_connect and display_meta are replaced)',
          params: Params,
          querystring: ByPartner,
          body: UpdateBody,
          response: { 200: AppointmentRecordSchema, ...errors },
        },
      },
      async (request) => service.update(principalOf(request), request.params.appointment_id, byPartner(request.query), request.body),
    );

    app.patch(
      '/dr/v2/appointment/:appointment_id',
      {
        config: write,
        schema: {
          tags,
          summary:
            "Update an appointment, Eka's v2 body (times, mode, custom_attributes and video_connect in appointment_details; clinic, doctor and patient ids, when sent, must be the appointment's); 204",
          params: Params,
          querystring: ByPartner,
          body: UpdateV2Body,
          response: { 204: Type.Null({ description: 'Updated' }), ...errors, 409: StandardError },
        },
      },
      async (request, reply) => {
        const { token, appointment_details: details = {}, partner_meta, patient_details, display_meta, notes, ...expected } = request.body;
        const { start_time, end_time, mode, custom_attributes, video_connect } = details;
        const input = { token, partner_meta, patient_details, display_meta, notes, start_time, end_time, mode, custom_attributes, video_connect };
        await service.update(principalOf(request), request.params.appointment_id, byPartner(request.query), input, expected);
        return reply.code(204).send(null);
      },
    );

    app.get(
      '/dr/v1/business/appointments/:appointment_id',
      {
        config: read,
        schema: {
          tags,
          summary: 'Read an appointment (the path Eka’s business clients read it by)',
          params: Params,
          querystring: ByPartner,
          response: { 200: AppointmentRecordSchema, ...errors },
        },
      },
      async (request) => service.get(principalOf(request).businessId, request.params.appointment_id, byPartner(request.query)),
    );

    app.post(
      '/dr/v1/appointment/:appointment_id/parked',
      {
        config: change,
        schema: {
          tags,
          summary: 'Park a booked appointment (status PA); 204',
          params: Params,
          querystring: ByPartner,
          response: { 204: Type.Null({ description: 'Parked' }), ...errors, 409: StandardError },
        },
      },
      async (request, reply) => {
        await service.park(principalOf(request), request.params.appointment_id, byPartner(request.query));
        return reply.code(204).send(null);
      },
    );

    app.patch(
      '/dr/v1/appointment/:appointment_id/custom_attribute',
      {
        config: write,
        schema: {
          tags,
          summary: 'Set custom attributes: the keys sent replace those stored (null removes one), the others stay; 204',
          params: Params,
          querystring: ByPartner,
          body: CustomAttributesBody,
          response: { 204: Type.Null({ description: 'Set' }), ...errors, 409: StandardError },
        },
      },
      async (request, reply) => {
        await service.setCustomAttributes(principalOf(request), request.params.appointment_id, byPartner(request.query), request.body);
        return reply.code(204).send(null);
      },
    );

    app.post(
      '/dr/v1/appointment/:appointment_id/change-status',
      {
        config: change,
        schema: {
          tags,
          summary: 'Mark as no-show (status NS), from any state',
          params: Params,
          querystring: ByPartner,
          body: Type.Object({ status: Type.Literal('NS', { 'x-message': 'must be "NS" (no-show)' }) }),
          response: { 200: AppointmentRecordSchema, ...errors },
        },
      },
      async (request) => service.noShow(principalOf(request), request.params.appointment_id, byPartner(request.query)),
    );

    app.post(
      '/dr/v1/appointment/:appointment_id/complete',
      {
        config: complete,
        schema: {
          tags,
          summary: 'Complete (status CM), from any state; the first completion requests a review',
          params: Params,
          querystring: ByPartner,
          response: { 200: AppointmentRecordSchema, ...errors },
        },
      },
      async (request) => service.complete(principalOf(request), request.params.appointment_id, byPartner(request.query)),
    );

    app.put(
      '/dr/v1/appointment/:appointment_id/cancel',
      {
        config: change,
        schema: {
          tags,
          summary: 'Cancel (status CN)',
          params: Params,
          querystring: ByPartner,
          response: { 200: AppointmentRecordSchema, ...errors },
        },
      },
      async (request) => service.cancel(principalOf(request), request.params.appointment_id, byPartner(request.query)),
    );

    app.post(
      '/dr/v1/appointment/:appointment_id/review-request',
      {
        config: change,
        schema: {
          tags,
          summary: "Request a review now (emits external_review.request, and google_review.request_manual in Eka's name)",
          params: Params,
          querystring: ByPartner,
          response: { 202: Type.Object({ event_id: Type.String() }), ...errors },
        },
      },
      async (request, reply) =>
        reply
          .code(202)
          .send({ event_id: await service.requestReview(principalOf(request), request.params.appointment_id, byPartner(request.query)) }),
    );
  };
}

/**
 * A patient's appointments, `/dr/v1/appointment/patient/{patient_id}`: the patient is found the patients
 * module's way (archived ones too), so a partner id or a merged-away id answers as it does there.
 */
export function patientAppointmentRoutes(service: AppointmentService, patients: PatientService) {
  return async function plugin(app: App): Promise<void> {
    app.get(
      '/dr/v1/appointment/patient/:patient_id',
      {
        config: { family: 'appointments', auth: { anyOf: ['patient:read', 'patient:write', 'appointment:write', 'appointment:complete'] } },
        schema: {
          tags: ['patients'],
          summary: "A patient's appointments, newest first, 50 a page: follow next_token (sent back as offset) until it is null",
          params: Type.Object({ patient_id: Type.String({ maxLength: MAX_ID_LENGTH }) }),
          querystring: Type.Object({
            partner_id: Type.Optional(Type.String({ maxLength: 10, description: "1: the path id is the partner's id" })),
            offset: Type.Optional(Type.String({ maxLength: 400, description: 'The next_token of the previous page' })),
          }),
          response: {
            200: Type.Object({
              success: Type.Boolean(),
              data: Type.Array(AppointmentRecordSchema),
              next_token: Type.Union([Type.String(), Type.Null()]),
            }),
            ...errors,
          },
        },
      },
      async (request) => {
        const businessId = principalOf(request).businessId;
        const patient = await patients.get(businessId, request.params.patient_id, byPartner(request.query), { archived: true });
        const page = await service.listForPatient(businessId, patient.id, request.query.offset);
        return { success: true, data: page.appointments, next_token: page.next_token };
      },
    );
  };
}

const PathId = Type.String({ maxLength: MAX_ID_LENGTH });

const Slot = Type.Object({
  available: Type.Boolean({ description: 'A place is left and the slot has not begun' }),
  conf_id: Type.String({ description: 'The schedule’s id' }),
  s: Type.String({ format: 'date-time', description: 'Start, local time with offset' }),
  e: Type.String({ format: 'date-time', description: 'End, local time with offset' }),
  slots_booked: Type.Integer({ description: 'Places taken' }),
  start_time: Type.Integer({ description: 'Start, epoch seconds: send it to book' }),
  end_time: Type.Integer({ description: 'End, epoch seconds: send it to book' }),
  capacity: Type.Integer({ description: 'Places in the slot (patients per slot)' }),
  places_left: Type.Integer(),
});
const Service = Type.Object({
  allow_patient_booking: Type.Boolean(),
  appointment_type: Type.String(),
  c_at: Type.String({ format: 'date-time' }),
  conf_id: Type.String(),
  mode: Type.Array(Type.String()),
  owner_id: Type.String(),
  post_pay: Type.Boolean(),
  pre_pay: Type.Boolean(),
  price: Type.Union([Type.Number(), Type.Null()]),
  service_name: Type.String(),
  timezone: Type.String(),
  slot_minutes: Type.Integer(),
  capacity: Type.Integer(),
});
const ClinicService = Type.Object({
  service_type: Type.String(),
  service_name: Type.String(),
  conf_id: Type.String(),
  fee: Type.Union([Type.Number(), Type.Null()], { description: 'The price of the service' }),
  slots: Type.Array(Slot, { description: 'Every slot of the range, in order' }),
});
/** The slots answer as documented; the route writes it with JSON.stringify (see below). */
export const Slots = Type.Object({
  success: Type.Literal('true'),
  status_code: Type.Literal(200),
  data: Type.Object({
    schedule: Type.Record(Type.String(), Type.Union([Type.Record(Type.String(), Type.Array(Slot)), Type.Array(ClinicService)]), {
      description:
        "Under the doctor's id: date -> slots (the shape of Eka's schema); under the clinic's id as the path names it: the services with their slots (the shape of Eka's example, which Eka's clients read). Empty when the pair has no schedule (it books at any time)",
    }),
    services: Type.Record(Type.String(), Service, { description: 'schedule id (conf_id) -> the consultation it offers' }),
  }),
});

/** A day as Eka's clients send it: a date, or a date with a time part (eka-mcp-sdk sends `2030-01-07T00:00:00.000Z`), whose date is the day. */
const dayText = (description: string) =>
  Type.String({
    maxLength: 35,
    pattern: '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:?\\d{2})?)?$',
    'x-message': 'must be a date, YYYY-MM-DD, or a date and time (YYYY-MM-DDTHH:MM:SS.sssZ)',
    description: `${description}; a time part may follow (its date is the day, as written)`,
  });
const SlotQuery = Type.Object({
  start_date: dayText('YYYY-MM-DD, in the schedule’s time zone'),
  end_date: dayText(`YYYY-MM-DD, inclusive; at most ${MAX_SLOT_DAYS} days after start_date`),
  partner_id: ByPartner.properties.partner_id,
});

const schedulingErrors = { ...errors, 409: StandardError };
const rescheduleSummary =
  'Reschedule: a new appointment at the new time (the answer) with prev_aids; the old one becomes RES with next_aid and frees its place. A rescheduled, completed, cancelled or no-show appointment cannot be rescheduled.';

/**
 * Scheduling under the appointments family: the free slots of a doctor at a clinic and the two
 * reschedule operations of Eka's documents. `?partner_id=1` makes the path's ids the partner's.
 */
export function schedulingRoutes(scheduling: Scheduling, appointments: AppointmentService) {
  return async function plugin(app: App): Promise<void> {
    app.get(
      '/dr/v1/doctor/:doctor_id/clinic/:clinic_id/appointment/slot',
      {
        config: read,
        schema: {
          tags,
          summary: `The doctor's slots at the clinic from start_date to end_date (up to ${MAX_SLOT_DAYS} days), with the places left in each`,
          params: Type.Object({ doctor_id: PathId, clinic_id: PathId }),
          querystring: SlotQuery,
          response: { 200: Slots, ...schedulingErrors },
        },
      },
      async (request, reply) => {
        const { doctor_id, clinic_id } = request.params;
        const day = (value: string) => value.slice(0, 10);
        const { start_date, end_date } = request.query;
        const answer = await scheduling.slots(
          principalOf(request).businessId,
          doctor_id,
          clinic_id,
          byPartner(request.query),
          day(start_date),
          day(end_date),
        );
        // The schema's union (two shapes under data.schedule) makes Fastify's serializer check every value against
        // each branch with Ajv (~80 ms of CPU for 31 days of the worst schedule). The answer is built to the schema
        // (EkaSlots) with no other field, so it goes out as written; errors keep their schema's serializer. Sent as
        // bytes (see slotsJsonBytes); the reply's type names the JSON the bytes hold, so the Buffer is cast to it.
        return reply.type('application/json; charset=utf-8').send(slotsJsonBytes(answer) as never);
      },
    );

    app.put(
      '/dr/v1/appointment/:appointment_id/reschedule',
      {
        config: change,
        schema: {
          tags,
          summary: rescheduleSummary,
          params: Params,
          querystring: ByPartner,
          body: EkaReschedule,
          response: { 200: AppointmentRecordSchema, ...schedulingErrors },
        },
      },
      async (request) => {
        const { doc_id, ...body } = request.body;
        return appointments.reschedule(principalOf(request), request.params.appointment_id, byPartner(request.query), { ...body, doctor_id: doc_id });
      },
    );

    app.patch(
      '/appointments/v1/:appointment_id/reschedule',
      {
        config: change,
        schema: {
          tags,
          summary: `${rescheduleSummary} With partner_appointment_id, the path holds the partner's id of the old appointment.`,
          params: Params,
          querystring: ByPartner,
          body: Reschedule,
          response: { 200: AppointmentRecordSchema, ...schedulingErrors },
        },
      },
      async (request) =>
        appointments.reschedule(
          principalOf(request),
          request.params.appointment_id,
          byPartner(request.query) || request.body.partner_appointment_id !== undefined,
          request.body,
        ),
    );
  };
}
