/**
 * What is audited, in one place: every route that reads or changes patient data, by its method and
 * Fastify URL, with its resource type and how its resource id and patient reference are read from
 * the request and the answer. Every other route is listed in UNAUDITED_ROUTES with the reason; a test
 * fails when a route is in neither, so a new route cannot be forgotten.
 *
 * The patient reference is the service's patient id when the answer names the patient, else the
 * reference the request sent (a path id, X-Pt-Id or a body field, which may be the partner's id).
 */
import { OPERATOR_CHAIN, type AuditAction } from './entry.ts';

/** The parts of a request an extractor reads (Fastify's request has them). */
export interface RequestParts {
  params: unknown;
  query: unknown;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

type Read = (request: RequestParts, answer: unknown) => unknown;

export interface AuditedRoute {
  resource: string;
  action: AuditAction;
  /** The resource's id: from the answer when it names it, else from the request. */
  id?: Read;
  patient?: Read;
  /** Listings, searches and look-ups: the records returned. */
  count?: (answer: unknown) => number;
  /**
   * Listings, searches and look-ups: the query fields kept, `plain` as sent (ids, dates, pages) and
   * `digest` as keyed digests (names, mobiles, ABHA ids: the log holds no contact detail).
   */
  filter?: { plain?: readonly string[]; digest?: readonly string[] };
  /**
   * Admin routes: the business whose chain records the access (the operator's own chain without one);
   * `answer` is undefined unless the request succeeded.
   */
  business?: (request: RequestParts, answer: unknown) => string;
}

/** Changes write their entry in their own transaction; reads through the write-ahead file. */
export const CHANGES: ReadonlySet<AuditAction> = new Set(['create', 'update', 'delete', 'merge', 'send', 'export', 'erase']);

/** The value at a path in a parsed JSON value, or undefined. */
export function at(value: unknown, ...keys: Array<string | number>): unknown {
  let current = value;
  for (const key of keys) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string | number, unknown>)[key];
  }
  return current;
}

const params = (request: RequestParts) => (request.params ?? {}) as Record<string, string | undefined>;
const query = (request: RequestParts) => (request.query ?? {}) as Record<string, unknown>;
const body = (request: RequestParts, ...keys: string[]) => at(request.body, ...keys);
const header = (name: string) => (request: RequestParts) => {
  const value = request.headers[name];
  return typeof value === 'string' ? value.trim() : undefined;
};
const param = (name: string) => (request: RequestParts) => params(request)[name];
const answerOr = (field: string, fallback: Read) => (request: RequestParts, answer: unknown) => at(answer, field) ?? fallback(request, answer);
const length = (select: (answer: unknown) => unknown) => (answer: unknown) => {
  const list = select(answer);
  return Array.isArray(list) ? list.length : 0;
};
/** The one patient a look-up returned, when it returned exactly one. */
const onlyOne = (select: (answer: unknown) => unknown, field: string) => (_request: RequestParts, answer: unknown) => {
  const list = select(answer);
  return Array.isArray(list) && list.length === 1 ? at(list[0], field) : undefined;
};
const itself = (answer: unknown) => answer;
const field =
  (...keys: string[]) =>
  (answer: unknown) =>
    at(answer, ...keys);

const appointment: AuditedRoute = {
  resource: 'appointment',
  action: 'update',
  id: answerOr('appointment_id', param('appointment_id')),
  patient: (_request, answer) => at(answer, 'patient_id'),
};
const patientById = (name: string, action: AuditAction, field: string): AuditedRoute => ({
  resource: 'patient',
  action,
  id: answerOr(field, param(name)),
  patient: answerOr(field, param(name)),
});
const merge = (name: string): AuditedRoute => ({
  resource: 'patient',
  action: 'merge',
  // The duplicate is the record changed (archived into the survivor); the survivor is the patient.
  id: (request, answer) => at(answer, 'merged_patient_id') ?? body(request, 'duplicate_patient_id') ?? body(request, 'duplicate_oid'),
  patient: answerOr('patient_id', param(name)),
});
const caseRoute = (action: AuditAction): AuditedRoute => ({
  resource: 'case',
  action,
  id: (request, answer) => at(answer, 'id') ?? params(request).id ?? body(request, 'id'),
  patient: header('x-pt-id'),
});
const auditEvents = { plain: ['patient_id', 'client_id', 'resource_type', 'resource_id', 'from', 'to'] } as const;

export const AUDITED_ROUTES: Readonly<Record<string, AuditedRoute>> = {
  // Appointments (contract 4).
  'POST /dr/v1/appointment': {
    resource: 'appointment',
    action: 'create',
    id: (_request, answer) => at(answer, 'appointment_id'),
    patient: (request) =>
      body(request, 'patient_id') ?? body(request, 'partner_patient_id') ?? body(request, 'patient_details', 'partner_patient_id'),
  },
  'GET /dr/v1/appointment': {
    resource: 'appointment',
    action: 'list',
    patient: (request) => query(request).patient_id,
    count: length(field('appointments')),
    filter: { plain: ['clinic_id', 'doctor_id', 'patient_id', 'start_date', 'end_date', 'date', 'status', 'page_no'] },
  },
  'GET /dr/v1/appointment/:appointment_id': { ...appointment, action: 'read' },
  'PATCH /dr/v1/appointment/:appointment_id': appointment,
  // Answers 204: the patient is the one the body names, when it names one.
  'PATCH /dr/v2/appointment/:appointment_id': {
    ...appointment,
    id: param('appointment_id'),
    patient: (request) => body(request, 'patient_id') ?? body(request, 'partner_patient_id'),
  },
  'POST /dr/v1/appointment/:appointment_id/change-status': appointment,
  'GET /dr/v1/business/appointments/:appointment_id': { ...appointment, action: 'read' },
  // Answer 204: the entry names the appointment; its patient is in the appointment's own entries.
  'POST /dr/v1/appointment/:appointment_id/parked': { ...appointment, id: param('appointment_id') },
  'PATCH /dr/v1/appointment/:appointment_id/custom_attribute': { ...appointment, id: param('appointment_id') },
  'POST /dr/v1/appointment/:appointment_id/complete': appointment,
  'PUT /dr/v1/appointment/:appointment_id/cancel': appointment,
  // An event's body shows the appointment or case it is about.
  'GET /notification/v1/connect/webhook/events/:event_id': {
    resource: 'event',
    action: 'read',
    id: param('event_id'),
    patient: (_request, answer) => at(answer, 'body', 'data', 'patient_id'),
  },
  // A reschedule answers the new appointment: its id is the entry's resource.
  'PUT /dr/v1/appointment/:appointment_id/reschedule': appointment,
  'PATCH /appointments/v1/:appointment_id/reschedule': appointment,
  'POST /dr/v1/appointment/:appointment_id/review-request': { ...appointment, action: 'send', id: param('appointment_id') },
  'GET /dr/v1/appointment/patient/:patient_id': {
    resource: 'appointment',
    action: 'list',
    patient: (request, answer) => at(answer, 'data', 0, 'patient_id') ?? param('patient_id')(request),
    count: length(field('data')),
    filter: { plain: ['partner_id'] },
  },

  // Patients: the doctor tool's paths and the patient directory's.
  'POST /dr/v1/patient': patientById('patient_id', 'create', 'patient_id'),
  'GET /dr/v1/patient/:patient_id': patientById('patient_id', 'read', 'patient_id'),
  'PATCH /dr/v1/patient/:patient_id': patientById('patient_id', 'update', 'patient_id'),
  'POST /dr/v1/patient/:patient_id/merge': merge('patient_id'),
  'GET /dr/v1/business/patients/search': {
    resource: 'patient',
    action: 'search',
    patient: onlyOne(field('data', 'patients'), 'patient_id'),
    count: length(field('data', 'patients')),
    filter: { digest: ['mobile'] },
  },
  'POST /profiles/v1/patient/': patientById('oid', 'create', 'oid'),
  'GET /profiles/v1/patient/minified/': {
    resource: 'patient',
    action: 'list',
    count: length(field('profiles')),
    filter: { plain: ['pageNo', 'pageSize', 'page', 'limit', 'select', 'from', 'arc'] },
  },
  'GET /profiles/v1/patient/bulk': {
    resource: 'patient',
    action: 'list',
    patient: onlyOne(itself, 'oid'),
    count: length(itself),
    filter: { plain: ['oid_list', 'arc'] },
  },
  'GET /profiles/v1/patient/by-mobile/': {
    resource: 'patient',
    action: 'search',
    patient: onlyOne(itself, 'oid'),
    count: length(itself),
    filter: { plain: ['full_profile', 'arc'], digest: ['mob'] },
  },
  'GET /profiles/v1/patient/search': {
    resource: 'patient',
    action: 'search',
    patient: onlyOne(itself, 'oid'),
    count: length(itself),
    filter: { plain: ['limit', 'offset', 'select', 'arc'], digest: ['prefix'] },
  },
  'GET /profiles/v1/patient/by-abha/': {
    resource: 'patient',
    action: 'search',
    patient: onlyOne(itself, 'oid'),
    count: length(itself),
    filter: { plain: ['full_profile', 'arc'], digest: ['abha', 'abha_number'] },
  },
  'GET /profiles/v1/patient/:username/username/': {
    resource: 'patient',
    action: 'read',
    id: (request, answer) => onlyOne(itself, 'oid')(request, answer) ?? param('username')(request),
    patient: (request, answer) => onlyOne(itself, 'oid')(request, answer) ?? param('username')(request),
    count: length(itself),
  },
  'GET /profiles/v1/patient/:oid': patientById('oid', 'read', 'oid'),
  'PATCH /profiles/v1/patient/:oid': patientById('oid', 'update', 'oid'),
  'DELETE /profiles/v1/patient/:oid': patientById('oid', 'delete', 'oid'),
  'PATCH /profiles/v1/patient/:oid/unarchive': patientById('oid', 'update', 'oid'),
  'PATCH /profiles/v1/patient/:oid/remove-fields': patientById('oid', 'update', 'oid'),
  'POST /profiles/v1/patient/:oid/merge': merge('oid'),

  // Cases (contract 6): the patient is X-Pt-Id.
  'GET /mr/api/v1/cases': {
    resource: 'case',
    action: 'list',
    patient: header('x-pt-id'),
    count: length(field('cases')),
    filter: { plain: ['u_at__gt'] },
  },
  'POST /mr/api/v1/cases': caseRoute('create'),
  'GET /mr/api/v1/cases/:id': caseRoute('read'),
  'PATCH /mr/api/v1/cases/:id': caseRoute('update'),
  'DELETE /mr/api/v1/cases/:id': caseRoute('delete'),

  // Documents (the records API): the patient is X-Pt-Id; a download names it in its link.
  'GET /mr/api/v1/docs': {
    resource: 'document',
    action: 'list',
    patient: header('x-pt-id'),
    count: length(field('items')),
    filter: { plain: ['u_at__gt'] },
  },
  'POST /mr/api/v1/docs': {
    resource: 'document',
    action: 'create',
    id: (_request, answer) => {
      const batch = at(answer, 'batch_response');
      return Array.isArray(batch) ? batch.map((item) => at(item, 'document_id')).join(',') : undefined;
    },
    patient: header('x-pt-id'),
  },
  'POST /mr/api/v2/docs': { resource: 'document', action: 'create', id: (_request, answer) => at(answer, 'document_id'), patient: header('x-pt-id') },
  'GET /mr/api/v1/docs/:id': { resource: 'document', action: 'read', id: param('id'), patient: header('x-pt-id') },
  'PATCH /mr/api/v1/docs/:id': { resource: 'document', action: 'update', id: param('id'), patient: header('x-pt-id') },
  'DELETE /mr/api/v1/docs/:id': { resource: 'document', action: 'delete', id: param('id'), patient: header('x-pt-id') },
  'GET /mr/api/v1/docs/:document_id/result': { resource: 'document', action: 'read', id: param('document_id'), patient: header('x-pt-id') },
  'GET /mr/api/v1/docs/:id/files/:index': {
    resource: 'document_file',
    action: 'read',
    id: (request) => `${params(request).id}/${params(request).index}`,
    patient: (request) => query(request).pt,
  },
  'GET /mr/api/v1/docs/:id/files/:index/thumbnail': {
    resource: 'document_file',
    action: 'read',
    id: (request) => `${params(request).id}/${params(request).index}/thumbnail`,
    patient: (request) => query(request).pt,
  },

  // Push: devices tied to patients, and notifications sent to them.
  'POST /notification/add-device': {
    resource: 'device',
    action: 'update',
    id: (request) => body(request, 'devicePayload', 'did'),
    patient: header('x-pt-id'),
  },
  'DELETE /notification/delete-device': { resource: 'device', action: 'delete', id: header('device-id') },
  'POST /notification/send': {
    resource: 'notification',
    action: 'send',
    id: (_request, answer) => at(answer, 'notification_id'),
    patient: (request) => body(request, 'patient_id'),
  },
  'GET /notification/send/:notification_id': {
    resource: 'notification',
    action: 'read',
    id: param('notification_id'),
    count: length(field('devices')),
  },

  // Reviews: what patients wrote, by appointment.
  'GET /reviews/v1': {
    resource: 'review',
    action: 'list',
    count: length(field('reviews')),
    filter: { plain: ['clinic_id', 'doctor_id', 'page_no'] },
  },

  // A patient's rights: an export requested, its status and its document fetched, an erasure.
  'POST /privacy/v1/patients/:patient_id/export': {
    resource: 'export',
    action: 'export',
    id: (_request, answer) => at(answer, 'export_id'),
    patient: answerOr('patient_id', param('patient_id')),
  },
  'GET /privacy/v1/exports/:export_id': {
    resource: 'export',
    action: 'read',
    id: param('export_id'),
    patient: (_request, answer) => at(answer, 'patient_id'),
  },
  'GET /privacy/v1/exports/:export_id/download': {
    resource: 'export',
    action: 'read',
    id: param('export_id'),
    patient: (_request, answer) => at(answer, 'patient', 'id'),
  },
  // The entry that proves an erasure: who, when, which patient id, the answer; nothing erased.
  'POST /privacy/v1/patients/:patient_id/erase': {
    resource: 'patient',
    action: 'erase',
    id: answerOr('patient_id', param('patient_id')),
    patient: answerOr('patient_id', param('patient_id')),
  },

  // The access log itself: reading it is an access too.
  'GET /audit/v1/events': {
    resource: 'access_log',
    action: 'list',
    patient: (request) => query(request).patient_id,
    count: length(field('events')),
    filter: auditEvents,
  },
  // The operator's management of businesses and their API clients: a business's in that business's chain
  // (a new business's creation too, its chain opened in the same transaction), the list of every business in
  // the operator's own.
  'POST /admin/v1/businesses': {
    resource: 'business',
    action: 'create',
    id: (_request, answer) => at(answer, 'business_id'),
    business: (_request, answer) => {
      const id = at(answer, 'business_id');
      return typeof id === 'string' ? id : OPERATOR_CHAIN;
    },
  },
  'GET /admin/v1/businesses': {
    resource: 'business',
    action: 'list',
    count: length(field('businesses')),
    business: () => OPERATOR_CHAIN,
  },
  'POST /admin/v1/businesses/:business_id/clients': {
    resource: 'api_client',
    action: 'create',
    id: (_request, answer) => at(answer, 'client_id'),
    business: (request) => param('business_id')(request) ?? OPERATOR_CHAIN,
  },
  'GET /admin/v1/businesses/:business_id/clients': {
    resource: 'api_client',
    action: 'list',
    count: length(field('clients')),
    business: (request) => param('business_id')(request) ?? OPERATOR_CHAIN,
  },
  'GET /admin/v1/businesses/:business_id/usage': {
    resource: 'business',
    action: 'read',
    id: param('business_id'),
    business: (request) => param('business_id')(request) ?? OPERATOR_CHAIN,
  },
  'POST /admin/v1/businesses/:business_id/clients/:client_id/revoke': {
    resource: 'api_client',
    action: 'delete',
    id: param('client_id'),
    business: (request) => param('business_id')(request) ?? OPERATOR_CHAIN,
  },
  'POST /admin/v1/businesses/:business_id/clients/:client_id/rotate-secret': {
    resource: 'api_client',
    action: 'update',
    id: param('client_id'),
    business: (request) => param('business_id')(request) ?? OPERATOR_CHAIN,
  },
  // A business's own clients, read by one of them: in its business's chain, as the operator's listing is.
  'GET /connect-auth/v1/account/clients': {
    resource: 'api_client',
    action: 'list',
    count: length(field('clients')),
  },
  // Checking the chains reads every entry: an entry of the operator's chain, or of the one business's checked.
  'GET /admin/v1/audit/verify': {
    resource: 'access_log',
    action: 'read',
    business: (request) => {
      const id = query(request).business_id;
      return typeof id === 'string' && id !== '' ? id : OPERATOR_CHAIN;
    },
  },
  'GET /admin/v1/audit/events': {
    resource: 'access_log',
    action: 'list',
    patient: (request) => query(request).patient_id,
    count: length(field('events')),
    filter: { plain: [...auditEvents.plain, 'business_id'] },
    business: (request) => {
      const id = query(request).business_id;
      return typeof id === 'string' && id !== '' ? id : OPERATOR_CHAIN;
    },
  },
};

/** Every other route, and why it is not audited. */
export const UNAUDITED_ROUTES: Readonly<Record<string, string>> = {
  'GET /health': 'operations',
  'GET /ready': 'operations',
  'GET /metrics': 'operations',
  'GET /admin/v1/operations': "operations: counts of jobs, a run of retention and runs of backups, no business's data",
  'GET /openapi.json': 'the API description',
  'GET /.well-known/jwks.json': 'public keys',
  'POST /connect-auth/v1/account/login': 'authentication',
  'POST /connect-auth/v1/account/refresh': 'authentication',
  'POST /connect-auth/v1/account/refresh-token': 'authentication',
  'GET /medical-db/v1/drugs-and-labs': 'the drug and lab catalogue',
  'POST /cdr/v1/clinic': 'the clinic directory',
  'GET /cdr/v1/clinic': 'the clinic directory',
  'GET /cdr/v1/clinic/:id': 'the clinic directory',
  'PATCH /cdr/v1/clinic/:id': 'the clinic directory',
  'DELETE /cdr/v1/clinic/:clinic_id': 'the clinic directory',
  'POST /cdr/v1/doctor': 'the clinic directory',
  'GET /cdr/v1/doctor': 'the clinic directory',
  'GET /cdr/v1/doctor/:id': 'the clinic directory',
  'PATCH /cdr/v1/doctor/:id': 'the clinic directory',
  'DELETE /cdr/v1/doctor/:doc_id': 'the clinic directory',
  'GET /dr/v1/business/clinic/:clinic_id': 'the clinic directory',
  'GET /dr/v1/doctor/:doctor_id': 'the clinic directory',
  'GET /dr/v1/doctor/service/:doctor_id': "a doctor's services and fees (no patient data)",
  'GET /dr/v1/business/entities': 'the clinic directory',
  'POST /notification/push-creds': "the business's push credentials",
  'GET /notification/push-creds': "the business's push credentials",
  'DELETE /notification/push-creds': "the business's push credentials",
  'POST /notification/v1/connect/webhook/subscriptions': 'webhook subscriptions (events name patients by id only)',
  'GET /notification/v1/connect/webhook/subscriptions': 'webhook subscriptions (events name patients by id only)',
  'PATCH /notification/v1/connect/webhook/subscriptions/:id': 'webhook subscriptions (events name patients by id only)',
  'DELETE /notification/v1/connect/webhook/subscriptions/:id': 'webhook subscriptions (events name patients by id only)',
  'GET /notification/v1/connect/webhook/subscriptions/:id/deliveries': 'webhook subscriptions (events name patients by id only)',
  'POST /notification/v1/connect/webhook/subscriptions/:id/deliveries/:event_id/retry': 'webhook subscriptions (events name patients by id only)',
  'POST /notification/v1/connect/webhook/subscriptions/:id/replay': "webhook subscriptions (it sends events again to the partner's own endpoint)",
  'GET /dr/v1/doctor/:doctor_id/clinic/:clinic_id/appointment/slot': "a doctor's free slots (counts of places, no patient)",
  'PUT /cdr/v1/doctor/:doctor_id/clinic/:clinic_id/schedule': "a doctor's schedule (no patient data)",
  'GET /cdr/v1/doctor/:doctor_id/clinic/:clinic_id/schedule': "a doctor's schedule (no patient data)",
  'DELETE /cdr/v1/doctor/:doctor_id/clinic/:clinic_id/schedule': "a doctor's schedule (no patient data)",
  'GET /reviews/:token': "the patient's own review page, by its secret link: no API client acts",
  'POST /reviews/:token': "the patient's own review page, by its secret link: no API client acts",
  'GET /console': 'the browser console: its page (what it shows it reads through the API routes, audited there)',
  'GET /console/*': 'the browser console: its page',
  'GET /console/assets/:file': "the browser console: its page's files",
  'POST /console/session/operator': 'the browser console: signing in',
  'POST /console/session/client': 'the browser console: signing in',
  'GET /console/session': 'the browser console: its own session',
  'DELETE /console/session': 'the browser console: signing out',
  'POST /mr/api/v1/docs/upload': 'an upload form of POST /mr/api/v1/docs, whose entry (create) names the document and patient',
  'GET /mr/api/v1/docs/upload/done': "an object store's upload form's redirect, the same upload as POST /mr/api/v1/docs/upload",
};

/** The key of a route in the tables above; HEAD is its GET. */
export function routeKey(method: string, url: string): string {
  return `${method === 'HEAD' ? 'GET' : method} ${url}`;
}
