/**
 * Stored state for the fuzz test: the records that generated requests address (created through the
 * API, as a client would), and a digest of the database to prove a refused request stored nothing.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { newId } from '../../src/db/ids.ts';
import { sha256 } from '../../src/security/secrets.ts';
import { ADMIN_TOKEN, createTestClient, type TestApp, type TestClient } from '../support.ts';

/**
 * Where every outbound address of the fixtures points: a loopback port nothing listens on, so the
 * deliveries that runDue attempts fail at once without leaving the machine (CPS_FCM_URL too).
 */
export const NOWHERE = 'http://127.0.0.1:9';

export const PATIENTS = ['pt-fuzz-1', 'pt-fuzz-2'];

export interface Fixtures {
  client: TestClient;
  /** Values by field or parameter name (see Pools in valid.ts). */
  pools: Record<string, string[] | fc.Arbitrary<unknown>>;
}

async function call(t: TestApp, token: string, method: string, url: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await t.app.inject({
    method: method as 'POST',
    url,
    headers: { authorization: `Bearer ${token}`, ...headers },
    ...(body === undefined ? {} : { payload: body as object }),
  });
  assert.ok(response.statusCode < 300, `fixture ${method} ${url}: ${response.statusCode} ${response.body}`);
  return response.body ? response.json() : null;
}

let idempotencyKeys = 0;

/** A business with every scope and a few of each record, in both their service and partner ids. */
export async function createFixtures(t: TestApp): Promise<Fixtures> {
  const client = await createTestClient(t.ctx);
  const other = await createTestClient(t.ctx);
  const token = client.token;
  const doctors: string[] = [];
  const clinics: string[] = [];
  for (const n of [1, 2]) {
    doctors.push((await call(t, token, 'POST', '/cdr/v1/doctor', { firstname: 'Asha', lastname: `Rao ${n}`, partner_id: `pd-${n}` })).svcid);
    clinics.push(
      (
        await call(t, token, 'POST', '/cdr/v1/clinic', {
          name: `Clinic ${n}`,
          address: '1 MG Road',
          partner_id: `pc-${n}`,
          doctor_ids: doctors,
          review_link: 'https://reviews.example.test/c',
        })
      ).svcid,
    );
  }
  const appointments: string[] = [];
  for (const n of [1, 2, 3, 4]) {
    appointments.push(
      (
        await call(t, token, 'POST', '/dr/v1/appointment', {
          partner_appointment_id: `pa-${n}`,
          clinic_id: clinics[n % 2],
          doctor_id: doctors[n % 2],
          appointment_details: { start_time: 1_900_000_000 + n * 3600, end_time: 1_900_000_000 + n * 3600 + 900, mode: 'INCLINIC' },
          patient_details: {
            first_name: 'Ravi',
            last_name: 'Kumar',
            mobile: '+919812345678',
            gender: 'M',
            dob: '1990-04-01',
            partner_patient_id: PATIENTS[n % 2],
          },
          partner_meta: { source: 'fuzz', n },
        })
      ).appointment_id,
    );
  }
  const subscriptions: string[] = [];
  for (const n of [1, 2]) {
    subscriptions.push(
      (
        await call(t, token, 'POST', '/notification/v1/connect/webhook/subscriptions', {
          endpoint: `${NOWHERE}/hook/${n}`,
          event_names: ['external_review.request'],
        })
      ).id,
    );
  }
  // Review requests store events and webhook deliveries (no worker runs, so nothing is sent).
  for (const id of appointments.slice(0, 2)) await call(t, token, 'POST', `/dr/v1/appointment/${id}/review-request`);
  const cases: string[] = [];
  for (const n of [1, 2, 3]) {
    await call(
      t,
      token,
      'POST',
      '/mr/api/v1/cases',
      { id: `case-${n}`, display_name: `Visit ${n}`, occurred_at: 1_700_000_000 + n, hi_type: 'Prescription' },
      { 'x-pt-id': PATIENTS[0]! },
    );
    cases.push(`case-${n}`);
  }
  const privateKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  const saKey = {
    type: 'service_account',
    project_id: 'fuzz-project',
    private_key_id: 'k1',
    private_key: privateKey,
    client_email: 'fuzz@fuzz-project.iam.example.test',
    client_id: '1234',
    auth_uri: 'https://accounts.example.test/auth',
    token_uri: `${NOWHERE}/token`,
    auth_provider_x509_cert_url: 'https://certs.example.test/v1',
    client_x509_cert_url: 'https://certs.example.test/v1/fuzz',
    universal_domain: 'googleapis.com',
  };
  await call(t, token, 'POST', '/notification/push-creds', { sa_key: saKey });
  const devices = ['dev-fuzz-1', 'dev-fuzz-2', 'dev-fuzz-3'];
  for (const did of devices) {
    await call(
      t,
      token,
      'POST',
      '/notification/add-device',
      { devicePayload: { did, 'fcm-id': `fcm-${did}`, 'app-version': '1.0.0' } },
      { 'x-pt-id': PATIENTS[0]! },
    );
  }
  const notifications = [
    (await call(t, token, 'POST', '/notification/send', { device_ids: devices.slice(0, 2), title: 'Hello', body: 'Your report is ready' }))
      .notification_id as string,
  ];

  // Fans events out to webhook deliveries and attempts each delivery once (refused at NOWHERE).
  await t.ctx.jobs.runDue();
  const db = t.ctx.storage.db;
  const events = (await db.selectFrom('webhook_deliveries').select('event_id').execute()).map((row) => row.event_id);
  const reviewTokens = (await db.selectFrom('appointments').select('review_token').execute()).map((row) => row.review_token);
  assert.ok(events.length > 0 && reviewTokens.length > 0);

  return {
    client,
    pools: {
      business_id: [client.businessId, other.businessId],
      client_id: [client.clientId],
      client_secret: [client.clientSecret],
      refresh_token: [FRESH_REFRESH_TOKEN],
      clinic_id: clinics,
      clinic_ids: clinics,
      partner_clinic_id: ['pc-1', 'pc-2'],
      partner_clinic_ids: ['pc-1', 'pc-2'],
      doctor_id: doctors,
      doctor_ids: doctors,
      partner_doctor_id: ['pd-1', 'pd-2'],
      partner_doctor_ids: ['pd-1', 'pd-2'],
      appointment_id: appointments,
      partner_appointment_id: ['pa-1', 'pa-2', 'pa-3', 'pa-4'],
      patient_id: PATIENTS,
      partner_patient_id: PATIENTS,
      // The cases and devices above belong to the first patient.
      'x-pt-id': [PATIENTS[0]!],
      case_id: cases,
      subscription_id: subscriptions,
      event_id: events,
      review_token: reviewTokens,
      notification_id: notifications,
      'device-id': devices,
      // Mostly a fresh key each time (fast-check's own strings repeat), so that keyed writes run rather
      // than answer 422 for a key used before.
      'idempotency-key': fc.constant('fuzz').map((prefix) => `${prefix}-${++idempotencyKeys}`),
      device_ids: devices,
      did: devices,
      q: ['para', 'paracetamol', 'dolo 650', 'PAN40', 'amoxicillin', 'cbc', 'tsh', 'paracitamol'],
      endpoint: [`${NOWHERE}/hook/new`],
      event_names: ['external_review.request'],
      signing_key: [`whsec_${randomBytes(32).toString('base64')}`],
      sa_key: fc.constant(saKey),
      // Shown on the appointment card: keys up to 30 characters, values short strings or numbers.
      display_meta: fc.dictionary(
        fc.string({ minLength: 1, maxLength: 30 }),
        fc.oneof(fc.string({ maxLength: 50 }), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })),
        { maxKeys: 4, noNullPrototype: true },
      ),
    },
  };
}

/** Stands for a refresh token minted just before the request is sent, so that each is presented once. */
export const FRESH_REFRESH_TOKEN = 'FUZZ_FRESH_REFRESH_TOKEN';

export async function mintRefreshToken(t: TestApp, client: TestClient): Promise<string> {
  const token = `rt_${randomBytes(32).toString('base64url')}`;
  const now = Date.now();
  await t.ctx.storage.db
    .insertInto('refresh_tokens')
    .values({
      id: newId('rt'),
      token_hash: sha256(token),
      family_id: newId('rtf'),
      client_id: client.clientId,
      business_id: client.businessId,
      expires_at: now + 3_600_000,
      used_at: null,
      revoked_at: null,
      created_at: now,
    })
    .execute();
  return token;
}

export const ADMIN_BEARER = `Bearer ${ADMIN_TOKEN}`;

/**
 * The stored state as text, table by table: every row of the tables that requests write (those with a
 * business_id, and businesses), and the row count of the others (the catalogue, migrations, locks);
 * not the access log.
 */
export class StoredState {
  readonly #t: TestApp;
  #tables: Array<{ name: string; rows: boolean }> | null = null;

  constructor(t: TestApp) {
    this.#t = t;
  }

  async snapshot(): Promise<Map<string, string>> {
    const storage = this.#t.ctx.storage;
    const db = storage.db;
    this.#tables ??= (await db.introspection.getTables())
      // The access log records every request on patient data, refused ones included (test/access-log/ tests it).
      .filter((table) => !table.name.startsWith('access_log'))
      .map((table) => ({ name: table.name, rows: table.name === 'businesses' || table.columns.some((column) => column.name === 'business_id') }))
      .sort((a, b) => a.name.localeCompare(b.name));
    const state = new Map<string, string>();
    if (storage.dialect === 'postgres') {
      // One round trip: every table's rows as sorted JSON text, or its count.
      const columns = this.#tables.map((table) =>
        table.rows
          ? sql`(select coalesce(string_agg(row_to_json(t)::text, E'\n' order by row_to_json(t)::text), '') from ${sql.table(table.name)} t) as ${sql.ref(table.name)}`
          : sql`(select count(*)::text || ' rows' from ${sql.table(table.name)}) as ${sql.ref(table.name)}`,
      );
      const result = await sql<Record<string, string>>`select ${sql.join(columns)}`.execute(db);
      for (const table of this.#tables) state.set(table.name, String(result.rows[0]?.[table.name]));
      return state;
    }
    for (const table of this.#tables) {
      if (table.rows) {
        const rows = await sql<Record<string, unknown>>`select * from ${sql.table(table.name)}`.execute(db);
        state.set(
          table.name,
          rows.rows
            .map((row) => JSON.stringify(row))
            .sort()
            .join('\n'),
        );
      } else {
        const count = await sql<{ n: number }>`select count(*) as n from ${sql.table(table.name)}`.execute(db);
        state.set(table.name, `${count.rows[0]?.n} rows`);
      }
    }
    return state;
  }
}

/** Names of the tables whose content differs. */
export function changedTables(before: Map<string, string>, after: Map<string, string>): string[] {
  return [...new Set([...before.keys(), ...after.keys()])].filter((name) => before.get(name) !== after.get(name));
}
