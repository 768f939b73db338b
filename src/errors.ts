/**
 * Domain errors: what services, repos and commands throw. They name a status and, optionally, a code,
 * field problems and headers; the HTTP layer (src/http/errors.ts) renders them in each route's family,
 * so this file knows nothing of Fastify.
 */

/** Family-specific string codes that a thrower may pick instead of the status default. */
export type ErrorCode =
  | 'INVALID_REQUEST'
  | 'UNAUTHORIZED'
  | 'ACCESS_DENIED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'RATE_LIMITED'
  | 'SERVER_ERROR'
  | 'SERVICE_UNAVAILABLE'
  | 'APPOINTMENT_NOT_FOUND'
  | 'APPOINTMENT_EXISTS'
  | 'COMPLETE_NOT_ALLOWED'
  | 'PATIENTS_NOT_FOUND'
  | 'PATIENT_ALREADY_EXISTS'
  | 'PATIENT_MERGED'
  | 'CASES_CONFLICT'
  | 'SLOT_UNAVAILABLE'
  | 'APPOINTMENT_RESCHEDULED'
  | 'IDEMPOTENCY_KEY_REUSED'
  | 'IDEMPOTENCY_KEY_IN_USE'
  | 'EXPORT_NOT_READY'
  | 'EXPORT_EXPIRED';

export interface Problem {
  status: number;
  message: string;
  code?: ErrorCode;
  /** Per-field messages: rendered as keys by the clinics family, joined into the message elsewhere. */
  fields?: Record<string, string[]>;
  /** Extra headers, e.g. Retry-After. */
  headers?: Record<string, string>;
  /** Clinics family: a not-found renders as {status: 'error', message}. */
}

export class AppError extends Error {
  readonly problem: Problem;
  constructor(status: number, message: string, options: Omit<Problem, 'status' | 'message'> = {}) {
    super(message);
    this.problem = { status, message, ...options };
  }

  static badRequest(message: string, fields?: Record<string, string[]>): AppError {
    return new AppError(400, message, fields ? { fields } : {});
  }

  static notFound(message: string, code?: ErrorCode): AppError {
    return new AppError(404, message, code ? { code } : {});
  }

  static conflict(message: string, code?: ErrorCode): AppError {
    return new AppError(409, message, code ? { code } : {});
  }
}
