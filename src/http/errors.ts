/**
 * Error families (contract section 0). Handlers and services throw AppError (src/errors.ts), or let
 * validation and parsing fail; the error handler renders the problem in the body of the family the route
 * declares. Each family's codes are a closed list, derived from the status unless the thrower names one.
 */
import type { FastifyError } from 'fastify';
import type { ErrorCode, Problem } from '../errors.ts';

export type ErrorFamily = 'search' | 'appointments' | 'clinics' | 'cases' | 'notifications' | 'standard' | 'auth' | 'profiles';

export const ERROR_FAMILIES: readonly ErrorFamily[] = ['search', 'appointments', 'clinics', 'cases', 'notifications', 'standard', 'auth', 'profiles'];

/** The code of each status where the problem names none; the families differ only where listed. */
const STANDARD_CODES: Record<number, ErrorCode> = {
  400: 'INVALID_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'ACCESS_DENIED',
  404: 'NOT_FOUND',
  409: 'CONFLICT',
  413: 'INVALID_REQUEST',
  415: 'INVALID_REQUEST',
  429: 'RATE_LIMITED',
  500: 'SERVER_ERROR',
  503: 'SERVICE_UNAVAILABLE',
};

/** The families whose body carries a string code. */
type CodedFamily = 'appointments' | 'cases' | 'standard' | 'profiles';

const STRING_CODES: Record<CodedFamily, Record<number, ErrorCode>> = {
  appointments: { ...STANDARD_CODES, 404: 'APPOINTMENT_NOT_FOUND', 409: 'APPOINTMENT_EXISTS' },
  cases: { ...STANDARD_CODES, 403: 'FORBIDDEN' },
  profiles: { ...STANDARD_CODES, 404: 'PATIENTS_NOT_FOUND' },
  standard: STANDARD_CODES,
};

function stringCode(family: CodedFamily, problem: Problem): ErrorCode {
  return problem.code ?? STRING_CODES[family][problem.status] ?? (problem.status >= 500 ? 'SERVER_ERROR' : 'INVALID_REQUEST');
}

/**
 * Eka's profiles spell codes in lower case and call a patient a profile: `invalid_request`,
 * `profile_not_found`, `profile_already_exists`.
 */
function profileCode(code: ErrorCode): string {
  return code.replace(/^PATIENTS?_/, 'PROFILE_').toLowerCase();
}

/** The message with every field problem appended, for families that carry one string. */
function fullMessage(problem: Problem): string {
  if (!problem.fields) return problem.message;
  const parts = Object.entries(problem.fields).flatMap(([field, messages]) =>
    messages.map((message) => (field === 'message' ? message : `${field}: ${message}`)),
  );
  return parts.length > 0 ? parts.join('; ') : problem.message;
}

export function renderProblem(family: ErrorFamily, problem: Problem): unknown {
  switch (family) {
    case 'search':
      return { error: fullMessage(problem), code: problem.status, details: null };
    case 'auth':
      return { code: problem.status, error: fullMessage(problem) };
    case 'notifications':
      return { message: fullMessage(problem), error_code: problem.status };
    case 'cases':
      return { error: fullMessage(problem), code: stringCode('cases', problem) };
    case 'appointments':
    case 'standard':
      return { error: { code: stringCode(family, problem), message: fullMessage(problem) } };
    case 'profiles':
      return { error: { code: profileCode(stringCode('profiles', problem)), message: fullMessage(problem) } };
    case 'clinics':
      if (problem.status === 404) return { status: 'error', message: problem.message };
      if (problem.fields && Object.keys(problem.fields).length > 0) return problem.fields;
      return { message: [problem.message] };
  }
}

/** The family for a path no route matched; routes themselves declare theirs. */
export function familyForPath(url: string): ErrorFamily {
  if (url.startsWith('/medical-db/')) return 'search';
  if (url.startsWith('/dr/')) return 'appointments';
  if (url.startsWith('/cdr/')) return 'clinics';
  if (url.startsWith('/mr/')) return 'cases';
  if (url.startsWith('/connect-auth/')) return 'auth';
  if (url.startsWith('/profiles/')) return 'profiles';
  if (url.startsWith('/notification/') && !url.startsWith('/notification/v1/connect/webhook')) return 'notifications';
  return 'standard';
}

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
  parentSchema?: Record<string, unknown>;
}

/** A field name from an Ajv error: `patient_details.mobile`, `limit`, `x-pt-id`. */
function fieldOf(error: AjvError): string {
  const segments = error.instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (error.keyword === 'required') segments.push(String(error.params.missingProperty));
  if (error.keyword === 'dependentRequired') segments.push(String(error.params.property));
  return segments.join('.');
}

function messageOf(error: AjvError): string {
  const custom = error.parentSchema?.['x-message'];
  if (typeof custom === 'string' && error.keyword !== 'required') return custom;
  switch (error.keyword) {
    case 'required':
      return 'This field is required.';
    case 'type':
      return `must be ${['a', 'e', 'i', 'o', 'u'].includes(String(error.params.type)[0] ?? '') ? 'an' : 'a'} ${String(error.params.type).replace(',', ' or ')}`;
    case 'enum':
      return `must be one of ${(error.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'additionalProperties':
      return `has an unknown key "${String(error.params.additionalProperty)}"`;
    default:
      return error.message ?? 'is invalid';
  }
}

/**
 * A union of constants or of plain types reads as one message ("must be one of "a", "b"", "must be a
 * string or a number") instead of one complaint per branch.
 */
function unionMessage(error: AjvError & { schema?: unknown }): string | null {
  const branches = Array.isArray(error.schema) ? (error.schema as Array<Record<string, unknown>>) : [];
  if (branches.length === 0) return null;
  if (branches.every((b) => 'const' in b)) return `must be one of ${branches.map((b) => JSON.stringify(b.const)).join(', ')}`;
  if (branches.every((b) => typeof b.type === 'string')) {
    return `must be ${branches.map((b) => `${['a', 'e', 'i', 'o', 'u'].includes(String(b.type)[0] ?? '') ? 'an' : 'a'} ${String(b.type)}`).join(' or ')}`;
  }
  return null;
}

/** Fastify's validation error as field problems; the part (body, querystring, headers) is dropped. */
export function validationProblem(error: FastifyError): Problem {
  // Field names come from the request ("constructor", "__proto__"): no prototype to collide with.
  const fields: Record<string, string[]> = Object.create(null);
  const seen = new Set<string>();
  const all = (error.validation ?? []) as Array<AjvError & { schema?: unknown }>;
  // Paths whose union produced one summary message: the per-branch complaints there are dropped.
  const summarised = new Map<string, string>();
  for (const raw of all) {
    if (raw.keyword !== 'anyOf' && raw.keyword !== 'oneOf') continue;
    const message = unionMessage(raw);
    if (message) summarised.set(raw.instancePath, message);
  }
  for (const raw of all) {
    let message: string;
    if (raw.keyword === 'anyOf' || raw.keyword === 'oneOf') {
      const summary = summarised.get(raw.instancePath);
      if (!summary) continue; // the branches' own errors say more
      message = summary;
    } else if (raw.keyword === 'if' || (summarised.has(raw.instancePath) && ['type', 'const', 'enum'].includes(raw.keyword))) {
      continue;
    } else {
      message = messageOf(raw);
    }
    const named = fieldOf(raw);
    const field = named || 'message';
    if (!named) message = `The request ${error.validationContext ?? 'body'} ${message}.`;
    const key = `${field}\u0000${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    (fields[field] ??= []).push(message);
  }
  const first = Object.entries(fields)[0];
  const message = !first ? 'The request is invalid.' : first[0] === 'message' ? String(first[1][0]) : `${first[0]}: ${first[1][0]}`;
  return { status: 400, message, fields, code: 'INVALID_REQUEST' };
}
