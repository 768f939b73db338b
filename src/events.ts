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
  'patient.merged': event(
    'patient.merged',
    { summary: 'A duplicate patient was merged into another: its records now belong to the survivor', occurred: 'the merge occurred' },
    {
      patient_id: Type.String({ description: 'The surviving patient' }),
      partner_patient_id: Type.Union([Type.String(), Type.Null()]),
      merged_patient_id: Type.String({ description: 'The duplicate, now archived with merged_into = patient_id' }),
      merged_partner_patient_id: Type.Union([Type.String(), Type.Null()]),
      moved: Type.Object({
        appointments: Type.Integer(),
        reviews: Type.Integer(),
        cases: Type.Integer(),
        devices: Type.Integer(),
      }),
    },
  ),
} satisfies Record<string, TObject>;

export type EventName = keyof typeof EVENTS;
export type EventBody<N extends EventName = EventName> = Static<(typeof EVENTS)[N]>;

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
              '(`webhook-id`, `webhook-timestamp`, `webhook-signature`). Delivery is at least once; a 2xx within 15 s is success.',
            requestBody: { required: true, content: { 'application/json': { schema: body } } },
            responses: { '2XX': { description: 'Received' } },
          },
        },
      ];
    }),
  );
}
