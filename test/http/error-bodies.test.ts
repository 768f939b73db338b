/**
 * Error bodies without a server (src/http/errors.ts): what a client of each family reads for a problem, which
 * family a path that matched no route answers in, and how Ajv's complaints become field messages. The
 * complaints come from a real Ajv with the options the app validates with.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ajv } from 'ajv';
import type { FastifyError } from 'fastify';
import { familyForPath, renderProblem, validationProblem } from '../../src/http/errors.ts';
import type { Problem } from '../../src/errors.ts';

const invalid: Problem = {
  status: 400,
  message: 'Invalid.',
  fields: { mobile: ['must be 10 digits'], age: ['must be a number', 'must be positive'] },
};
const plain: Problem = { status: 404, message: 'No such thing.' };

describe('error bodies per family', () => {
  /** [family, problem, body]: the contract's shape of each family. */
  const BODIES: Array<[Parameters<typeof renderProblem>[0], Problem, unknown]> = [
    ['search', invalid, { error: 'mobile: must be 10 digits; age: must be a number; age: must be positive', code: 400, details: null }],
    ['search', plain, { error: 'No such thing.', code: 404, details: null }],
    ['auth', { status: 401, message: 'Bad credentials.' }, { code: 401, error: 'Bad credentials.' }],
    ['notifications', { status: 429, message: 'Slow down.' }, { message: 'Slow down.', error_code: 429 }],
    ['cases', { status: 403, message: 'Not yours.' }, { error: 'Not yours.', code: 'FORBIDDEN' }],
    ['cases', { status: 409, message: 'Changed.', code: 'CASES_CONFLICT' }, { error: 'Changed.', code: 'CASES_CONFLICT' }],
    ['standard', { status: 403, message: 'Not yours.' }, { error: { code: 'ACCESS_DENIED', message: 'Not yours.' } }],
    ['standard', { status: 413, message: 'Too big.' }, { error: { code: 'INVALID_REQUEST', message: 'Too big.' } }],
    ['standard', { status: 415, message: 'Not JSON.' }, { error: { code: 'INVALID_REQUEST', message: 'Not JSON.' } }],
    ['standard', { status: 401, message: 'Who?' }, { error: { code: 'UNAUTHORIZED', message: 'Who?' } }],
    ['standard', { status: 429, message: 'Wait.' }, { error: { code: 'RATE_LIMITED', message: 'Wait.' } }],
    ['standard', { status: 500, message: 'Oops.' }, { error: { code: 'SERVER_ERROR', message: 'Oops.' } }],
    ['standard', { status: 503, message: 'Down.' }, { error: { code: 'SERVICE_UNAVAILABLE', message: 'Down.' } }],
    ['standard', { status: 502, message: 'Bad gateway.' }, { error: { code: 'SERVER_ERROR', message: 'Bad gateway.' } }],
    ['standard', { status: 422, message: 'Odd.' }, { error: { code: 'INVALID_REQUEST', message: 'Odd.' } }],
    ['standard', plain, { error: { code: 'NOT_FOUND', message: 'No such thing.' } }],
    ['standard', { status: 409, message: 'Taken.' }, { error: { code: 'CONFLICT', message: 'Taken.' } }],
    ['appointments', plain, { error: { code: 'APPOINTMENT_NOT_FOUND', message: 'No such thing.' } }],
    ['appointments', { status: 409, message: 'Taken.' }, { error: { code: 'APPOINTMENT_EXISTS', message: 'Taken.' } }],
    ['appointments', { status: 409, message: 'Gone.', code: 'SLOT_UNAVAILABLE' }, { error: { code: 'SLOT_UNAVAILABLE', message: 'Gone.' } }],
    [
      'appointments',
      invalid,
      { error: { code: 'INVALID_REQUEST', message: 'mobile: must be 10 digits; age: must be a number; age: must be positive' } },
    ],
    ['profiles', plain, { error: { code: 'profile_not_found', message: 'No such thing.' } }],
    [
      'profiles',
      { status: 409, message: 'Exists.', code: 'PATIENT_ALREADY_EXISTS' },
      { error: { code: 'profile_already_exists', message: 'Exists.' } },
    ],
    ['profiles', { status: 400, message: 'Bad.' }, { error: { code: 'invalid_request', message: 'Bad.' } }],
    ['clinics', plain, { status: 'error', message: 'No such thing.' }],
    ['clinics', invalid, invalid.fields],
    ['clinics', { status: 400, message: 'Bad.', fields: {} }, { message: ['Bad.'] }],
    ['clinics', { status: 409, message: 'Taken.' }, { message: ['Taken.'] }],
  ];

  it('renders each problem in its family’s body', () => {
    for (const [family, problem, body] of BODIES) assert.deepEqual(renderProblem(family, problem), body, `${family} ${problem.status}`);
  });

  it('writes a field problem named "message" as the message itself, and the problem’s message when no field has one', () => {
    assert.deepEqual(renderProblem('auth', { status: 400, message: 'x', fields: { message: ['The request body must be an object.'] } }), {
      code: 400,
      error: 'The request body must be an object.',
    });
    assert.deepEqual(renderProblem('auth', { status: 400, message: 'Fallback.', fields: { name: [] } }), { code: 400, error: 'Fallback.' });
  });
});

describe('family of a path no route matched', () => {
  it('follows the path prefix', () => {
    const cases: Array<[string, string]> = [
      ['/medical-db/v1/nothing', 'search'],
      ['/dr/v1/nothing', 'appointments'],
      ['/cdr/v1/nothing', 'clinics'],
      ['/mr/api/v1/nothing', 'cases'],
      ['/connect-auth/v1/nothing', 'auth'],
      ['/profiles/v1/nothing', 'profiles'],
      ['/notification/v1/nothing', 'notifications'],
      ['/notification/v1/connect/webhook/subscriptions/x', 'standard'],
      ['/admin/v1/nothing', 'standard'],
      ['/x/medical-db/', 'standard'],
      ['/dr', 'standard'],
    ];
    for (const [path, family] of cases) assert.equal(familyForPath(path), family, path);
  });
});

describe('validation problems', () => {
  const ajv = new Ajv({ allErrors: true, verbose: true, strict: false, useDefaults: true, removeAdditional: false, coerceTypes: false });
  ajv.addKeyword({ keyword: 'x-message', schemaType: 'string' });
  const problemOf = (schema: object, data: unknown, validationContext = 'body') => {
    const validate = ajv.compile(schema);
    assert.equal(validate(data), false);
    return validationProblem({ validation: validate.errors, validationContext } as unknown as FastifyError);
  };
  const object = (properties: Record<string, object>, extra: object = {}) => ({ type: 'object', properties, ...extra });

  it('names each field by its path, with a message a person can read', () => {
    const cases: Array<[object, unknown, Record<string, string[]>]> = [
      [object({ name: { type: 'string' } }, { required: ['name'] }), {}, { name: ['This field is required.'] }],
      [object({ age: { type: 'integer' } }), { age: 'x' }, { age: ['must be an integer'] }],
      [object({ name: { type: 'string' } }), { name: 1 }, { name: ['must be a string'] }],
      [object({ tags: { type: 'array' } }), { tags: 1 }, { tags: ['must be an array'] }],
      [object({ n: { type: ['string', 'number'] } }), { n: true }, { n: ['must be a string or number'] }],
      [object({ kind: { enum: ['a', 'b'] } }), { kind: 'c' }, { kind: ['must be one of "a", "b"'] }],
      [object({}, { additionalProperties: false }), { extra: 1 }, { message: ['The request body has an unknown key "extra".'] }],
      [
        object({ p: object({ mobile: { type: 'string', pattern: '^[0-9]{10}$', 'x-message': 'must be 10 digits' } }) }),
        { p: { mobile: '12' } },
        { 'p.mobile': ['must be 10 digits'] },
      ],
      [object({ p: object({ mobile: { type: 'string' } }, { required: ['mobile'] }) }), { p: {} }, { 'p.mobile': ['This field is required.'] }],
      [
        object({ p: object({ m: { type: 'string', 'x-message': 'custom' } }, { required: ['m'] }) }),
        { p: {} },
        { 'p.m': ['This field is required.'] },
      ],
      [
        object({ 'a/b': { type: 'string' }, 'c~d': { type: 'string' } }),
        { 'a/b': 1, 'c~d': 1 },
        { 'a/b': ['must be a string'], 'c~d': ['must be a string'] },
      ],
      [object({ n: { type: 'number', minimum: 3 } }), { n: 1 }, { n: ['must be >= 3'] }],
      [{ type: 'object' }, [], { message: ['The request body must be an object.'] }],
    ];
    for (const [schema, data, fields] of cases) {
      const problem = problemOf(schema, data);
      assert.deepEqual({ ...problem.fields }, fields, JSON.stringify(data));
      assert.equal(problem.status, 400);
      assert.equal(problem.code, 'INVALID_REQUEST');
    }
  });

  it('names the field a dependency requires', () => {
    const error = {
      instancePath: '/p',
      keyword: 'dependentRequired',
      params: { property: 'b', depsCount: 1, deps: 'b' },
      message: 'must have property b when property a is present',
    };
    assert.deepEqual(
      { ...validationProblem({ validation: [error] } as unknown as FastifyError).fields },
      { 'p.b': ['must have property b when property a is present'] },
    );
  });

  it('names the part of the request when the whole of it is wrong', () => {
    assert.deepEqual({ ...problemOf({ type: 'object' }, 'x', 'querystring').fields }, { message: ['The request querystring must be an object.'] });
    assert.deepEqual(
      validationProblem({ validation: [{ instancePath: '', keyword: 'type', params: { type: 'object' } }] } as unknown as FastifyError).fields
        ?.message,
      ['The request body must be an object.'],
    );
  });

  it('says a union of constants or of plain types once, instead of one complaint per branch', () => {
    const cases: Array<[object, unknown, Record<string, string[]>]> = [
      [object({ s: { anyOf: [{ const: 'a' }, { const: 1 }] } }), { s: 'z' }, { s: ['must be one of "a", 1'] }],
      [object({ s: { oneOf: [{ type: 'string' }, { type: 'integer' }] } }), { s: true }, { s: ['must be a string or an integer'] }],
      [object({ s: { anyOf: [{ type: 'string', maxLength: 1 }, { type: 'object' }] } }), { s: 1 }, { s: ['must be a string or an object'] }],
      [
        object({ s: { anyOf: [{ type: 'string', maxLength: 1 }, { type: 'object' }] } }),
        { s: 'long' },
        { s: ['must NOT have more than 1 characters', 'must be a string or an object'] },
      ],
      [
        object({ s: { anyOf: [{ type: 'string', maxLength: 1 }, { const: 5 }] } }),
        { s: 'long' },
        { s: ['must NOT have more than 1 characters', 'must be equal to constant'] },
      ],
      // if/then, written as JSON: a "then" key in code reads as a promise to the linter.
      [
        object({ s: JSON.parse('{"if": {"type": "string"}, "then": {"maxLength": 1}}') }),
        { s: 'long' },
        { s: ['must NOT have more than 1 characters'] },
      ],
    ];
    for (const [schema, data, fields] of cases) assert.deepEqual({ ...problemOf(schema, data).fields }, fields, JSON.stringify(schema));
  });

  it('gives the first field problem as the message, each message once per field', () => {
    const twice = object({ a: { allOf: [{ type: 'string' }, { type: 'string' }] }, b: { type: 'string' } });
    const problem = problemOf(twice, { a: 1, b: 1 });
    assert.deepEqual({ ...problem.fields }, { a: ['must be a string'], b: ['must be a string'] });
    assert.equal(problem.message, 'a: must be a string');
    assert.equal(problemOf({ type: 'object' }, 1).message, 'The request body must be an object.');
    const empty = validationProblem({ validation: [] } as unknown as FastifyError);
    assert.deepEqual(
      { ...empty, fields: { ...empty.fields } },
      { status: 400, message: 'The request is invalid.', fields: {}, code: 'INVALID_REQUEST' },
    );
  });

  it('takes field names from the request without touching the prototype', () => {
    const problem = problemOf(
      object({}, { propertyNames: { maxLength: 3 }, additionalProperties: { type: 'string' } }),
      JSON.parse('{"__proto__": 1, "constructor": 2}'),
    );
    assert.deepEqual(Object.keys(problem.fields!).sort(), ['__proto__', 'constructor', 'message'].sort());
  });
});
