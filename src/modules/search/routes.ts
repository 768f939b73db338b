/** `GET /medical-db/v1/drugs-and-labs`: drug and lab-test search (interface 4.1, contract section 3). */
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { App } from '../../http/app-type.ts';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../http/auth.ts';
import { AppError } from '../../errors.ts';
import { SearchError } from '../../http/schemas.ts';
import type { Catalogue } from './catalogue.ts';
import { highlightRanges, parseQuery } from './engine.ts';
import { drugResponse, labResponse, type DrugRecord } from './model.ts';
import { highlight } from './normalize.ts';
import { registerRateLimit, type SearchRateLimiter } from './ratelimit.ts';
import { ResponseCache, type CachedResponse } from './response-cache.ts';
import type { ParsedQuery } from './engine.ts';

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
  highlighted_fields: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'Matched parts wrapped in <em>, the rest HTML-escaped' })),
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

function drugHighlights(record: DrugRecord, query: ParsedQuery, namePrefix: boolean): Record<string, string> | null {
  const out: Record<string, string> = {};
  const fields: Array<[string, string, boolean]> = [['name', record.name, namePrefix], ['generic_name', record.generic_name, false], ['common_name', record.common_name, false]];
  for (const [field, text, prefix] of fields) {
    const ranges = highlightRanges(text, query, prefix);
    if (ranges.length > 0) out[field] = highlight(text, ranges);
  }
  return Object.keys(out).length > 0 ? out : null;
}

/** Serialized bytes go out as they are (the schema-typed reply only knows objects). */
function sendAnswer(reply: unknown, answer: CachedResponse): FastifyReply {
  return (reply as FastifyReply).code(answer.status).type('application/json; charset=utf-8').send(answer.body);
}

export function searchRoutes(ctx: AppContext, catalogue: Catalogue, limiter: SearchRateLimiter) {
  return async function plugin(app: App): Promise<void> {
    registerRateLimit(app, {
      limiter,
      burst: ctx.config.searchRateBurst,
      key: (request) => principalOf(request).clientId,
      refused: (seconds) => new AppError(429, `Too many requests: the search rate limit is ${ctx.config.searchRateLimit} per second; retry in ${seconds} s`, { headers: { 'retry-after': String(seconds) } }),
    });
    const cache = ctx.config.searchCacheBytes > 0 ? new ResponseCache(ctx.config.searchCacheBytes) : null;

    app.get('/medical-db/v1/drugs-and-labs', {
      config: { family: 'search', auth: { anyOf: ['search'] }, rateLimit: true },
      schema: {
        tags: ['search'],
        summary: 'Search drugs and laboratory tests',
        description: 'Ranked as a prescriber expects: exact name, names starting with the query, word-prefix matches in name and composition, then typo-tolerant matches. 404 with empty lists when nothing matches.',
        security: [{ bearerAuth: [] }],
        querystring: Query,
        response: { 200: SearchResponse, 404: SearchResponse, 400: SearchError, 401: SearchError, 403: SearchError, 429: SearchError, 500: SearchError },
      },
    }, (request, reply) => {
      const { q: text, limit, s_type: type } = request.query;
      // The same text again is answered before it is parsed; other texts with the same words (other
      // case, spacing, punctuation) share the answer stored under the words. Keys of the two kinds
      // differ in their separators, so a text never reads a words key. A cached answer goes out
      // synchronously: no promise for Fastify to wait on.
      const textKey = `${type}:${limit}:${text}`;
      const cached = catalogue.loaded ? cache?.get(catalogue.version, textKey) : undefined;
      if (cached !== undefined) {
        sendAnswer(reply, cached);
        return;
      }
      return (async () => {
        const q = text.trim();
        if (q.length === 0) throw new AppError(400, 'q: must not be empty');
        if ([...q].length > 200) throw new AppError(400, 'q: must be at most 200 characters');
        if (!catalogue.loaded) await catalogue.start();
        const version = catalogue.version;
        const query = parseQuery(q);
        // The answer depends only on the query's words, the type and the limit (and the catalogue version).
        const wordsKey = `${type} ${limit} ${query.words.map((word) => word.text).join(' ')}`;
        let answer = cache?.get(version, wordsKey);
        if (answer === undefined) {
          const result = type === 'lab'
            ? { drugs: [], lab_tests: catalogue.labs.search(query, limit).map((hit) => labResponse(hit.record)) }
            : { drugs: catalogue.drugs.search(query, limit).map((hit) => drugResponse(hit.record, hit.exact, drugHighlights(hit.record, query, hit.namePrefix))), lab_tests: [] };
          const status = result.drugs.length + result.lab_tests.length === 0 ? 404 : 200;
          // Serialized by the route's own response schema, as an uncached answer would be.
          answer = { status, body: Buffer.from(reply.code(status).serialize(result) as string) };
          cache?.set(version, wordsKey, answer);
        }
        cache?.set(version, textKey, answer);
        return sendAnswer(reply, answer);
      })();
    });
  };
}
