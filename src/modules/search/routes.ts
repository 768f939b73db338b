/** `GET /medical-db/v1/drugs-and-labs`: drug and lab-test search (interface 4.1, contract section 3). */
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { App } from '../../http/app-type.ts';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../http/auth.ts';
import { AppError } from '../../errors.ts';
import { registerRateLimit } from '../../http/rate-limit.ts';
import { SearchError } from '../../http/schemas.ts';
import type { SearchRateLimiter } from './ratelimit.ts';
import type { CachedResponse } from './response-cache.ts';
import type { SearchService } from './search.ts';

const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()]);

const Dosage = Type.Object({
  unit: Nullable(Type.String()),
  unit_name: Nullable(Type.String()),
  unit_id: Nullable(Type.String()),
  dosage: Nullable(Type.String({ description: 'Frequency pattern, e.g. 1-1-1' })),
  dosage_form: Type.String(),
  df_id: Type.String(),
  days: Nullable(Type.String()),
  food: Nullable(Type.String()),
});

const Drug = Type.Object({
  id: Type.String(),
  name: Type.String({ description: 'Commercial name' }),
  manufacturer_name: Type.String(),
  product_type: Type.String({ description: 'tablet, capsule, syrup, injection, ...' }),
  product_sku: Type.Optional(Type.String({ description: 'Packaging' })),
  generic_name: Type.String({ description: 'Composition with strengths' }),
  generic_id: Type.String({ description: 'Shared by every product with the same composition' }),
  dosage: Type.Optional(Dosage),
  action_class: Type.Optional(Type.Object({}, { additionalProperties: true })),
  common_name: Type.String({ description: 'Composition without strengths' }),
  soa: Type.Boolean(),
  drug_name_match: Type.Boolean({ description: 'The normalised name equals the normalised query' }),
  include_suggestion: Type.Optional(Type.Boolean()),
  highlighted_fields: Type.Optional(
    Type.Record(Type.String(), Type.String(), { description: 'Matched parts wrapped in <em>, the rest HTML-escaped' }),
  ),
  is_otc: Type.Union([Type.Boolean(), Type.Null()]),
});

const LabTest = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  category: Nullable(Type.String()),
  price: Type.Union([Type.Number(), Type.Null()]),
  preparation: Nullable(Type.String()),
});

const SearchResponse = Type.Object({ drugs: Type.Array(Drug), lab_tests: Type.Array(LabTest) });

const Query = Type.Object({
  q: Type.String({ minLength: 1, description: 'Search text, 1 to 200 characters after trimming' }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 10 }),
  s_type: Type.Union([Type.Literal('drug'), Type.Literal('lab')], { default: 'drug', 'x-message': 'must be "drug" or "lab"' }),
});

/** Serialized bytes go out as they are (the schema-typed reply only knows objects). */
function sendAnswer(reply: unknown, answer: CachedResponse): FastifyReply {
  return (reply as FastifyReply).code(answer.status).type('application/json; charset=utf-8').send(answer.body);
}

export function searchRoutes(ctx: AppContext, search: SearchService, limiter: SearchRateLimiter) {
  return async function plugin(app: App): Promise<void> {
    registerRateLimit(app, {
      limiter,
      burst: ctx.config.searchRateBurst,
      key: (request) => principalOf(request).clientId,
      refused: (seconds) =>
        new AppError(429, `Too many requests: the search rate limit is ${ctx.config.searchRateLimit} per second; retry in ${seconds} s`, {
          headers: { 'retry-after': String(seconds) },
        }),
    });

    app.get(
      '/medical-db/v1/drugs-and-labs',
      {
        config: { family: 'search', auth: { anyOf: ['search'] }, rateLimit: true },
        schema: {
          tags: ['search'],
          summary: 'Search drugs and laboratory tests',
          description:
            'Ranked as a prescriber expects: exact name, names starting with the query, word-prefix matches in name and composition, then typo-tolerant matches. 404 with empty lists when nothing matches.',
          security: [{ bearerAuth: [] }],
          querystring: Query,
          response: {
            200: SearchResponse,
            404: SearchResponse,
            400: SearchError,
            401: SearchError,
            403: SearchError,
            429: SearchError,
            500: SearchError,
          },
        },
      },
      (request, reply) => {
        // Serialized by the route's own response schema; a cached answer goes out synchronously.
        const answer = search.answer(request.query, (status, result) => reply.code(status).serialize(result) as string);
        if (answer instanceof Promise) return (async () => sendAnswer(reply, await answer))();
        sendAnswer(reply, answer);
      },
    );
  };
}
