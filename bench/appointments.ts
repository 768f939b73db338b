/**
 * Appointments: GET and PATCH of the record, and bookings without and with an Idempotency-Key (fresh
 * keys, and one key replayed), on SQLite and on PostgreSQL (a fresh database), against
 * the real server in a child process, loaded with autocannon. The load spreads over 50 appointments,
 * as a practice's traffic does; one hot appointment would measure only its row lock (every PATCH
 * locks the appointment and, on PostgreSQL, waits for the previous commit's fsync).
 *
 * PostgreSQL comes from CPS_BENCH_DATABASE_URL, else CPS_TEST_DATABASE_URL, else the local default;
 * when it cannot be reached its figures are skipped with a note.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { demoToken, spawnServer, type Figure } from './lib.ts';

const PG_BASE = process.env.CPS_BENCH_DATABASE_URL ?? process.env.CPS_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const APPOINTMENTS = 50;
const CONNECTIONS = 50;

async function json(url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<Record<string, unknown>> {
  const response = await fetch(url, {
    method: init.method ?? 'GET',
    headers: { 'content-type': 'application/json', ...init.headers },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const body = (await response.json()) as Record<string, unknown>;
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${response.status} ${JSON.stringify(body)}`);
  return body;
}

/** The body of every PATCH of the loads: four fields, one of them the patient's details. */
export const PATCH_BODY = {
  token: 3,
  display_meta: { visit_type: 'Follow up', fee: 500 },
  partner_meta: { source: 'bench', n: 1 },
  patient_details: { last_name: 'Sharma' },
};

/**
 * The demo business logs in, registers a doctor in a clinic and books APPOINTMENTS appointments;
 * `beforeBookings` runs between the two (the PostgreSQL bench counts the bookings' statements).
 */
export async function seed(
  base: string,
  dataDir: string,
  beforeBookings?: () => Promise<void>,
): Promise<{ token: string; appointmentIds: string[]; clinicId: string; doctorId: string }> {
  const auth = { auth: await demoToken(base, dataDir) };
  const doctor = await json(`${base}/cdr/v1/doctor/`, {
    method: 'POST',
    headers: auth,
    body: { firstname: 'Asha', lastname: 'Rao', partner_id: 'd1' },
  });
  const clinic = await json(`${base}/cdr/v1/clinic/`, {
    method: 'POST',
    headers: auth,
    body: { name: 'Bench', address: '1 Road', doctor_ids: [doctor.svcid] },
  });
  await beforeBookings?.();
  const appointmentIds: string[] = [];
  for (let i = 0; i < APPOINTMENTS; i++) {
    const start = Math.floor(Date.now() / 1000) + 86_400 + i * 900;
    const booked = await json(`${base}/dr/v1/appointment`, {
      method: 'POST',
      headers: auth,
      body: {
        clinic_id: clinic.svcid,
        doctor_id: doctor.svcid,
        partner_appointment_id: `bench-${i}`,
        appointment_details: { start_time: start, end_time: start + 900 },
        patient_details: {
          first_name: 'Ravi',
          last_name: 'Kumar',
          mobile: '+919812345678',
          gender: 'M',
          dob: '1990-04-01',
          partner_patient_id: `p${i}`,
        },
        partner_meta: { source: 'bench' },
        display_meta: { visit_type: 'Follow up' },
      },
    });
    appointmentIds.push(String(booked.appointment_id));
  }
  return { token: auth.auth, appointmentIds, clinicId: String(clinic.svcid), doctorId: String(doctor.svcid) };
}

/** Each request goes to the next of `paths` in turn. */
async function load(base: string, paths: string[], method: 'GET' | 'PATCH', token: string, body?: unknown) {
  let next = 0;
  const run = (duration: number) =>
    autocannon({
      url: `${base}${paths[0]}`,
      method,
      connections: CONNECTIONS,
      duration,
      headers: { auth: token, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      requests: [{ setupRequest: (request) => ({ ...request, path: paths[next++ % paths.length]! }) }],
    });
  await run(1); // warm-up: JIT, prepared statements, the pool
  return run(Number(process.env.BENCH_SECONDS ?? 10));
}

/**
 * Bookings under load, each in a slot and with a partner id of its own: without a key, with a fresh
 * Idempotency-Key per request (the claim and the stored response on top of the booking), or with one
 * key for every request (each a replay of the first answer).
 */
let bookings = 0;
async function loadBookings(base: string, token: string, clinicId: string, doctorId: string, keys: 'none' | 'fresh' | 'one') {
  const day = Math.floor(Date.now() / 1000) + 30 * 86_400;
  const fixedKey = `bench-replay-${randomBytes(4).toString('hex')}`;
  const body = (n: number) => ({
    clinic_id: clinicId,
    doctor_id: doctorId,
    partner_appointment_id: `bench-load-${n}`,
    appointment_details: { start_time: day + n * 900, end_time: day + n * 900 + 900 },
    patient_details: {
      first_name: 'Ravi',
      last_name: 'Kumar',
      mobile: '+919812345678',
      gender: 'M',
      dob: '1990-04-01',
      partner_patient_id: `lp${n % 50}`,
    },
    partner_meta: { source: 'bench' },
  });
  const run = (duration: number) =>
    autocannon({
      url: `${base}/dr/v1/appointment`,
      method: 'POST',
      connections: CONNECTIONS,
      duration,
      headers: { auth: token, 'content-type': 'application/json' },
      requests: [
        {
          setupRequest: (request) => {
            const n = ++bookings;
            const key = keys === 'fresh' ? { 'idempotency-key': `bench-${n}` } : keys === 'one' ? { 'idempotency-key': fixedKey } : {};
            // A replay is the same request each time: the same body with the one key.
            return { ...request, headers: { ...request.headers, ...key }, body: JSON.stringify(body(keys === 'one' ? 0 : n)) };
          },
        },
      ],
    });
  await run(1);
  return run(Number(process.env.BENCH_SECONDS ?? 10));
}

async function benchOne(label: string, env: Record<string, string>, dataDir: string, helloWorldRps: number): Promise<Figure[]> {
  const server = await spawnServer('bin/cps.js', ['serve'], { CPS_DATA_DIR: dataDir, CPS_WORKERS: '0', ...env });
  try {
    const { token, appointmentIds, clinicId, doctorId } = await seed(server.url, dataDir);
    const paths = appointmentIds.map((id) => `/dr/v1/appointment/${id}`);
    const get = await load(server.url, paths, 'GET', token);
    const patch = await load(server.url, paths, 'PATCH', token, PATCH_BODY);
    const book = await loadBookings(server.url, token, clinicId, doctorId, 'none');
    const bookKeyed = await loadBookings(server.url, token, clinicId, doctorId, 'fresh');
    const bookReplayed = await loadBookings(server.url, token, clinicId, doctorId, 'one');
    return (
      [
        ['GET /dr/v1/appointment/{id}', get],
        ['PATCH /dr/v1/appointment/{id}', patch],
        ['POST /dr/v1/appointment (booking, no key)', book],
        ['POST /dr/v1/appointment (booking, a fresh Idempotency-Key each)', bookKeyed],
        ['POST /dr/v1/appointment (booking, one Idempotency-Key: replays)', bookReplayed],
      ] as const
    ).map(([operation, result]) => {
      const failed = result.non2xx + result.errors;
      return {
        name: `${operation} (${label})`,
        value: Math.round(result.requests.average),
        unit: 'req/s',
        ratio: Math.round((result.requests.average / helloWorldRps) * 1000) / 1000,
        note: `p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms${operation.startsWith('POST') ? '' : `, over ${APPOINTMENTS} appointments`}${failed > 0 ? `, ${failed} failed` : ''}`,
      };
    });
  } finally {
    await server.stop();
  }
}

export async function runAppointmentsBench(ctx: { helloWorldRps: number }): Promise<Figure[]> {
  const figures: Figure[] = [];
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-appointments-'));
  try {
    figures.push(...(await benchOne('SQLite', {}, dataDir, ctx.helloWorldRps)));
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }

  const admin = new pg.Client({ connectionString: PG_BASE });
  try {
    await admin.connect();
  } catch (error) {
    figures.push({
      name: 'appointments on PostgreSQL',
      value: 0,
      unit: 'req/s',
      note: `skipped: PostgreSQL unreachable (${(error as Error).message})`,
    });
    return figures;
  }
  const name = `cps_bench_${randomBytes(6).toString('hex')}`;
  const pgDataDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-appointments-'));
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(PG_BASE);
    url.pathname = `/${name}`;
    figures.push(...(await benchOne('PostgreSQL', { DATABASE_URL: url.toString() }, pgDataDir, ctx.helloWorldRps)));
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await admin.end();
    rmSync(pgDataDir, { recursive: true, force: true });
  }
  return figures;
}
