/** Shared code of the privacy tests: a patient with data everywhere, the export's steps, and a scan of every table. */
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { isPostgres } from '../../../src/db/dialect.ts';
import { EVENT_NAMES } from '../../../src/events.ts';
import { bearer, type TestApp, type TestClient } from '../../support.ts';
import { createPractice, START, type Practice } from '../appointments/support.ts';
import { postForm, reviewToken } from '../reviews/support.ts';

let counter = 0;

export async function call(t: TestApp, token: string, method: string, url: string, payload?: unknown, headers: Record<string, string> = {}) {
  return t.app.inject({
    method: method as 'GET',
    url,
    headers: { ...bearer(token), ...headers },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}

/** A webhook subscription to every event, at `endpoint`. */
export async function subscribe(t: TestApp, token: string, endpoint: string): Promise<void> {
  const response = await call(t, token, 'POST', '/notification/v1/connect/webhook/subscriptions', { endpoint, event_names: EVENT_NAMES });
  assert.equal(response.statusCode, 201, response.body);
}

/** A person whose name and number appear nowhere else in the database (no one's name holds another's). */
export interface Person {
  first: string;
  last: string;
  /** As stored: +91 and ten digits. */
  mobile: string;
  /** The ten digits. */
  local: string;
  partnerId: string;
}

export function person(): Person {
  const n = ++counter;
  const digits = `98760${String(10_000 + n).padStart(5, '0')}`;
  return { first: `Zeb${'x'.repeat(n)}yulon`, last: `Quix${'q'.repeat(n)}pwell`, mobile: `+91${digits}`, local: digits, partnerId: `priv-pp-${n}` };
}

export interface Seeded {
  practice: Practice;
  patientId: string;
  appointmentIds: string[];
}

/**
 * The person everywhere a patient's data goes: two appointments (one completed and reviewed, both
 * with notes and attributes naming them), an updated record, cases (one deleted), a device, a
 * notification, searches by name and number (the access log's filters), Idempotency-Key answers, and
 * the events of it all.
 */
export async function seedPerson(t: TestApp, client: TestClient, who: Person): Promise<Seeded> {
  const practice = await createPractice(t, { client });
  const booking = (n: number) => ({
    clinic_id: practice.clinicId,
    doctor_id: practice.doctorId,
    appointment_details: {
      start_time: START + counter * 10_000 + n * 900,
      end_time: START + counter * 10_000 + n * 900 + 900,
      custom_attributes: { label: [`${who.first} VIP`] },
    },
    patient_details: {
      first_name: who.first,
      last_name: who.last,
      mobile: who.mobile,
      gender: 'M',
      dob: '1984-02-03',
      partner_patient_id: who.partnerId,
    },
    notes: `${who.first} ${who.last} prefers mornings; call ${who.mobile}`,
    partner_meta: { contact: who.local },
    display_meta: { caller: who.last },
  });
  const appointmentIds: string[] = [];
  for (const n of [0, 1]) {
    const booked = await call(t, client.token, 'POST', '/dr/v1/appointment', booking(n), { 'idempotency-key': `book-${who.partnerId}-${n}` });
    assert.equal(booked.statusCode, 201, booked.body);
    appointmentIds.push(booked.json().appointment_id);
  }
  const read = await call(t, client.token, 'GET', `/dr/v1/appointment/${appointmentIds[0]}`);
  const patientId = read.json().patient_id as string;
  const updated = await call(
    t,
    client.token,
    'PATCH',
    `/dr/v1/patient/${who.partnerId}?partner_id=1`,
    { email: `${who.first.toLowerCase()}.${who.last.toLowerCase()}@example.com` },
    { 'idempotency-key': `patch-${who.partnerId}` },
  );
  assert.equal(updated.statusCode, 200, updated.body);
  const completed = await call(t, client.token, 'POST', `/dr/v1/appointment/${appointmentIds[0]}/complete`, {});
  assert.equal(completed.statusCode, 200, completed.body);
  const reviewed = await postForm(t, await reviewToken(t, appointmentIds[0]!), { rating: '5', comment: `${who.first} says thank you` });
  assert.equal(reviewed.statusCode, 201, reviewed.body);

  const caseHeaders = { 'x-pt-id': who.partnerId };
  for (const id of ['c-1', 'c-2']) {
    const created = await call(
      t,
      client.token,
      'POST',
      '/mr/api/v1/cases',
      { id, display_name: `${who.last} X-ray ${id}`, occurred_at: 1_700_000_000, partner_meta: { mobile: who.mobile } },
      caseHeaders,
    );
    assert.equal(created.statusCode, 201, created.body);
  }
  assert.equal((await call(t, client.token, 'DELETE', '/mr/api/v1/cases/c-2', undefined, caseHeaders)).statusCode, 204);
  const device = await call(
    t,
    client.token,
    'POST',
    '/notification/add-device',
    { devicePayload: { did: `dev-${who.partnerId}`, 'fcm-id': `fcm-token-${who.partnerId}-0123456789abcdefghij`, 'app-version': '1.0.0' } },
    { 'x-pt-id': patientId },
  );
  assert.equal(device.statusCode, 200, device.body);
  // A notification sent to them (sending needs push credentials; the row is what it leaves).
  await t.ctx.storage.db
    .insertInto('push_notifications')
    .values({
      id: `ntf-${who.partnerId}`,
      business_id: client.businessId,
      title: `Hello ${who.first}`,
      body: `Your report is ready, ${who.last}`,
      data: JSON.stringify({ mobile: who.mobile }),
      patient_ref: who.partnerId,
      created_by: client.clientId,
      created_at: Date.now(),
    })
    .execute();

  for (const url of [
    `/profiles/v1/patient/search?prefix=${who.first}`,
    `/profiles/v1/patient/by-mobile/?mob=${who.local}`,
    `/dr/v1/business/patients/search?mobile=${encodeURIComponent(who.mobile)}`,
    `/profiles/v1/patient/${who.partnerId}/username/`,
  ]) {
    const found = await call(t, client.token, 'GET', url);
    assert.equal(found.statusCode, 200, `${url}: ${found.body}`);
  }
  await t.ctx.jobs.runDue();
  await t.ctx.audit.flush();
  return { practice, patientId, appointmentIds };
}

/** Asks for the export and runs its job; answers the ready status. */
export async function exportReady(t: TestApp, token: string, path: string): Promise<{ export_id: string; download_url: string }> {
  const [id, query] = path.split('?');
  const asked = await call(t, token, 'POST', `/privacy/v1/patients/${id}/export${query ? `?${query}` : ''}`);
  assert.equal(asked.statusCode, 202, asked.body);
  await t.ctx.audit.flush();
  await t.ctx.jobs.runDue();
  const status = await call(t, token, 'GET', `/privacy/v1/exports/${asked.json().export_id}`);
  assert.equal(status.statusCode, 200, status.body);
  assert.equal(status.json().status, 'ready', status.body);
  return status.json();
}

/** The path and query of a download link (the app is reached in process). */
export function linkPath(url: string): string {
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
}

/** Every text (and binary) value of every table of the database, with where it is. */
export async function everyValue(t: TestApp): Promise<Array<{ table: string; column: string; value: string }>> {
  const db = t.ctx.storage.db;
  const tables = isPostgres(db)
    ? (
        await sql<{
          name: string;
        }>`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(db)
      ).rows
    : (await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(db)).rows;
  assert.ok(tables.length >= 30, `${tables.length} tables`);
  const values: Array<{ table: string; column: string; value: string }> = [];
  for (const { name } of tables) {
    const rows = (await sql<Record<string, unknown>>`select * from ${sql.table(name)}`.execute(db)).rows;
    for (const row of rows) {
      for (const [column, value] of Object.entries(row)) {
        if (typeof value === 'string') values.push({ table: name, column, value });
        else if (Buffer.isBuffer(value) || value instanceof Uint8Array)
          values.push({ table: name, column, value: Buffer.from(value).toString('latin1') });
      }
    }
  }
  return values;
}

/** Where the person's name or number is found in any form: as stored, lower-cased, digits without separators. */
export async function findPerson(t: TestApp, who: Person): Promise<string[]> {
  const needles = [who.first, who.last, who.local].map((needle) => needle.toLowerCase());
  const found: string[] = [];
  for (const { table, column, value } of await everyValue(t)) {
    const lower = value.toLowerCase();
    const digits = value.replace(/[\s\-().+]/g, '');
    for (const needle of needles) {
      if (lower.includes(needle) || (/^\d+$/.test(needle) && digits.includes(needle))) found.push(`${table}.${column}: ${needle}`);
    }
  }
  return found;
}
