/**
 * Every audited operation writes its entry: one call per route of src/access-log/audited-routes.ts (a route added
 * there without a call here fails), and every route of the app is either audited or listed as not.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Fastify from 'fastify';
import { AUDITED_ROUTES, routeKey, UNAUDITED_ROUTES } from '../../src/access-log/audited-routes.ts';
import { ADMIN_TOKEN, createTestApp, DIALECT, type TestApp } from '../support.ts';
import { multipartBody, sampleFile } from '../modules/documents/support.ts';
import { call, entryOf, seed, type Seeded } from './support.ts';

interface Call {
  method: string;
  url: string;
  payload?: unknown;
  headers?: Record<string, string>;
  admin?: boolean;
  /** Expected resource id and patient reference of the entry. */
  id?: string | null;
  patient?: string | null;
  count?: number;
  /** The chain the entry goes to, when not the seeded business's (an operator's action on another or on none). */
  business?: string;
}

/** The request exercising each audited route, against a seeded business. */
function calls(
  s: Seeded,
  extra: {
    duplicateId: string;
    caseId: string;
    movedIds: [string, string];
    eventId: string;
    documentId: string;
    documentLink: string;
    thumbnailLink: string;
  },
): Record<string, () => Call> {
  const apt = s.appointmentId;
  const pt = s.patientId;
  const x = { 'x-pt-id': pt };
  return {
    'POST /dr/v1/appointment': () => ({
      method: 'POST',
      url: '/dr/v1/appointment',
      payload: {
        clinic_id: s.clinicId,
        doctor_id: s.doctorId,
        appointment_details: { start_time: 1_950_000_000, end_time: 1_950_000_900 },
        patient_details: { first_name: 'Ravi', gender: 'M', partner_patient_id: s.partnerPatientId },
      },
      patient: s.partnerPatientId,
    }),
    'GET /dr/v1/appointment': () => ({ method: 'GET', url: `/dr/v1/appointment?patient_id=${pt}`, patient: pt }),
    'GET /dr/v1/appointment/:appointment_id': () => ({ method: 'GET', url: `/dr/v1/appointment/${apt}`, id: apt, patient: pt }),
    'PATCH /dr/v1/appointment/:appointment_id': () => ({
      method: 'PATCH',
      url: `/dr/v1/appointment/${apt}`,
      payload: { notes: 'n' },
      id: apt,
      patient: pt,
    }),
    'PATCH /dr/v2/appointment/:appointment_id': () => ({
      method: 'PATCH',
      url: `/dr/v2/appointment/${apt}`,
      payload: { patient_id: pt, notes: 'v2' },
      id: apt,
      patient: pt,
    }),
    'GET /dr/v1/business/appointments/:appointment_id': () => ({ method: 'GET', url: `/dr/v1/business/appointments/${apt}`, id: apt, patient: pt }),
    'PATCH /dr/v1/appointment/:appointment_id/custom_attribute': () => ({
      method: 'PATCH',
      url: `/dr/v1/appointment/${apt}/custom_attribute`,
      payload: { payment_status: ['paid'] },
      id: apt,
      patient: null,
    }),
    'POST /dr/v1/appointment/:appointment_id/parked': () => ({ method: 'POST', url: `/dr/v1/appointment/${apt}/parked`, id: apt, patient: null }),
    'POST /dr/v1/appointment/:appointment_id/change-status': () => ({
      method: 'POST',
      url: `/dr/v1/appointment/${apt}/change-status`,
      payload: { status: 'NS' },
      id: apt,
      patient: pt,
    }),
    'POST /dr/v1/appointment/:appointment_id/complete': () => ({ method: 'POST', url: `/dr/v1/appointment/${apt}/complete`, id: apt, patient: pt }),
    'PUT /dr/v1/appointment/:appointment_id/cancel': () => ({ method: 'PUT', url: `/dr/v1/appointment/${apt}/cancel`, id: apt, patient: pt }),
    'POST /dr/v1/appointment/:appointment_id/review-request': () => ({ method: 'POST', url: `/dr/v1/appointment/${apt}/review-request`, id: apt }),
    'GET /dr/v1/appointment/patient/:patient_id': () => ({ method: 'GET', url: `/dr/v1/appointment/patient/${pt}`, patient: pt }),
    'GET /notification/v1/connect/webhook/events/:event_id': () => ({
      method: 'GET',
      url: `/notification/v1/connect/webhook/events/${extra.eventId}`,
      id: extra.eventId,
      patient: pt,
    }),
    'PUT /dr/v1/appointment/:appointment_id/reschedule': () => ({
      method: 'PUT',
      url: `/dr/v1/appointment/${extra.movedIds[0]}/reschedule`,
      payload: { start_time: 1_950_090_000, end_time: 1_950_090_900 },
      patient: pt,
    }),
    'PATCH /appointments/v1/:appointment_id/reschedule': () => ({
      method: 'PATCH',
      url: `/appointments/v1/${extra.movedIds[1]}/reschedule`,
      payload: { start_time: 1_950_190_000, end_time: 1_950_190_900 },
      patient: pt,
    }),
    'POST /dr/v1/patient': () => ({ method: 'POST', url: '/dr/v1/patient', payload: { first_name: 'Meera', gender: 'F', age: 30 } }),
    'GET /dr/v1/patient/:patient_id': () => ({ method: 'GET', url: `/dr/v1/patient/${pt}`, id: pt, patient: pt }),
    'PATCH /dr/v1/patient/:patient_id': () => ({
      method: 'PATCH',
      url: `/dr/v1/patient/${pt}`,
      payload: { city: undefined, blood_group: 'A+' },
      id: pt,
      patient: pt,
    }),
    'POST /dr/v1/patient/:patient_id/merge': () => ({
      method: 'POST',
      url: `/dr/v1/patient/${pt}/merge`,
      payload: { duplicate_patient_id: extra.duplicateId },
      id: extra.duplicateId,
      patient: pt,
    }),
    'GET /dr/v1/business/patients/search': () => ({
      method: 'GET',
      url: '/dr/v1/business/patients/search?mobile=%2B919812345678',
      patient: pt,
      count: 1,
    }),
    'POST /profiles/v1/patient/': () => ({ method: 'POST', url: '/profiles/v1/patient/', payload: { fn: 'Anita', gen: 'F', age: 40 } }),
    'GET /profiles/v1/patient/minified/': () => ({ method: 'GET', url: '/profiles/v1/patient/minified/?pageSize=5' }),
    'GET /profiles/v1/patient/by-mobile/': () => ({
      method: 'GET',
      url: '/profiles/v1/patient/by-mobile/?mob=%2B919812345678',
      patient: pt,
      count: 1,
    }),
    'GET /profiles/v1/patient/search': () => ({ method: 'GET', url: '/profiles/v1/patient/search?prefix=Ravi' }),
    'GET /profiles/v1/patient/by-abha/': () => ({ method: 'GET', url: '/profiles/v1/patient/by-abha/?abha_number=12-3456-7890-1234', count: 0 }),
    'GET /profiles/v1/patient/:username/username/': () => ({
      method: 'GET',
      url: `/profiles/v1/patient/${s.partnerPatientId}/username/`,
      id: pt,
      patient: pt,
    }),
    'GET /profiles/v1/patient/:oid': () => ({ method: 'GET', url: `/profiles/v1/patient/${pt}`, id: pt, patient: pt }),
    'PATCH /profiles/v1/patient/:oid': () => ({
      method: 'PATCH',
      url: `/profiles/v1/patient/${pt}`,
      payload: { bloodgroup: 'B+' },
      id: pt,
      patient: pt,
    }),
    'GET /profiles/v1/patient/bulk': () => ({ method: 'GET', url: `/profiles/v1/patient/bulk?oid_list=${pt},pt_unknown`, patient: pt, count: 1 }),
    'PATCH /profiles/v1/patient/:oid/unarchive': () => ({
      method: 'PATCH',
      url: `/profiles/v1/patient/${pt}/unarchive`,
      payload: {},
      id: pt,
      patient: pt,
    }),
    'PATCH /profiles/v1/patient/:oid/remove-fields': () => ({
      method: 'PATCH',
      url: `/profiles/v1/patient/${pt}/remove-fields`,
      payload: { fields: ['email'] },
      id: pt,
      patient: pt,
    }),
    'DELETE /profiles/v1/patient/:oid': () => ({ method: 'DELETE', url: `/profiles/v1/patient/${extra.duplicateId}`, id: extra.duplicateId }),
    'POST /profiles/v1/patient/:oid/merge': () => ({
      method: 'POST',
      url: `/profiles/v1/patient/${pt}/merge`,
      payload: { duplicate_oid: extra.duplicateId },
      id: extra.duplicateId,
      patient: pt,
    }),
    'GET /mr/api/v1/cases': () => ({ method: 'GET', url: '/mr/api/v1/cases', headers: x, patient: pt }),
    'POST /mr/api/v1/cases': () => ({
      method: 'POST',
      url: '/mr/api/v1/cases',
      headers: x,
      payload: { id: 'case-new', display_name: 'Visit', occurred_at: 1_700_000_000 },
      id: 'case-new',
      patient: pt,
    }),
    'GET /mr/api/v1/cases/:id': () => ({ method: 'GET', url: `/mr/api/v1/cases/${extra.caseId}`, headers: x, id: extra.caseId, patient: pt }),
    'PATCH /mr/api/v1/cases/:id': () => ({
      method: 'PATCH',
      url: `/mr/api/v1/cases/${extra.caseId}`,
      headers: x,
      payload: { display_name: 'Changed' },
      id: extra.caseId,
      patient: pt,
    }),
    'DELETE /mr/api/v1/cases/:id': () => ({ method: 'DELETE', url: `/mr/api/v1/cases/${extra.caseId}`, headers: x, id: extra.caseId, patient: pt }),
    'GET /mr/api/v1/docs': () => ({ method: 'GET', url: '/mr/api/v1/docs', headers: x, patient: pt }),
    'POST /mr/api/v1/docs': () => ({
      method: 'POST',
      url: '/mr/api/v1/docs',
      headers: x,
      payload: { batch_request: [{ document_id: 'doc-new', files: [{ contentType: 'application/pdf', file_size: 100 }] }] },
      id: 'doc-new',
      patient: pt,
    }),
    'POST /mr/api/v2/docs': () => {
      const body = multipartBody([{ name: 'file', value: sampleFile('pdf'), fileName: 'a.pdf', contentType: 'application/pdf' }]);
      return { method: 'POST', url: '/mr/api/v2/docs?task=smart', headers: { ...x, ...body.headers }, payload: body.payload, patient: pt };
    },
    'GET /mr/api/v1/docs/:id': () => ({ method: 'GET', url: `/mr/api/v1/docs/${extra.documentId}`, headers: x, id: extra.documentId, patient: pt }),
    'PATCH /mr/api/v1/docs/:id': () => ({
      method: 'PATCH',
      url: `/mr/api/v1/docs/${extra.documentId}`,
      headers: x,
      payload: { title: 'Changed' },
      id: extra.documentId,
      patient: pt,
    }),
    'DELETE /mr/api/v1/docs/:id': () => ({
      method: 'DELETE',
      url: `/mr/api/v1/docs/${extra.documentId}`,
      headers: x,
      id: extra.documentId,
      patient: pt,
    }),
    'GET /mr/api/v1/docs/:document_id/result': () => ({
      method: 'GET',
      url: `/mr/api/v1/docs/${extra.documentId}/result`,
      headers: x,
      id: extra.documentId,
      patient: pt,
    }),
    'GET /mr/api/v1/docs/:id/files/:index': () => ({ method: 'GET', url: extra.documentLink, id: `${extra.documentId}/0`, patient: pt }),
    'GET /mr/api/v1/docs/:id/files/:index/thumbnail': () => ({
      method: 'GET',
      url: extra.thumbnailLink,
      id: `${extra.documentId}/0/thumbnail`,
      patient: pt,
    }),
    'POST /notification/add-device': () => ({
      method: 'POST',
      url: '/notification/add-device',
      headers: x,
      payload: { devicePayload: { did: 'dev-1', 'fcm-id': 'f', 'app-version': '1' } },
      id: 'dev-1',
      patient: pt,
    }),
    'DELETE /notification/delete-device': () => ({
      method: 'DELETE',
      url: '/notification/delete-device',
      headers: { 'device-id': 'dev-1' },
      id: 'dev-1',
    }),
    'POST /notification/send': () => ({ method: 'POST', url: '/notification/send', payload: { patient_id: pt, title: 't', body: 'b' }, patient: pt }),
    'GET /notification/send/:notification_id': () => ({ method: 'GET', url: '/notification/send/ntf_unknown', id: 'ntf_unknown' }),
    'GET /reviews/v1': () => ({ method: 'GET', url: '/reviews/v1', count: 0 }),
    'POST /privacy/v1/patients/:patient_id/export': () => ({ method: 'POST', url: `/privacy/v1/patients/${pt}/export`, patient: pt }),
    'GET /privacy/v1/exports/:export_id': () => ({ method: 'GET', url: '/privacy/v1/exports/exp_unknown', id: 'exp_unknown' }),
    'GET /privacy/v1/exports/:export_id/download': () => ({
      method: 'GET',
      url: '/privacy/v1/exports/exp_unknown/download?token=x',
      id: 'exp_unknown',
    }),
    'POST /privacy/v1/patients/:patient_id/erase': () => ({ method: 'POST', url: `/privacy/v1/patients/${pt}/erase`, id: pt, patient: pt }),
    'GET /audit/v1/events': () => ({ method: 'GET', url: `/audit/v1/events?patient_id=${pt}`, patient: pt }),
    'GET /admin/v1/audit/verify': () => ({ method: 'GET', url: `/admin/v1/audit/verify?business_id=${s.client.businessId}`, admin: true }),
    'GET /admin/v1/audit/events': () => ({ method: 'GET', url: `/admin/v1/audit/events?business_id=${s.client.businessId}`, admin: true }),
    'GET /connect-auth/v1/account/clients': () => ({ method: 'GET', url: '/connect-auth/v1/account/clients' }),
    'GET /admin/v1/businesses/:business_id/usage': () => ({
      method: 'GET',
      url: `/admin/v1/businesses/${s.client.businessId}/usage`,
      admin: true,
      id: s.client.businessId,
    }),
    'GET /admin/v1/businesses/:business_id/clients': () => ({
      method: 'GET',
      url: `/admin/v1/businesses/${s.client.businessId}/clients`,
      admin: true,
    }),
    // The creation of a business is in the new business's chain; the list of every business in the operator's own.
    'POST /admin/v1/businesses': () => ({
      method: 'POST',
      url: '/admin/v1/businesses',
      payload: { name: 'Entries Clinic' },
      admin: true,
      business: 'new',
    }),
    'GET /admin/v1/businesses': () => ({ method: 'GET', url: '/admin/v1/businesses', admin: true, business: '*' }),
    'POST /admin/v1/businesses/:business_id/clients': () => ({
      method: 'POST',
      url: `/admin/v1/businesses/${s.client.businessId}/clients`,
      payload: { scopes: ['search'] },
      admin: true,
    }),
    // An unknown client: the test's own client keeps working for the calls after.
    'POST /admin/v1/businesses/:business_id/clients/:client_id/revoke': () => ({
      method: 'POST',
      url: `/admin/v1/businesses/${s.client.businessId}/clients/cl_unknown/revoke`,
      admin: true,
      id: 'cl_unknown',
    }),
    'POST /admin/v1/businesses/:business_id/clients/:client_id/rotate-secret': () => ({
      method: 'POST',
      url: `/admin/v1/businesses/${s.client.businessId}/clients/cl_unknown/rotate-secret`,
      payload: { grace_seconds: 60 },
      admin: true,
      id: 'cl_unknown',
    }),
  };
}

describe(`access log entries (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => (t = await createTestApp()));
  after(async () => t.close());

  it('every route is audited or listed as not, and every audited route exists', async () => {
    const seen: string[] = [];
    const probe = Fastify();
    probe.addHook('onRoute', (route) => {
      for (const method of [route.method].flat()) if (method !== 'HEAD' && !route.url.startsWith('/docs')) seen.push(routeKey(method, route.url));
    });
    probe.setValidatorCompiler(() => () => true);
    probe.setSerializerCompiler(() => (data) => JSON.stringify(data));
    for (const module of Object.values(t.modules)) await probe.register(module.routes);
    await probe.ready();
    const missing = seen.filter((key) => !(key in AUDITED_ROUTES) && !(key in UNAUDITED_ROUTES));
    assert.deepEqual(missing, [], 'routes neither audited nor listed as unaudited in src/access-log/audited-routes.ts');
    for (const key of Object.keys(AUDITED_ROUTES)) assert.ok(seen.includes(key), `${key} is audited but no such route exists`);
    for (const key of Object.keys(AUDITED_ROUTES)) assert.ok(!(key in UNAUDITED_ROUTES), key);
    await probe.close();
  });

  it('each audited route writes one entry with its operation, ids, status and request id', async () => {
    const s = await seed(t);
    const duplicate = await call(t, s.client.token, 'POST', '/dr/v1/patient', { first_name: 'Ravi', gender: 'M', age: 35 });
    const caseId = 'case-1';
    const created = await call(
      t,
      s.client.token,
      'POST',
      '/mr/api/v1/cases',
      { id: caseId, display_name: 'Visit', occurred_at: 1_700_000_000 },
      { 'x-pt-id': s.patientId },
    );
    assert.equal(created.statusCode, 201, created.body);
    const moved: string[] = [];
    for (const start of [1_950_080_000, 1_950_180_000]) {
      const booked = await call(t, s.client.token, 'POST', '/dr/v1/appointment', {
        clinic_id: s.clinicId,
        doctor_id: s.doctorId,
        appointment_details: { start_time: start, end_time: start + 900 },
        patient_details: { partner_patient_id: s.partnerPatientId },
      });
      assert.equal(booked.statusCode, 201, booked.body);
      moved.push(booked.json().appointment_id);
    }
    const booked = await t.ctx.storage.db
      .selectFrom('events')
      .select('id')
      .where('business_id', '=', s.client.businessId)
      .where('ordering_key', '=', `appointment:${s.appointmentId}`)
      .executeTakeFirstOrThrow();
    const upload = multipartBody([{ name: 'file', value: sampleFile('png'), fileName: 'a.png', contentType: 'image/png' }]);
    const document = await call(t, s.client.token, 'POST', '/mr/api/v2/docs?task=smart', upload.payload, {
      'x-pt-id': s.patientId,
      ...upload.headers,
    });
    assert.equal(document.statusCode, 200, document.body);
    const documentId = document.json().document_id as string;
    // The thumbnail job; the file's link opens its thumbnail too.
    await t.ctx.jobs.runDue();
    const read = await call(t, s.client.token, 'GET', `/mr/api/v1/docs/${documentId}`, undefined, { 'x-pt-id': s.patientId });
    const link = new URL(read.json().files[0].asset_url as string);
    const table = calls(s, {
      duplicateId: duplicate.json().patient_id,
      caseId,
      movedIds: [moved[0]!, moved[1]!],
      eventId: booked.id,
      documentId,
      documentLink: `${link.pathname}${link.search}`,
      thumbnailLink: `${link.pathname}/thumbnail${link.search}`,
    });
    assert.deepEqual(Object.keys(table).sort(), Object.keys(AUDITED_ROUTES).sort(), 'a call for every audited route');
    // In an order that keeps the records the later calls need: merge and delete last.
    const order = Object.keys(table).sort((a, b) => rank(a) - rank(b));
    for (const key of order) {
      const c = table[key]!();
      const response = await t.app.inject({
        method: c.method as 'GET',
        url: c.url,
        headers: { authorization: `Bearer ${c.admin ? ADMIN_TOKEN : s.client.token}`, ...c.headers },
        ...(c.payload === undefined ? {} : { payload: c.payload as object }),
      });
      assert.ok(response.statusCode < 500, `${key}: ${response.statusCode} ${response.body}`);
      const entry = await entryOf(t, response.headers['x-request-id'] as string);
      assert.ok(entry, `${key} wrote no entry (${response.statusCode} ${response.body.slice(0, 200)})`);
      assert.equal(entry.operation, key);
      const business = c.business === 'new' ? response.json().business_id : (c.business ?? s.client.businessId);
      assert.equal(entry.business_id, business, key);
      if (c.business === undefined && key.startsWith('POST /admin/') && response.statusCode === 201)
        assert.equal(entry.resource_id, response.json().client_id, key);
      if (c.business === 'new') assert.equal(entry.resource_id, business, key);
      assert.equal(entry.client_id, c.admin ? 'admin' : s.client.clientId, key);
      assert.equal(entry.status, response.statusCode, key);
      assert.equal(entry.resource_type, AUDITED_ROUTES[key]!.resource, key);
      assert.equal(entry.source_address, '127.0.0.1');
      assert.ok(entry.seq !== null && entry.hash !== null, `${key} chained`);
      if (c.id !== undefined) assert.equal(entry.resource_id, c.id, `${key} resource id`);
      if (c.patient !== undefined) assert.equal(entry.patient_ref, c.patient, `${key} patient`);
      if (c.count !== undefined) assert.equal(entry.result_count, c.count, `${key} count`);
      if (AUDITED_ROUTES[key]!.filter) assert.ok(entry.filter !== null, `${key} filter`);
      const change = ['create', 'update', 'delete', 'merge', 'send', 'export', 'erase'].includes(AUDITED_ROUTES[key]!.action);
      // The operator's entries, like reads, follow their answer through the write-ahead file (the admin token names no business before the change).
      if (change && response.statusCode < 300 && !c.admin) assert.equal(entry.with_change, 1, `${key} written with its change`);
      // No contact detail: the mobile and the searched name appear nowhere in the entry.
      assert.ok(!JSON.stringify(entry).includes('9812345678') && !JSON.stringify(entry).includes('Ravi'), `${key}: ${JSON.stringify(entry)}`);
    }
  });

  it('a request refused before a business is known writes no entry; a validation error does', async () => {
    const s = await seed(t);
    const anonymous = await t.app.inject({ method: 'GET', url: `/dr/v1/appointment/${s.appointmentId}` });
    assert.equal(anonymous.statusCode, 401);
    assert.equal(await entryOf(t, anonymous.headers['x-request-id'] as string), undefined);
    const invalid = await call(t, s.client.token, 'GET', '/profiles/v1/patient/search?limit=0&prefix=Ravi');
    assert.equal(invalid.statusCode, 400);
    const entry = await entryOf(t, invalid.headers['x-request-id'] as string);
    assert.equal(entry?.status, 400);
    assert.equal(entry?.result_count, null);
  });
});

function rank(key: string): number {
  if (key.endsWith('/erase')) return 4;
  if (key.includes('/merge')) return 3;
  if (key.startsWith('DELETE')) return 2;
  if (key.includes('/cancel') || key.includes('/complete') || key.includes('change-status')) return 1;
  return 0;
}
