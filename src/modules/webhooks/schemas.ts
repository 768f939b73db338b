/**
 * What a client sends about webhook subscriptions, as TypeBox schemas: the routes validate and document the
 * requests with them, and the service's input types are derived from them (CreateInput, UpdateInput,
 * DeliveryQuery, ReplayInput), so the two cannot drift.
 */
import { Type } from 'typebox';
import type { EventName } from '../../events.ts';

/** What a subscription that names no events receives. */
export const DEFAULT_EVENT_NAMES: EventName[] = ['external_review.request'];

const Protocol = Type.Union([Type.Literal('https'), Type.Literal('http')], { 'x-message': 'must be "https" or "http"' });
const Status = Type.Union([Type.Literal('active'), Type.Literal('disabled')], { 'x-message': 'must be "active" or "disabled"' });
const Endpoint = Type.String({ minLength: 1, maxLength: 2048 });
const EventNames = Type.Array(Type.String({ maxLength: 100 }), { minItems: 1, maxItems: 20 });
const SigningKey = Type.String({ maxLength: 200 });
const EpochSeconds = Type.Integer({ minimum: 0, maximum: 99_999_999_999, description: 'epoch seconds' });

export const CreateBody = Type.Object({
  endpoint: Endpoint,
  event_names: Type.Optional({
    ...EventNames,
    description: `The events to receive. Without it, only ${DEFAULT_EVENT_NAMES.join(', ')}: name every event wanted.`,
  }),
  signing_key: Type.Optional(SigningKey),
  protocol: Type.Optional(Protocol),
});

/** No body (null) changes nothing. */
export const UpdateBody = Type.Union([
  Type.Object({
    endpoint: Type.Optional(Endpoint),
    event_names: Type.Optional(EventNames),
    signing_key: Type.Optional(SigningKey),
    status: Type.Optional(Status),
    protocol: Type.Optional(Protocol),
  }),
  Type.Null(),
]);

export const DeliveryQuery = Type.Object({
  page_no: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 })),
  status: Type.Optional(
    Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')], {
      'x-message': 'must be "pending", "succeeded" or "failed"',
    }),
  ),
  event: Type.Optional(Type.String({ minLength: 1, maxLength: 1000, description: 'event names, comma-separated' })),
  since: Type.Optional({ ...EpochSeconds, description: 'events at or after (epoch seconds)' }),
  until: Type.Optional({ ...EpochSeconds, description: 'events before (epoch seconds)' }),
});

export const ReplayBody = Type.Object({
  since: { ...EpochSeconds, description: 'events at or after (epoch seconds)' },
  until: Type.Optional({ ...EpochSeconds, description: 'events before (epoch seconds); default now' }),
  event_names: Type.Optional(EventNames),
  page_token: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
});
