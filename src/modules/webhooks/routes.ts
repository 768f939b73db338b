/** Webhook subscriptions and deliveries (contract 8), Bearer with scope webhook:admin. */
import type { FastifyContextConfig } from 'fastify';
import { Type } from 'typebox';
import type { App } from '../../http/app-type.ts';
import { principalOf } from '../../http/auth.ts';
import { StandardError } from '../../http/schemas.ts';
import { CreateBody, DeliveryQuery, ReplayBody, UpdateBody } from './schemas.ts';
import { ATTEMPTS_SHOWN, REPLAY_PAGE_SIZE, type WebhookService } from './service.ts';

const BASE = '/notification/v1/connect/webhook/subscriptions';
const EVENTS = '/notification/v1/connect/webhook/events';

const Warnings = Type.Array(Type.String(), {
  description: 'Present when the signing key given is guessable: it is accepted, and the warning says why to change it',
});

const Subscription = Type.Object({
  id: Type.String(),
  endpoint: Type.String(),
  event_names: Type.Array(Type.String()),
  protocol: Type.String(),
  status: Type.String(),
  created_at: Type.Integer({ description: 'epoch seconds' }),
  updated_at: Type.Integer({ description: 'epoch seconds' }),
});

const DeliveryState = {
  status: Type.String({ description: 'pending, succeeded or failed' }),
  attempts: Type.Integer(),
  last_status_code: Type.Union([Type.Integer(), Type.Null()]),
  last_error: Type.Union([Type.String(), Type.Null()]),
  next_attempt_at: Type.Union([Type.Integer({ description: 'epoch seconds' }), Type.Null()]),
};

const EventView = Type.Object({
  id: Type.String(),
  event: Type.String(),
  created_at: Type.Integer({ description: 'epoch seconds' }),
  ordering_key: Type.Union([Type.String(), Type.Null()], {
    description: 'appointment:<id> or patient:<id>: events of one key are delivered in order',
  }),
  sequence: Type.Union([Type.Integer(), Type.Null()]),
  body: Type.Record(Type.String(), Type.Unknown(), { description: 'The body every attempt sends' }),
  deliveries: Type.Array(
    Type.Object({
      subscription_id: Type.String(),
      ...DeliveryState,
      last_attempt_at: Type.Union([Type.Integer({ description: 'epoch seconds' }), Type.Null()]),
      attempt_history: Type.Array(
        Type.Object({
          attempt: Type.Integer({ description: "1, 2, ...: the delivery's attempts, manual retries included" }),
          started_at: Type.Integer({ description: 'epoch seconds' }),
          finished_at: Type.Integer({ description: 'epoch seconds' }),
          duration_ms: Type.Integer(),
          status_code: Type.Union([Type.Integer(), Type.Null()], { description: "The receiver's answer; null when none came" }),
          error: Type.Union([Type.String(), Type.Null()], {
            description: 'The class of failure ("HTTP 503", "could not connect"); null when the receiver accepted it',
          }),
        }),
        { description: `The latest ${ATTEMPTS_SHOWN} attempts, oldest first (attempts counts them all; older ones are pruned by age)` },
      ),
    }),
  ),
});

const Delivery = Type.Object({
  event_id: Type.String(),
  event: Type.String(),
  ...DeliveryState,
});

const IdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });
const Errors = { 400: StandardError, 401: StandardError, 403: StandardError, 404: StandardError };

export function webhookRoutes(service: WebhookService) {
  return async function plugin(app: App): Promise<void> {
    const config: FastifyContextConfig = { family: 'standard', auth: { anyOf: ['webhook:admin'] } };
    const tags = ['webhooks'];

    app.post(
      BASE,
      {
        config: { ...config, idempotent: true },
        schema: {
          tags,
          summary: 'Register a webhook endpoint; the signing key is returned only here',
          body: CreateBody,
          response: {
            201: Type.Object({ id: Type.String(), status: Type.Literal('success'), signing_key: Type.String(), warnings: Type.Optional(Warnings) }),
            ...Errors,
          },
        },
      },
      async (request, reply) => {
        const { id, signing_key, warnings } = await service.createSubscription(principalOf(request).businessId, request.body);
        if (warnings.length > 0) request.log.warn({ subscription_id: id }, 'webhook subscription registered with a guessable signing key');
        return reply.code(201).send({ id, status: 'success', signing_key, ...(warnings.length > 0 ? { warnings } : {}) });
      },
    );

    app.get(
      BASE,
      {
        config,
        schema: {
          tags,
          summary: 'List the webhook subscriptions (without signing keys)',
          response: { 200: Type.Object({ data: Type.Array(Subscription), msg: Type.Literal('success') }), ...Errors },
        },
      },
      async (request) => ({ data: await service.listSubscriptions(principalOf(request).businessId), msg: 'success' as const }),
    );

    app.patch(
      `${BASE}/:id`,
      {
        config,
        schema: {
          tags,
          summary: 'Change the endpoint, event names, signing key (the old one signs too for 24 h) or status',
          params: IdParams,
          body: UpdateBody,
          response: { 200: Type.Object({ ...Subscription.properties, warnings: Type.Optional(Warnings) }), ...Errors },
        },
      },
      async (request) => {
        const updated = await service.updateSubscription(principalOf(request).businessId, request.params.id, request.body ?? {});
        if (updated.warnings) request.log.warn({ subscription_id: updated.id }, 'webhook signing key changed to a guessable one');
        return updated;
      },
    );

    app.delete(
      `${BASE}/:id`,
      {
        config,
        schema: {
          tags,
          summary: 'Delete a webhook subscription and its deliveries',
          params: IdParams,
          response: { 200: Type.Object({ status: Type.Literal('webhook deleted successfully'), msg: Type.Literal('success') }), ...Errors },
        },
      },
      async (request) => {
        await service.deleteSubscription(principalOf(request).businessId, request.params.id);
        return { status: 'webhook deleted successfully' as const, msg: 'success' as const };
      },
    );

    app.get(
      `${BASE}/:id/deliveries`,
      {
        config,
        schema: {
          tags,
          summary: 'Deliveries of a subscription, newest first, 50 a page; filtered by state, event names and event time',
          params: IdParams,
          querystring: DeliveryQuery,
          response: { 200: Type.Object({ data: Type.Array(Delivery) }), ...Errors },
        },
      },
      async (request) => ({
        data: await service.listDeliveries(principalOf(request).businessId, request.params.id, request.query),
      }),
    );

    app.post(
      `${BASE}/:id/replay`,
      {
        config,
        schema: {
          tags,
          summary: `Queue the subscription's events of a window again (also those it never received), oldest first, ${REPLAY_PAGE_SIZE} a call`,
          description:
            'Each appointment keeps its order. `next_token` (sent back as `page_token` with the same window) continues; ' +
            'a subscription may replay 10 times at once, then once every 6 s (429 with Retry-After). A disabled subscription answers 409.',
          params: IdParams,
          body: ReplayBody,
          response: {
            202: Type.Object({ queued: Type.Integer(), next_token: Type.Union([Type.String(), Type.Null()]), msg: Type.Literal('success') }),
            ...Errors,
            409: StandardError,
            429: StandardError,
          },
        },
      },
      async (request, reply) => {
        const result = await service.replay(principalOf(request).businessId, request.params.id, request.body);
        return reply.code(202).send({ ...result, msg: 'success' as const });
      },
    );

    app.get(
      `${EVENTS}/:event_id`,
      {
        config,
        schema: {
          tags,
          summary: 'One event: its body as sent, and its delivery to each subscription (state, last answer, and its latest attempts)',
          params: Type.Object({ event_id: Type.String({ maxLength: 100 }) }),
          response: { 200: EventView, ...Errors },
        },
      },
      async (request) => service.getEvent(principalOf(request).businessId, request.params.event_id),
    );

    app.post(
      `${BASE}/:id/deliveries/:event_id/retry`,
      {
        config: { ...config, idempotent: true },
        schema: {
          tags,
          summary: 'Queue a delivery again, due now',
          params: Type.Object({ id: Type.String({ maxLength: 100 }), event_id: Type.String({ maxLength: 100 }) }),
          response: { 202: Type.Object({ status: Type.Literal('pending'), msg: Type.Literal('success') }), ...Errors },
        },
      },
      async (request, reply) => {
        await service.retryDelivery(principalOf(request).businessId, request.params.id, request.params.event_id);
        return reply.code(202).send({ status: 'pending', msg: 'success' });
      },
    );
  };
}
