/**
 * The access log: `GET /audit/v1/events` for a business (scope audit:read) and
 * `GET /admin/v1/audit/events` for the operator, across businesses or for one. Chained entries in
 * chain order, keyset-paged as the cases are (`next_token`, sent back as `offset`). Reading the log
 * is itself an entry (src/access-log/audited-routes.ts).
 */
import { Type } from 'typebox';
import type { App } from '../../http/app-type.ts';
import { principalOf } from '../../http/auth.ts';
import { Epoch, Id, StandardError } from '../../http/schemas.ts';
import { DEFAULT_PAGE, type AuditService } from './service.ts';

const filters = {
  patient_id: Type.Optional({ ...Id, description: "The patient (the service's id or the partner's): entries naming it" }),
  client_id: Type.Optional({ ...Id, description: 'The API client that acted (admin: the operator)' }),
  resource_type: Type.Optional(
    Type.String({ maxLength: 40, description: 'appointment, patient, case, device, notification, review, export, event or access_log' }),
  ),
  resource_id: Type.Optional(Id),
  from: Type.Optional({ ...Epoch, description: 'Entries at or after this time (epoch seconds)' }),
  to: Type.Optional({ ...Epoch, description: 'Entries before this time (epoch seconds)' }),
  offset: Type.Optional(Type.String({ maxLength: 400, description: 'The next_token of the previous page' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, description: `Entries a page (default ${DEFAULT_PAGE})` })),
};

const Event = Type.Object({
  id: Type.String(),
  business_id: Type.String({ description: "The business whose chain holds it ('*': the operator's accesses naming no business)" }),
  seq: Type.Integer({ description: "Position in the business's chain, from 1" }),
  at: Type.Integer({ description: 'Epoch milliseconds' }),
  client_id: Type.Union([Type.String(), Type.Null()], { description: "The API client ('admin': the operator)" }),
  operation: Type.String({ description: 'Method and route, e.g. GET /dr/v1/appointment/:appointment_id' }),
  action: Type.String({ description: 'read, list, search, create, update, delete, merge, send, export or erase' }),
  resource_type: Type.String(),
  resource_id: Type.Union([Type.String(), Type.Null()]),
  patient_ref: Type.Union([Type.String(), Type.Null()], {
    description: "The patient: the service's id when the answer named it, else the reference the request sent",
  }),
  status: Type.Union([Type.Integer(), Type.Null()], { description: 'The HTTP status answered (null: a change committed, its answer unrecorded)' }),
  request_id: Type.String(),
  source_address: Type.Union([Type.String(), Type.Null()]),
  filter: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], {
    description: 'Searches and listings: the query; names, mobiles and ABHA ids as keyed digests (hmac:...)',
  }),
  result_count: Type.Union([Type.Integer(), Type.Null()], { description: 'Searches and listings: the records returned' }),
  with_change: Type.Boolean({ description: 'Written in the transaction of the change it records' }),
  prev_hash: Type.String({ description: 'The hash of the previous entry of the chain' }),
  hash: Type.String({ description: 'SHA-256 over this entry and prev_hash (cps audit verify checks the chain)' }),
});
const Page = Type.Object({ events: Type.Array(Event), next_token: Type.Union([Type.String(), Type.Null()]) });
const errors = { 400: StandardError, 401: StandardError, 403: StandardError };

export function auditRoutes(service: AuditService) {
  return async function plugin(app: App): Promise<void> {
    app.get(
      '/audit/v1/events',
      {
        config: { family: 'standard', auth: { anyOf: ['audit:read'] } },
        schema: {
          tags: ['audit'],
          summary: "The business's access log: who read or changed which patient's data, in chain order, keyset-paged",
          querystring: Type.Object(filters),
          response: { 200: Page, ...errors },
        },
      },
      async (request) => service.list(principalOf(request).businessId, request.query),
    );

    app.get(
      '/admin/v1/audit/verify',
      {
        config: { family: 'standard', auth: 'admin' },
        schema: {
          tags: ['admin'],
          summary: "cps audit verify's verdict over HTTP: each business's access log chain checked from its first kept entry to its head",
          querystring: Type.Object({ business_id: Type.Optional(Id) }),
          response: {
            200: Type.Object({
              ok: Type.Boolean(),
              chains: Type.Array(
                Type.Object({
                  business_id: Type.String(),
                  entries: Type.Integer(),
                  ok: Type.Boolean(),
                  pruned_through: Type.Optional(Type.Integer()),
                  broken: Type.Optional(
                    Type.Object({ seq: Type.Integer(), entry_id: Type.Union([Type.String(), Type.Null()]), reason: Type.String() }),
                  ),
                }),
              ),
            }),
            400: StandardError,
            401: StandardError,
          },
        },
      },
      async (request) => service.verify(request.query.business_id),
    );

    app.get(
      '/admin/v1/audit/events',
      {
        config: { family: 'standard', auth: 'admin' },
        schema: {
          tags: ['admin'],
          summary: "The access log across businesses (or one business's), for the operator",
          querystring: Type.Object({ business_id: Type.Optional(Id), ...filters }),
          response: { 200: Page, 400: StandardError, 401: StandardError, 429: StandardError },
        },
      },
      async (request) => {
        const { business_id, ...query } = request.query;
        return service.list(business_id ?? null, query);
      },
    );
  };
}
