/**
 * Request validation as the contract wants it: bodies are never type-coerced and every error is
 * reported (allErrors); query strings and headers are coerced where their schema says integer.
 * `x-message` on a schema replaces Ajv's wording for that value (e.g. the clinic contact rule).
 */
import { Ajv, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance, preValidationHookHandler } from 'fastify';
import { addRouteHook } from './route-hooks.ts';

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

function makeAjv(options: Options): Ajv {
  const ajv = new Ajv({ allErrors: true, verbose: true, strict: false, useDefaults: true, removeAdditional: false, ...options });
  addFormats(ajv);
  ajv.addKeyword({ keyword: 'x-message', schemaType: 'string' });
  return ajv;
}

export function registerValidation(app: FastifyInstance): void {
  const bodyAjv = makeAjv({ coerceTypes: false });
  const paramAjv = makeAjv({ coerceTypes: 'array' });
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? bodyAjv : paramAjv).compile(schema as object) as never);

  // JSON bodies: an empty body is "no body" (operations without one accept it with the JSON
  // content type); everything else goes through Fastify's safe parser (no __proto__ pollution).
  const parseJson = app.getDefaultJsonParser('error', 'error');
  // JSON is the only body type of the API; anything else is 415 (the review form adds its own parser).
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (typeof body === 'string' && body.trim() === '') {
      done(null, undefined);
      return;
    }
    parseJson(request, body as string, done);
  });

  // A request without a body reaches validation as null, so an operation whose body is optional
  // declares `Type.Union([Type.Object(...), Type.Null()])` and one that needs a body says so in its error.
  // Only operations with a body schema get the hook: the others (every GET) skip the phase.
  const bodyOrNull: preValidationHookHandler = (request, _reply, done) => {
    if (request.body === undefined) request.body = null;
    done();
  };
  app.addHook('onRoute', (route) => {
    if (route.schema?.body !== undefined) addRouteHook(route, 'preValidation', bodyOrNull);
  });
}
