/**
 * Request validation as the contract wants it: bodies are never type-coerced and every error is
 * reported (allErrors); query strings and headers are coerced where their schema says integer.
 * `x-message` on a schema replaces Ajv's wording for that value (e.g. the clinic contact rule).
 * Whatever a schema says, no part (body, params, query, headers) passes with a U+0000 or an unpaired
 * surrogate in a string or key; free-form objects carry `x-max-depth`, `x-max-keys` and `x-max-bytes`
 * (see schemas.ts).
 */
import { Ajv, type ErrorObject, type Options, type SchemaValidateFunction as DataValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance, FastifySchemaValidationError, preValidationHookHandler } from 'fastify';
import { depthOf, encodedBytes, keyCountOf, unstorableStringErrors } from './hostile-input.ts';
import { addRouteHook } from './route-hooks.ts';

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

function makeAjv(options: Options): Ajv {
  const ajv = new Ajv({ allErrors: true, verbose: true, strict: false, useDefaults: true, removeAdditional: false, ...options });
  addFormats(ajv);
  ajv.addKeyword({ keyword: 'x-message', schemaType: 'string' });
  addBoundKeyword(
    ajv,
    'x-max-depth',
    (limit, data) => depthOf(data, limit) > limit,
    (limit) => `must be nested at most ${limit} levels deep`,
  );
  addBoundKeyword(
    ajv,
    'x-max-keys',
    (limit, data) => keyCountOf(data, limit) > limit,
    (limit) => `must have at most ${limit} keys in all, nested ones included`,
  );
  addBoundKeyword(
    ajv,
    'x-max-bytes',
    (limit, data, parentSchema) => {
      // A value past the depth limit is that keyword's error; JSON.stringify could overflow the stack on it.
      const depthLimit = parentSchema['x-max-depth'];
      if (typeof depthLimit === 'number') return depthOf(data, depthLimit) <= depthLimit && encodedBytes(data) > limit;
      return depthOf(data, MEASURABLE_DEPTH) > MEASURABLE_DEPTH || encodedBytes(data) > limit;
    },
    (limit) => `must be at most ${limit} bytes as JSON (UTF-8)`,
  );
  return ajv;
}

/** The deepest value x-max-bytes measures when its schema sets no x-max-depth. */
const MEASURABLE_DEPTH = 64;

/** A keyword on objects and arrays whose number value is a limit the data must not exceed. */
function addBoundKeyword(
  ajv: Ajv,
  keyword: string,
  exceeds: (limit: number, data: unknown, parentSchema: Record<string, unknown>) => boolean,
  message: (limit: number) => string,
): void {
  const validate: DataValidateFunction = (limit, data, parentSchema) => {
    if (!exceeds(limit as number, data, (parentSchema ?? {}) as Record<string, unknown>)) return true;
    validate.errors = [{ keyword, message: message(limit as number), params: { limit } } as unknown as ErrorObject];
    return false;
  };
  ajv.addKeyword({ keyword, type: ['object', 'array'], schemaType: 'number', errors: true, validate });
}

interface CompiledValidator {
  (data: unknown, context?: unknown): boolean;
  errors?: unknown[] | null;
  schemaEnv?: unknown;
}

/** The most unknown keys named in one request part's answer (each is a problem of its own). */
export const MAX_UNKNOWN_KEY_ERRORS = 20;

/**
 * The problems of a request part, bounded by the part's own size limits rather than by the body's: a list
 * longer than its maxItems (an object with more keys than its maxProperties) is refused whole, its items'
 * problems dropped, and at most MAX_UNKNOWN_KEY_ERRORS unknown keys are named. Otherwise a body of hundreds
 * of thousands of bad items or keys answered one problem each: seconds of the event loop to render them and
 * an answer of tens of MB. One look-up per level of each error's path.
 */
function boundedErrors(errors: unknown[]): unknown[] {
  const refusedWhole = new Set<string>();
  for (const error of errors as Array<{ keyword?: string; instancePath?: string }>) {
    if ((error.keyword === 'maxItems' || error.keyword === 'maxProperties') && typeof error.instancePath === 'string') {
      refusedWhole.add(`${error.instancePath}/`);
    }
  }
  let unknownKeys = 0;
  return errors.filter((error) => {
    const { keyword, instancePath: path } = error as { keyword?: unknown; instancePath?: unknown };
    if (keyword === 'additionalProperties' && ++unknownKeys > MAX_UNKNOWN_KEY_ERRORS) return false;
    if (refusedWhole.size === 0 || typeof path !== 'string') return true;
    for (let end = path.indexOf('/', 0); end !== -1; end = path.indexOf('/', end + 1)) {
      if (refusedWhole.has(path.slice(0, end + 1))) return false;
    }
    return true;
  });
}

/** Ajv's validator followed by the string check (NUL, unpaired surrogates), whose errors join Ajv's. */
function withStringCheck(validate: CompiledValidator): CompiledValidator {
  const checked: CompiledValidator = (data, context) => {
    const valid = validate(data, context);
    const problems = unstorableStringErrors(data);
    if (problems.length === 0) {
      checked.errors = valid ? validate.errors : boundedErrors(validate.errors ?? []);
      return valid;
    }
    checked.errors = boundedErrors([...(valid ? [] : (validate.errors ?? [])), ...problems]);
    return false;
  };
  // Fastify passes the parent object only to validators that have schemaEnv (Ajv's), so Ajv can coerce a root value.
  checked.schemaEnv = validate.schemaEnv;
  return checked;
}

/** A 400 for request parts that have no schema, in the shape of a validation failure. */
function stringFailure(part: 'params' | 'querystring', data: unknown): Error | null {
  const errors = unstorableStringErrors(data);
  if (errors.length === 0) return null;
  return Object.assign(new Error(`${part} ${errors[0]!.message}`), {
    statusCode: 400,
    validation: errors as unknown as FastifySchemaValidationError[],
    validationContext: part,
  });
}

const checkUnvalidatedParams: preValidationHookHandler = (request, _reply, done) => {
  done(stringFailure('params', request.params) ?? undefined);
};
const checkUnvalidatedQuery: preValidationHookHandler = (request, _reply, done) => {
  done(stringFailure('querystring', request.query) ?? undefined);
};

export function registerValidation(app: FastifyInstance): void {
  const bodyAjv = makeAjv({ coerceTypes: false });
  const paramAjv = makeAjv({ coerceTypes: 'array' });
  app.setValidatorCompiler(
    ({ schema, httpPart }) => withStringCheck((httpPart === 'body' ? bodyAjv : paramAjv).compile(schema as object) as CompiledValidator) as never,
  );

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
    // Fastify's default JSON parser answers through `done`; its type merely allows a Promise.
    void parseJson(request, body as string, done);
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
    // Parts with a schema get the string check from their validator; the others from these hooks.
    if (route.schema?.params === undefined && /[:*]/.test(route.url)) addRouteHook(route, 'preValidation', checkUnvalidatedParams);
    if (route.schema?.querystring === undefined) addRouteHook(route, 'preValidation', checkUnvalidatedQuery);
  });
}
