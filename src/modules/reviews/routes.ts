/**
 * Contract 8, the review page: `GET`/`POST /reviews/{token}` answer HTML pages for every outcome
 * (no login: the token is the capability), and `GET /reviews/v1` lists the business's reviews.
 */
import formbody from '@fastify/formbody';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { App } from '../../http/app-type.ts';
import { problemFromError } from '../../http/errors-plugin.ts';
import { principalOf } from '../../http/auth.ts';
import { StandardError } from '../../http/schemas.ts';
import { alreadyReceivedPage, errorPage, formPage, notFoundPage, PAGE_HEADERS, thankYouPage } from './html.ts';
import { COMMENT_MAX, type ReviewService } from './service.ts';

function sendPage(reply: FastifyReply, status: number, page: string): FastifyReply {
  return reply.code(status).headers(PAGE_HEADERS).send(page);
}

const HtmlPage = (description: string) => ({ description, content: { 'text/html': { schema: { type: 'string' } } } });

const Review = Type.Object({
  appointment_id: Type.String(),
  doctor_id: Type.String(),
  clinic_id: Type.String(),
  patient_id: Type.String(),
  rating: Type.Integer({ minimum: 1, maximum: 5 }),
  comment: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.Integer({ description: 'Epoch seconds' }),
});

/** The request as the log shows it: the route pattern instead of the address that holds the token. */
function redactedRequest(request: FastifyRequest): Record<string, unknown> {
  return { method: request.method, url: request.routeOptions.url ?? '/reviews/:token', remoteAddress: request.ip };
}

/** `timezone` (CPS_TIMEZONE) is the one the pages show the visit's time in. */
export function reviewRoutes(service: ReviewService, timezone: string) {
  return async function plugin(app: App): Promise<void> {
    app.get(
      '/reviews/v1',
      {
        config: { family: 'standard', auth: { anyOf: ['appointment:write'] } },
        schema: {
          tags: ['reviews'],
          summary: "The business's reviews from the hosted review page, newest first, 50 a page",
          querystring: Type.Object({
            clinic_id: Type.Optional(Type.String({ maxLength: 200 })),
            doctor_id: Type.Optional(Type.String({ maxLength: 200 })),
            page_no: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 })),
          }),
          response: { 200: Type.Object({ reviews: Type.Array(Review) }), 400: StandardError, 401: StandardError, 403: StandardError },
        },
      },
      async (request) => {
        const { clinic_id, doctor_id, page_no } = request.query;
        return { reviews: await service.list(principalOf(request), { clinicId: clinic_id, doctorId: doctor_id }, page_no ?? 0) };
      },
    );

    // The pages live in a plugin of their own: the form parser, the HTML error pages and a request
    // log without the token reach these two routes only (the rest of the API answers 415 to forms).
    await app.register(
      async (pages: App) => {
        await pages.register(formbody);

        pages.setErrorHandler((error, request, reply) => {
          const problem = problemFromError(error, request);
          if (problem.status >= 500) request.log.error({ err: error }, 'review page failed');
          return sendPage(reply, problem.status, errorPage(problem.status));
        });

        const config = { family: 'standard', auth: 'public' } as const;
        const params = Type.Object({ token: Type.String({ description: "The appointment's review token, from the review request" }) });

        pages.get(
          '/reviews/:token',
          {
            config,
            schema: {
              tags: ['reviews'],
              summary: 'The review page of an appointment (HTML; no login)',
              params,
              produces: ['text/html'],
              response: {
                200: HtmlPage('The form: rating 1 to 5 and an optional comment; or, once reviewed, a page saying so'),
                404: HtmlPage('Unknown link'),
              },
            },
          },
          async (request, reply) => {
            const state = await service.page(request.params.token);
            switch (state.kind) {
              case 'not_found':
                return sendPage(reply, 404, notFoundPage());
              case 'received':
                return sendPage(reply, 200, alreadyReceivedPage(state.visit));
              case 'form':
                return sendPage(reply, 200, formPage(state.visit, timezone));
            }
          },
        );

        pages.post(
          '/reviews/:token',
          {
            config,
            // The handler validates, because a failure must show the form again rather than a JSON body;
            // the schema documents the form.
            attachValidation: true,
            bodyLimit: 64 * 1024,
            schema: {
              tags: ['reviews'],
              summary: 'Submit the review (form-encoded); answers an HTML page',
              params,
              consumes: ['application/x-www-form-urlencoded'],
              produces: ['text/html'],
              body: Type.Object({
                rating: Type.String({ pattern: '^[1-5]$', description: '1 (poor) to 5 (excellent)' }),
                comment: Type.Optional(Type.String({ maxLength: COMMENT_MAX })),
              }),
              response: {
                201: HtmlPage('Thank-you page'),
                400: HtmlPage('The form again, saying what to correct'),
                404: HtmlPage('Unknown link'),
                409: HtmlPage('A review of this appointment was already received'),
              },
            },
          },
          async (request, reply) => {
            const outcome = await service.submit(request.params.token, request.body);
            switch (outcome.kind) {
              case 'not_found':
                return sendPage(reply, 404, notFoundPage());
              case 'received':
                return sendPage(reply, 409, alreadyReceivedPage(outcome.visit));
              case 'invalid':
                return sendPage(reply, 400, formPage(outcome.visit, timezone, outcome.input, outcome.errors));
              case 'created':
                return sendPage(reply, 201, thankYouPage(outcome.visit, outcome.rating));
            }
          },
        );
      },
      {
        // The token in the path is a capability: the request log shows the route, not the address.
        // (Fastify types serializers as returning strings; pino takes objects, like its default req serializer.)
        logSerializers: { req: redactedRequest as unknown as (value: unknown) => string },
      },
    );
  };
}
