/**
 * Which errors mean "the database cannot serve right now" (an outage, a failover, a full disk, a
 * lock held too long) rather than a fault in the request or the code. Such a request answers 503
 * with Retry-After and is logged once at warn; background loops log it at warn and retry.
 * The one place that classifies them, for both dialects.
 */

/** Retry-After of a 503 caused by the database. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/** Socket and DNS failures reaching PostgreSQL. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENOTCONN',
]);

/**
 * PostgreSQL SQLSTATEs: class 08 (connection exception) and 53 (insufficient resources: disk full,
 * out of memory, too many connections) by prefix; the rest exactly.
 */
const PG_STATE_CLASSES = ['08', '53'];
const PG_STATES = new Set([
  '57P01', // admin_shutdown: pg_terminate_backend, a fast shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up or in recovery
  '57P05', // idle_session_timeout
  '57014', // query_canceled: statement_timeout
  '25006', // read_only_sql_transaction: connected to a standby after a failover
  '58030', // io_error
]);

/** SQLite result codes (better-sqlite3 names them SQLITE_BUSY_SNAPSHOT, SQLITE_IOERR_WRITE, ...). */
const SQLITE_PREFIXES = [
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_IOERR',
  'SQLITE_FULL',
  'SQLITE_CANTOPEN',
  'SQLITE_PROTOCOL',
  'SQLITE_NOMEM',
  'SQLITE_READONLY',
];

/** Errors that pg, pg-pool and Kysely raise without a code, by their message. */
const MESSAGES = [
  /^Connection terminated/, // the server or the network closed the connection (also "... due to connection timeout")
  /^timeout exceeded when trying to connect$/, // pg-pool: no connection within connectionTimeoutMillis
  /^Query read timeout$/, // pg: query_timeout
  /is not queryable$/, // pg: a client that lost its connection, or was closed, is used again
  /^Cannot use a pool after calling end on the pool$/, // shutting down
  /^driver has already been destroyed$/, // Kysely, shutting down
  /^Postgres connection has been discarded$/, // Kysely: a rollback failed on a lost connection
  /^The database connection is not open$/, // better-sqlite3 after close (shutting down)
];

/**
 * PostgreSQL refuses a prepared statement whose result columns a migration changed while this
 * process ran. The connection that prepared it is closed (db/index.ts), so the request's retry
 * prepares it afresh: for the caller it is a moment of unavailability, not a fault.
 */
export function isStalePlan(error: unknown): boolean {
  const e = (error ?? {}) as ErrorLike;
  return e.code === '0A000' && typeof e.message === 'string' && e.message.startsWith('cached plan must not change result type');
}

/** True when `error` (or its cause, or one of an AggregateError's errors) means the database is unavailable. */
export function isDatabaseUnavailable(error: unknown): boolean {
  return someError(error, (e) => {
    const code = typeof e.code === 'string' ? e.code : '';
    if (NETWORK_CODES.has(code)) return true;
    if (/^[0-9A-Z]{5}$/.test(code) && (PG_STATES.has(code) || PG_STATE_CLASSES.includes(code.slice(0, 2)))) return true;
    if (SQLITE_PREFIXES.some((prefix) => code === prefix || code.startsWith(`${prefix}_`))) return true;
    if (isStalePlan(e)) return true;
    return typeof e.message === 'string' && MESSAGES.some((pattern) => pattern.test(e.message as string));
  });
}

/**
 * What the log says about a database failure: its code and message only. A pool error carries
 * its client, whose connection parameters hold the password; a stack says nothing useful here.
 */
export function describeDatabaseError(error: unknown): { code?: string; message: string } {
  const e = (error ?? {}) as ErrorLike;
  const code = typeof e.code === 'string' ? e.code : undefined;
  let message = typeof e.message === 'string' ? e.message : String(error);
  // Node's connect error over several addresses is an AggregateError with an empty message.
  if (message === '' && Array.isArray(e.errors))
    message = e.errors
      .map((inner) => (inner as ErrorLike)?.message)
      .filter(Boolean)
      .join('; ');
  return code ? { code, message } : { message };
}

interface ErrorLike {
  code?: unknown;
  message?: unknown;
  cause?: unknown;
  errors?: unknown;
}

function someError(error: unknown, test: (e: ErrorLike) => boolean, depth = 0): boolean {
  if (error === null || typeof error !== 'object' || depth > 4) return false;
  const e = error as ErrorLike;
  if (test(e)) return true;
  if (e.cause !== undefined && someError(e.cause, test, depth + 1)) return true;
  return Array.isArray(e.errors) && e.errors.some((inner) => someError(inner, test, depth + 1));
}

/** Log fields for a failure: a database outage by its code and message, anything else with its stack. */
export function errorLogFields(error: unknown): { database_error: { code?: string; message: string } } | { err: unknown } {
  return isDatabaseUnavailable(error) ? { database_error: describeDatabaseError(error) } : { err: error };
}

/** How loud a failure is logged: an unavailable database is expected now and then (warn); anything else is a defect (error). */
export function logLevelFor(error: unknown): 'warn' | 'error' {
  return isDatabaseUnavailable(error) ? 'warn' : 'error';
}
