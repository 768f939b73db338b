/**
 * Appointment throughput: GET and PATCH spread over 50 appointments, on SQLite and on PostgreSQL (a fresh
 * database each), against the real server started as a child process on port 0, loaded with
 * autocannon from this process. Reported as requests/s and as a ratio to the hello-world figure.
 *
 * PostgreSQL comes from CPS_BENCH_DATABASE_URL, else CPS_TEST_DATABASE_URL, else the local default;
 * when it cannot be reached its figures are skipped with a note. BENCH_DURATION (seconds, default 5)
 * and BENCH_CONNECTIONS (default 10) tune the load.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';

export interface BenchResult { name: string; value: number; unit: string; note?: string }

interface AutocannonResult {
  requests: { average: number };
  latency: { p99: number };
  non2xx: number;
  errors: number;
}
type Autocannon = (options: {
  url: string; method: string; headers: Record<string, string>; body?: string; connections: number; duration: number;
  requests?: Array<{ setupRequest: (request: { path: string }) => { path: string } }>;
}) => Promise<AutocannonResult>;

// autocannon is CommonJS without type declarations.
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ADMIN_TOKEN = `bench-admin-${randomBytes(12).toString('hex')}`;
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const PG_BASE = process.env.CPS_BENCH_DATABASE_URL ?? process.env.CPS_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** The child: the real server (migrations, every module) with quiet logs, printing its address once listening. */
const CHILD = `
const { loadConfig } = await import(${JSON.stringify(pathToFileURL(path.join(ROOT, 'src/config.ts')).href)});
const { startServer, closeOnSignals } = await import(${JSON.stringify(pathToFileURL(path.join(ROOT, 'src/server.ts')).href)});
const { createLogger } = await import(${JSON.stringify(pathToFileURL(path.join(ROOT, 'src/logger.ts')).href)});
const config = loadConfig(process.env);
const logger = createLogger(config.logLevel);
const server = await startServer(config, logger);
closeOnSignals(server, logger, 5);
process.stdout.write(JSON.stringify({ url: server.url }) + '\\n');
`;

interface Server { url: string; child: ChildProcess }

async function startChild(env: Record<string, string>): Promise<Server> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', CPS_ENV: 'development', CPS_ADMIN_TOKEN: ADMIN_TOKEN, CPS_WORKERS: '0', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the server exited (${code}) before listening`)));
    lines.on('line', (line) => {
      try {
        const parsed = JSON.parse(line) as { url?: string };
        if (parsed.url) resolve(parsed.url);
      } catch { /* not ours */ }
    });
  });
  return { url, child };
}

async function stopChild(server: Server): Promise<void> {
  if (server.child.exitCode !== null) return;
  const exited = new Promise((resolve) => server.child.once('exit', resolve));
  server.child.kill('SIGTERM');
  await exited;
}

async function json(url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown }): Promise<Record<string, unknown>> {
  const response = await fetch(url, {
    method: init.method ?? 'GET',
    headers: { 'content-type': 'application/json', ...init.headers },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const body = await response.json() as Record<string, unknown>;
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${response.status} ${JSON.stringify(body)}`);
  return body;
}

const APPOINTMENTS = 50;

/** A business, a doctor in a clinic and APPOINTMENTS booked appointments; answers the token and their ids. */
async function seed(base: string): Promise<{ token: string; appointmentIds: string[] }> {
  const business = await json(`${base}/admin/v1/businesses`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: { name: 'Bench Clinic' } });
  const login = await json(`${base}/connect-auth/v1/account/login`, { method: 'POST', body: { client_id: business.client_id, client_secret: business.client_secret } });
  const auth = { auth: String(login.access_token) };
  const doctor = await json(`${base}/cdr/v1/doctor/`, { method: 'POST', headers: auth, body: { firstname: 'Asha', lastname: 'Rao', partner_id: 'd1' } });
  const clinic = await json(`${base}/cdr/v1/clinic/`, { method: 'POST', headers: auth, body: { name: 'Bench', address: '1 Road', doctor_ids: [doctor.svcid] } });
  const appointmentIds: string[] = [];
  for (let i = 0; i < APPOINTMENTS; i++) {
    const start = Math.floor(Date.now() / 1000) + 86_400 + i * 900;
    const booked = await json(`${base}/dr/v1/appointment`, {
      method: 'POST', headers: auth,
      body: {
        clinic_id: clinic.svcid, doctor_id: doctor.svcid, partner_appointment_id: `bench-${i}`,
        appointment_details: { start_time: start, end_time: start + 900 },
        patient_details: { first_name: 'Ravi', last_name: 'Kumar', mobile: '+919812345678', gender: 'M', dob: '1990-04-01', partner_patient_id: `p${i}` },
        partner_meta: { source: 'bench' }, display_meta: { visit_type: 'Follow up' },
      },
    });
    appointmentIds.push(String(booked.appointment_id));
  }
  return { token: String(login.access_token), appointmentIds };
}

/** Each request goes to the next of `paths` in turn, as a practice's traffic spreads over its appointments. */
async function load(base: string, paths: string[], method: string, token: string, body?: unknown): Promise<AutocannonResult> {
  let next = 0;
  const options = {
    url: `${base}${paths[0]}`, method, connections: CONNECTIONS,
    headers: { auth: token, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    requests: [{ setupRequest: (request: { path: string }) => ({ ...request, path: paths[next++ % paths.length]! }) }],
  };
  await autocannon({ ...options, duration: 1 }); // warm-up: JIT, statement caches, pool
  return autocannon({ ...options, duration: DURATION });
}

async function benchOne(label: string, env: Record<string, string>, helloWorldRps: number): Promise<BenchResult[]> {
  const server = await startChild(env);
  try {
    const { token, appointmentIds } = await seed(server.url);
    const paths = appointmentIds.map((id) => `/dr/v1/appointment/${id}`);
    const get = await load(server.url, paths, 'GET', token);
    const patch = await load(server.url, paths, 'PATCH', token, {
      token: 3, display_meta: { visit_type: 'Follow up', fee: 500 }, partner_meta: { source: 'bench', n: 1 }, patient_details: { last_name: 'Sharma' },
    });
    const results: BenchResult[] = [];
    for (const [operation, result] of [['GET', get], ['PATCH', patch]] as const) {
      const failures = result.non2xx + result.errors;
      const rps = Math.round(result.requests.average);
      results.push({
        name: `appointment ${operation} (${label})`,
        value: rps,
        unit: 'req/s',
        note: `p99 ${result.latency.p99} ms, ${CONNECTIONS} connections over ${APPOINTMENTS} appointments, ${DURATION} s${failures > 0 ? `, ${failures} failed requests` : ''}`,
      });
      if (helloWorldRps > 0) {
        results.push({ name: `appointment ${operation} / hello-world (${label})`, value: Math.round((rps / helloWorldRps) * 1000) / 1000, unit: 'ratio' });
      }
    }
    return results;
  } finally {
    await stopChild(server);
  }
}

export async function runAppointmentsBench(ctx: { helloWorldRps: number }): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-appointments-'));
  try {
    results.push(...await benchOne('sqlite', { CPS_DATA_DIR: dataDir }, ctx.helloWorldRps));
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }

  const name = `cps_bench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_BASE });
  try {
    await admin.connect();
  } catch (error) {
    results.push({ name: 'appointment GET/PATCH (postgres)', value: 0, unit: 'req/s', note: `skipped: PostgreSQL unreachable (${(error as Error).message})` });
    return results;
  }
  const pgDataDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-appointments-'));
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(PG_BASE);
    url.pathname = `/${name}`;
    results.push(...await benchOne('postgres', { CPS_DATA_DIR: pgDataDir, DATABASE_URL: url.toString() }, ctx.helloWorldRps));
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await admin.end();
    rmSync(pgDataDir, { recursive: true, force: true });
  }
  return results;
}

// Run on its own: node bench/appointments.ts [helloWorldRps]
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const results = await runAppointmentsBench({ helloWorldRps: Number(process.argv[2] ?? 0) });
  for (const result of results) console.log(`${result.name}: ${result.value} ${result.unit}${result.note ? ` (${result.note})` : ''}`);
}
