/**
 * Every event the service sends to webhook subscribers, declared once: each schema gives the
 * event's TypeScript type (recordEvent checks the payload against it at compile time), its name (the
 * names a subscription may list in `event_names`) and its entry in the OpenAPI `webhooks` section.
 * Adding an event is one entry here.
 */
import { Type, type Static, type TObject, type TProperties } from 'typebox';

/** The envelope every event shares (post_webhook.yaml): name, times, the client and business, and `data`. */
function event<N extends string, D extends TProperties>(name: N, doc: { summary: string; occurred: string }, data: D) {
  return Type.Object(
    {
      event: Type.Literal(name),
      event_time: Type.Integer({ description: `Epoch seconds when ${doc.occurred}` }),
      timestamp: Type.Integer({ description: 'Epoch seconds; equals event_time' }),
      client_id: Type.String(),
      business_id: Type.String(),
      data: Type.Object(data),
    },
    { summary: doc.summary },
  );
}

/**
 * The envelope of an event that belongs to one appointment or one patient's cases: Eka's `service`,
 * and `sequence`, which counts the events of that appointment (or patient) from 1 in the order the
 * changes happened. Deliveries to a subscription follow it (see src/jobs/queue-repo.ts, NewJob.ordering).
 */
function orderedEvent<N extends string, S extends string, D extends TProperties>(
  name: N,
  service: S,
  doc: { summary: string; occurred: string },
  data: D,
) {
  return Type.Object(
    {
      service: Type.Literal(service),
      event: Type.Literal(name),
      sequence: Type.Integer({
        minimum: 1,
        description:
          `Counts the events of this ${service === 'case' || service === 'document' ? "patient's cases and documents" : service} from 1, in the order they happened; ` +
          'a gap is an event of a type the subscription does not name',
      }),
      event_time: Type.Integer({ description: `Epoch seconds when ${doc.occurred}` }),
      timestamp: Type.Integer({ description: 'Epoch seconds; equals event_time' }),
      client_id: Type.String({ description: 'The API client whose call caused it' }),
      business_id: Type.String(),
      data: Type.Object(data),
    },
    { summary: doc.summary },
  );
}

const FreeForm = Type.Record(Type.String(), Type.Unknown());
const NoneIsEmpty = { description: 'Empty when there is none' };

/** What every appointment event says of the appointment (Eka's fields, then the times and mode). */
const appointment = {
  appointment_id: Type.String(),
  partner_appointment_id: Type.String(NoneIsEmpty),
  doctor_id: Type.String(),
  partner_doctor_id: Type.String(NoneIsEmpty),
  patient_id: Type.String(),
  partner_patient_id: Type.String(NoneIsEmpty),
  clinic_id: Type.String(),
  partner_clinic_id: Type.String(NoneIsEmpty),
  status: Type.Union([Type.Literal('BK'), Type.Literal('PA'), Type.Literal('NS'), Type.Literal('CM'), Type.Literal('CN'), Type.Literal('RES')], {
    description: 'BK booked, PA parked, NS no-show, CM completed, CN cancelled, RES rescheduled (next_aid names its successor)',
  }),
  mode: Type.Union([Type.Literal('in_clinic'), Type.Literal('tele')]),
  start_time: Type.Integer({ description: 'Epoch seconds' }),
  end_time: Type.Integer({ description: 'Epoch seconds' }),
  created_at: Type.Integer({ description: 'Epoch seconds' }),
  modified_at: Type.Integer({ description: 'Epoch seconds' }),
  custom_attributes: Type.Object({ label: Type.Optional(Type.Array(Type.String())), tags: Type.Optional(Type.Array(Type.String())) }),
  partner_meta: FreeForm,
  sa_ids: Type.Array(Type.String(), { description: 'Always empty: this service has no SA ids' }),
  prev_aids: Type.Optional(Type.Array(Type.String(), { description: 'The appointments this one was rescheduled from, oldest first' })),
  p_aid: Type.Optional(Type.String({ description: "The appointment this one was rescheduled from (the last of prev_aids), as Eka's SDKs read it" })),
  next_aid: Type.Optional(Type.String({ description: 'The appointment this one was rescheduled to (status RES)' })),
};

/** The fields of an appointment a change can touch, as `appointment.updated` names them. */
export const APPOINTMENT_FIELDS = [
  'start_time',
  'end_time',
  'patient_id',
  'patient_details',
  'token',
  'custom_attributes',
  'video_connect',
  'display_meta',
  'partner_meta',
  'mode',
  'notes',
] as const;

/**
 * How an appointment's status changed. `rescheduled` is sent by the reschedule operation (the
 * appointment stays BK; its times are in the body).
 */
export const STATUS_TRANSITIONS = ['parked', 'no_show', 'completed', 'cancelled', 'rescheduled'] as const;
export type StatusTransition = (typeof STATUS_TRANSITIONS)[number];

/** What every case event says of the case: no more than the case listing shows (contract 6). */
/** How many of a duplicate's records a merge moved to the survivor, per kind: the merge answer's and its event's. */
export const MergeMoved = Type.Object({
  appointments: Type.Integer(),
  reviews: Type.Integer(),
  cases: Type.Integer(),
  devices: Type.Integer(),
  documents: Type.Integer(),
});

const caseRef = {
  case_id: Type.String(),
  patient_id: Type.String({ description: 'The patient the case belongs to, as its X-Pt-Id is resolved' }),
  status: Type.Union([Type.Literal('A'), Type.Literal('D')], { description: 'A active, D deleted' }),
  updated_at: Type.Integer({ description: 'Epoch seconds, as the listing shows it' }),
};
const caseItem = Type.Object({
  display_name: Type.String(),
  type: Type.Optional(Type.String()),
  hi_type: Type.Optional(Type.String()),
  partner_meta: FreeForm,
  created_at: Type.Integer({ description: 'Epoch seconds' }),
  occurred_at: Type.Integer({ description: 'Epoch seconds' }),
});

/** What every document event says of the document: no more than the document listing shows. */
const documentRef = {
  document_id: Type.String(),
  patient_id: Type.String({ description: 'The patient the document belongs to, as its X-Pt-Id is resolved' }),
  status: Type.Union([Type.Literal('A'), Type.Literal('D')], { description: 'A active, D deleted' }),
  updated_at: Type.Integer({ description: 'Epoch seconds, as the listing shows it' }),
};
const documentItem = Type.Object({
  document_type: Type.String({ description: "Eka's dt ('' when none was given)" }),
  document_date: Type.Union([Type.Integer({ description: 'Epoch seconds (dd_e)' }), Type.Null()]),
  tags: Type.Array(Type.String()),
  title: Type.Union([Type.String(), Type.Null()]),
  cases: Type.Array(Type.String(), { description: 'The ids of the cases the document is linked to' }),
  upload_date: Type.Integer({ description: 'Epoch seconds' }),
  files: Type.Array(Type.Object({ content_type: Type.String(), size: Type.Integer() })),
});

export const EVENTS = {
  'external_review.request': event(
    'external_review.request',
    { summary: 'A review was requested for an appointment', occurred: 'the review request occurred' },
    {
      doctor_id: Type.String(),
      external_review_link: Type.String({ format: 'uri' }),
      patient_id: Type.String(),
      appointment_id: Type.String(),
      clinic_id: Type.String(),
    },
  ),
  'google_review.request': event(
    'google_review.request',
    {
      summary: "An appointment's first completion requested a review: external_review.request in Eka's name and body, for subscriptions that name it",
      occurred: 'the review request occurred',
    },
    {
      doctor_id: Type.String(),
      google_review_link: Type.String({ format: 'uri', description: 'The same link as external_review_link' }),
      patient_id: Type.String(),
      appointment_id: Type.String(),
      clinic_id: Type.String(),
    },
  ),
  'google_review.request_manual': event(
    'google_review.request_manual',
    {
      summary:
        "A review was requested by hand (POST .../review-request): external_review.request in Eka's name and body, for subscriptions that name it",
      occurred: 'the review request occurred',
    },
    {
      doctor_id: Type.String(),
      google_review_link: Type.String({ format: 'uri', description: 'The same link as external_review_link' }),
      patient_id: Type.String(),
      appointment_id: Type.String(),
      clinic_id: Type.String(),
    },
  ),
  'patient.merged': event(
    'patient.merged',
    { summary: 'A duplicate patient was merged into another: its records now belong to the survivor', occurred: 'the merge occurred' },
    {
      patient_id: Type.String({ description: 'The surviving patient' }),
      partner_patient_id: Type.Union([Type.String(), Type.Null()]),
      merged_patient_id: Type.String({ description: 'The duplicate, now archived with merged_into = patient_id' }),
      merged_partner_patient_id: Type.Union([Type.String(), Type.Null()]),
      moved: MergeMoved,
    },
  ),
  'patient.erased': event(
    'patient.erased',
    {
      summary:
        "A patient's data was erased on the patient's request: forget the person too. Appointments keep their times and statuses without the person; cases, devices and review comments are gone",
      occurred: 'the erasure occurred',
    },
    {
      patient_id: Type.String({ description: "The erased patient's service id (it answers as unknown from now on)" }),
      partner_patient_id: Type.Union([Type.String(), Type.Null()], { description: "The partner's id of the patient, as the partner gave it" }),
      merged_patient_ids: Type.Array(Type.String(), { description: 'Patients merged into it earlier, erased with it' }),
    },
  ),
  'appointment.created': orderedEvent(
    'appointment.created',
    'appointment',
    { summary: 'An appointment was booked', occurred: 'the booking occurred' },
    { ...appointment, action: Type.Literal('created') },
  ),
  'appointment.updated': orderedEvent(
    'appointment.updated',
    'appointment',
    { summary: 'An appointment was changed (its times, patient, token or attributes)', occurred: 'the change occurred' },
    {
      ...appointment,
      action: Type.Literal('modified'),
      changed: Type.Array(Type.Union(APPOINTMENT_FIELDS.map((field) => Type.Literal(field))), {
        description: 'The fields the change altered; the body holds their new values where it shows them',
      }),
    },
  ),
  'appointment.statuschange': orderedEvent(
    'appointment.statuschange',
    'appointment',
    { summary: "An appointment's status changed: parked, no-show, completed, cancelled, or it was rescheduled", occurred: 'the change occurred' },
    {
      ...appointment,
      transition: Type.Union(STATUS_TRANSITIONS.map((transition) => Type.Literal(transition))),
      previous_status: appointment.status,
    },
  ),
  'case.created': orderedEvent(
    'case.created',
    'case',
    { summary: 'A case was created for a patient', occurred: 'the case was created' },
    { ...caseRef, item: caseItem },
  ),
  'case.updated': orderedEvent(
    'case.updated',
    'case',
    { summary: 'A case was changed', occurred: 'the change occurred' },
    {
      ...caseRef,
      item: caseItem,
      changed: Type.Array(Type.String(), { description: 'The item fields the change named' }),
    },
  ),
  'case.deleted': orderedEvent(
    'case.deleted',
    'case',
    { summary: 'A case was deleted (the listing shows its tombstone)', occurred: 'the delete occurred' },
    caseRef,
  ),
  'document.created': orderedEvent(
    'document.created',
    'document',
    { summary: "A document was added to a patient's record (all its files are stored)", occurred: 'its last file was stored' },
    { ...documentRef, item: documentItem },
  ),
  'document.updated': orderedEvent(
    'document.updated',
    'document',
    { summary: "A document's details were changed (type, date, tags, title or cases)", occurred: 'the change occurred' },
    {
      ...documentRef,
      item: documentItem,
      changed: Type.Array(Type.String(), { description: 'The fields the change named (dt, dd_e, tg, title, cases)' }),
    },
  ),
  'document.deleted': orderedEvent(
    'document.deleted',
    'document',
    { summary: 'A document was deleted: its files are removed and the listing shows its tombstone', occurred: 'the delete occurred' },
    documentRef,
  ),
  'schedule.updated': event(
    'schedule.updated',
    { summary: "A doctor's schedule at a clinic was created or replaced: its slots may have changed", occurred: 'the change was made' },
    {
      action: Type.Union([Type.Literal('created'), Type.Literal('replaced')]),
      schedule_id: Type.String(),
      doctor_id: Type.String(),
      clinic_id: Type.String(),
      schedule: Type.Record(Type.String(), Type.Unknown(), {
        description: 'The schedule as GET .../schedule answers it (timezone, slot_minutes, capacity, buffer_minutes, sessions, exceptions)',
      }),
    },
  ),
  'schedule.deleted': event(
    'schedule.deleted',
    { summary: "A doctor's schedule at a clinic was deleted: the pair books at any time again", occurred: 'the schedule was deleted' },
    { schedule_id: Type.String(), doctor_id: Type.String(), clinic_id: Type.String() },
  ),
  'webhook.subscription.disabled': event(
    'webhook.subscription.disabled',
    { summary: 'A webhook subscription was disabled because its deliveries kept failing, or its endpoint answered 410', occurred: 'it was disabled' },
    {
      subscription_id: Type.String(),
      endpoint: Type.String(),
      reason: Type.String(),
      failing_since: Type.Union([Type.Integer({ description: 'Epoch seconds of the first failure in a row' }), Type.Null()]),
    },
  ),
} satisfies Record<string, TObject>;

export type EventName = keyof typeof EVENTS;
export type EventBody<N extends EventName = EventName> = Static<(typeof EVENTS)[N]>;
/** What a change hands to recordEvent: the body without `sequence`, which recordEvent numbers. */
export type EventInput<N extends EventName = EventName> = N extends EventName ? Omit<EventBody<N>, 'sequence'> : never;

/** True when the event's body carries a `sequence` (orderedEvent): it must be recorded with an ordering key. */
export function isSequenced(name: EventName): boolean {
  return Object.hasOwn(EVENTS[name].properties, 'sequence');
}

/**
 * What every event body starts with: its name, when (epoch seconds, in both of Eka's fields), the API
 * client that caused it ('' when none did) and the business.
 */
export function envelope<N extends EventName>(
  event: N,
  caller: { businessId: string; clientId?: string | null },
  now: number,
): { event: N; event_time: number; timestamp: number; client_id: string; business_id: string } {
  const at = Math.floor(now / 1000);
  return { event, event_time: at, timestamp: at, client_id: caller.clientId ?? '', business_id: caller.businessId };
}

export const EVENT_NAMES = Object.keys(EVENTS) as EventName[];

export function isEventName(name: string): name is EventName {
  return Object.hasOwn(EVENTS, name);
}

/** The OpenAPI `webhooks` section: one POST per event, its body the event's schema. */
export function webhookDocs(): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(EVENTS).map(([name, schema]) => {
      const { summary, ...body } = schema as unknown as { summary: string };
      return [
        name,
        {
          post: {
            summary,
            description:
              `Sent to each active subscription for \`${name}\`, signed the Standard Webhooks way ` +
              '(`webhook-id`, `webhook-timestamp`, `webhook-signature`) and the Eka way (`Eka-Webhook-Signature: t=<timestamp>,v1=<hex>`), ' +
              "over a compact body with non-ASCII escaped, as Python's json.dumps writes it. Delivery is at least once; a 2xx within 15 s is success.",
            requestBody: { required: true, content: { 'application/json': { schema: body } } },
            responses: { '2XX': { description: 'Received' } },
          },
        },
      ];
    }),
  );
}
