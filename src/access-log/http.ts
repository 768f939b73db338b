/**
 * The access log's hooks on the routes of routes.ts, attached when each route is added: the handler
 * of a change runs with a transaction observer (src/db/index.ts), so the entry is written in the
 * change's own transaction; preSerialization keeps the answer; onSend records the entry (or what the
 * answer adds to the entry of a change) and lets the answer go once that is durable. Requests
 * refused before a business is known (401, 403) make no entry.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod, RouteOptions } from 'fastify';
import { observeTransactions, type TransactionObserver } from '../db/index.ts';
import type { Db } from '../db/index.ts';
import type { AuditEntry } from './entry.ts';
import type { AuditLog } from './log.ts';
import { AUDITED_ROUTES, CHANGES, routeKey, type AuditedRoute } from './audited-routes.ts';

/** The API client of the operator's admin token. */
export const OPERATOR_CLIENT = 'admin';

interface RequestAudit {
  /** The entry of a change, written in its transaction. */
  change: PendingChange | null;
  answer: unknown;
  recorded: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    audit: RequestAudit | null;
  }
}

class PendingChange implements TransactionObserver {
  readonly entry: AuditEntry;
  written = false;
  readonly #log: AuditLog;

  constructor(log: AuditLog, entry: AuditEntry) {
    this.#log = log;
    this.entry = entry;
  }

  begun(trx: Db): Promise<void> {
    return this.written ? Promise.resolve() : this.#log.writeWithChange(trx, this.entry);
  }

  committed(): void {
    this.written = true;
  }
}

const AUDITED = Symbol('audited');

export function registerAudit(app: FastifyInstance, log: AuditLog): void {
  app.decorateRequest('audit', null);
  if (!log.enabled) return;
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      const spec = AUDITED_ROUTES[routeKey(method, route.url)];
      if (spec) audit(route, log, spec, routeKey(method, route.url));
    }
  });
}

function audit(route: RouteOptions, log: AuditLog, spec: AuditedRoute, operation: string): void {
  const handler = route.handler as RouteHandlerMethod & { [AUDITED]?: true };
  // The HEAD route Fastify adds for a GET starts from the GET's options, hooks included.
  if (handler[AUDITED]) return;
  const change = CHANGES.has(spec.action);
  const wrapped: RouteHandlerMethod & { [AUDITED]?: true } = function (this: FastifyInstance, request, reply) {
    const state: RequestAudit = { change: null, answer: undefined, recorded: false };
    request.audit = state;
    const principal = request.principal;
    if (!change || !principal) return handler.call(this, request, reply);
    const entry = entryOf(log, spec, operation, request, principal.businessId, principal.clientId, null, undefined);
    entry.with_change = 1;
    state.change = new PendingChange(log, entry);
    return observeTransactions(state.change, () => handler.call(this, request, reply));
  };
  wrapped[AUDITED] = true;
  route.handler = wrapped;
  addHook(
    route,
    'preSerialization',
    (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (e: Error | null, p: unknown) => void) => {
      if (request.audit && reply.statusCode < 300) request.audit.answer = payload;
      done(null, payload);
    },
  );
  addHook(route, 'onSend', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (e: Error | null, p?: unknown) => void) => {
    const state = request.audit ?? (request.audit = { change: null, answer: undefined, recorded: false });
    // An operator's entry goes to the business it names only once the admin token was accepted.
    const status = reply.statusCode;
    const answer = status < 300 ? state.answer : undefined;
    const business = spec.business ? (request.operator ? spec.business(request, answer) : undefined) : request.principal?.businessId;
    if (state.recorded || business === undefined) return done(null, payload);
    state.recorded = true;
    const pending = state.change;
    const after = (error: Error | null) => done(error, payload);
    if (pending?.written) {
      log.complete(
        {
          id: pending.entry.id,
          status,
          resource_id: text(spec.id?.(request, answer)) ?? pending.entry.resource_id,
          patient_ref: text(spec.patient?.(request, answer)) ?? pending.entry.patient_ref,
          result_count: status < 300 && spec.count ? spec.count(answer) : null,
        },
        after,
      );
    } else {
      const client = spec.business ? OPERATOR_CLIENT : (request.principal?.clientId ?? null);
      log.record(entryOf(log, spec, operation, request, business, client, status, answer), after);
    }
  });
}

function entryOf(
  log: AuditLog,
  spec: AuditedRoute,
  operation: string,
  request: FastifyRequest,
  businessId: string,
  clientId: string | null,
  status: number | null,
  answer: unknown,
): AuditEntry {
  return {
    id: log.newId(),
    business_id: businessId,
    at: Date.now(),
    client_id: clientId,
    operation,
    action: spec.action,
    resource_type: spec.resource,
    resource_id: text(spec.id?.(request, answer)),
    patient_ref: text(spec.patient?.(request, answer)),
    status,
    request_id: request.id,
    source_address: request.ip ?? null,
    filter: spec.filter ? filterOf(log, spec.filter, request.query) : null,
    result_count: status !== null && status < 300 && spec.count ? spec.count(answer) : null,
    with_change: 0,
  };
}

const MAX_VALUE = 200;

function text(value: unknown): string | null {
  // A pair cut in two, like any lone surrogate or NUL, is made storable where entries are written (store.ts).
  if (typeof value === 'string') return value === '' ? null : value.slice(0, MAX_VALUE);
  if (typeof value === 'number') return String(value);
  return null;
}

function filterOf(log: AuditLog, filter: NonNullable<AuditedRoute['filter']>, query: unknown): string {
  const sent = (query ?? {}) as Record<string, unknown>;
  const kept: Record<string, unknown> = {};
  for (const key of filter.plain ?? []) {
    const value = sent[key];
    if (typeof value === 'number' || typeof value === 'boolean') kept[key] = value;
    else if (typeof value === 'string') kept[key] = value.slice(0, MAX_VALUE);
  }
  for (const key of filter.digest ?? []) {
    const value = sent[key];
    if (typeof value === 'string' || typeof value === 'number') kept[key] = log.digest(String(value));
  }
  return JSON.stringify(kept);
}

/** Appends a hook after the route's own of that name (a new array: the HEAD route copies the GET's). */
function addHook(route: RouteOptions, name: 'preSerialization' | 'onSend', hook: unknown): void {
  const hooks = route as unknown as Record<string, unknown>;
  const existing = hooks[name];
  hooks[name] = [...(existing === undefined ? [] : Array.isArray(existing) ? existing : [existing]), hook];
}
