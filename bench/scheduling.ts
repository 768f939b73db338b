/**
 * Scheduling (issue 19): 1,000 bookers at once on one slot, against the real server in child processes
 * (SQLite: one process; PostgreSQL: two processes on one database, the bookers alternating between
 * them). Each round opens a fresh slot of CAPACITY places and sends its 1,000 bookings together; it
 * checks that exactly CAPACITY succeed and the rest are 409 SLOT_UNAVAILABLE. Figures: the p50 and p99
 * latency of the successful bookings (the goal: p99 under 20 ms on SQLite, 50 ms on PostgreSQL), the
 * p99 of every request of the burst and its wall time; the baseline is a burst of the same size against
 * the bare Fastify hello-world, in the same run, with the same client.
 *
 * Run alone: `BENCH_ONLY=scheduling node bench/run.ts`, or `node bench/scheduling.ts` (prints the figures).
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Agent, request } from 'node:http';
import { demoToken, machine, spawnServer, type Figure, type RunningProcess } from './lib.ts';

const PG_BASE = process.env.CPS_BENCH_DATABASE_URL ?? process.env.CPS_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const BOOKERS = 1000;
const CAPACITY = 10;
const ROUNDS = Number(process.env.BENCH_SCHEDULING_ROUNDS ?? 10);
const SLOT_SECONDS = 900;

/** Every burst shares one pool of keep-alive connections, so a round does not also measure TCP set-up. */
const agent = new Agent({ keepAlive: true, maxSockets: BOOKERS });

interface Timed {
  status: number;
  ms: number;
  code?: string;
}

function timed(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Timed> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method ?? 'GET', headers: init.headers, agent }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => {
        const ms = performance.now() - started;
        const status = response.statusCode ?? 0;
        const code = status >= 400 ? (JSON.parse(text) as { error?: { code?: string } }).error?.code : undefined;
        resolve({ status, ms, ...(code !== undefined && { code }) });
      });
    });
    req.once('error', reject);
    req.end(init.body);
  });
}

async function json(url: string, method: string, token: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(url, {
    method,
    headers: { auth: token, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const parsed = (await response.json()) as Record<string, unknown>;
  if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${JSON.stringify(parsed)}`);
  return parsed;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
};
const ms = (value: number) => Math.round(value * 10) / 10;

/** A burst of BOOKERS GETs against the hello-world: what 1,000 requests at once cost this client and machine. */
async function helloBurst(): Promise<{ p50: number; p99: number; wall: number }> {
  const hello = await spawnServer('bench/hello-world.ts', [], {}, '/ready');
  try {
    const all: number[] = [];
    let wall = 0;
    for (let round = 0; round <= ROUNDS; round++) {
      const started = performance.now();
      const results = await Promise.all(Array.from({ length: BOOKERS }, () => timed(`${hello.url}/`)));
      if (round === 0) continue; // warm-up: connections, JIT
      wall += performance.now() - started;
      all.push(...results.map((r) => r.ms));
    }
    return { p50: percentile(all, 50), p99: percentile(all, 99), wall: wall / ROUNDS };
  } finally {
    await hello.stop();
  }
}

/** Seeds a doctor, a clinic and a schedule through `servers[0]`, then runs the rounds across `servers`. */
async function burstRounds(servers: RunningProcess[], token: string) {
  const base = servers[0]!.url;
  const doctor = await json(`${base}/cdr/v1/doctor/`, 'POST', token, { firstname: 'Asha', lastname: 'Rao' });
  const clinic = await json(`${base}/cdr/v1/clinic/`, 'POST', token, { name: 'Bench', address: '1 Road', doctor_ids: [doctor.svcid] });
  const days = ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'];
  await json(`${base}/cdr/v1/doctor/${doctor.svcid}/clinic/${clinic.svcid}/schedule`, 'PUT', token, {
    timezone: 'Asia/Kolkata',
    slot_minutes: SLOT_SECONDS / 60,
    capacity: CAPACITY,
    sessions: [{ days, start: '08:00', end: '20:00' }],
  });
  // The slots of a day well ahead, one per round (and one for the warm-up).
  const first = Date.parse('2031-01-06T02:30:00Z') / 1000; // 08:00 IST
  const won: number[] = [];
  const all: number[] = [];
  let wall = 0;
  let wrong = 0;
  for (let round = 0; round <= ROUNDS; round++) {
    const start = first + round * SLOT_SECONDS;
    const body = (i: number) =>
      JSON.stringify({
        clinic_id: clinic.svcid,
        doctor_id: doctor.svcid,
        appointment_details: { start_time: start, end_time: start + SLOT_SECONDS },
        patient_details: {
          first_name: `B${i}`,
          mobile: `+9198${String(round * BOOKERS + i).padStart(8, '0')}`,
          partner_patient_id: `b-${round}-${i}`,
        },
      });
    const bodies = Array.from({ length: BOOKERS }, (_, i) => body(i));
    const started = performance.now();
    const results = await Promise.all(
      bodies.map((payload, i) =>
        timed(`${servers[i % servers.length]!.url}/dr/v1/appointment`, {
          method: 'POST',
          headers: { auth: token, 'content-type': 'application/json' },
          body: payload,
        }),
      ),
    );
    const elapsed = performance.now() - started;
    const booked = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status === 409 && r.code === 'SLOT_UNAVAILABLE');
    if (booked.length !== CAPACITY || refused.length !== BOOKERS - CAPACITY) wrong++;
    if (round === 0) continue;
    wall += elapsed;
    won.push(...booked.map((r) => r.ms));
    all.push(...results.map((r) => r.ms));
  }
  return { won, all, wall: wall / ROUNDS, wrong };
}

function figuresOf(label: string, goalMs: number, result: Awaited<ReturnType<typeof burstRounds>>, hello: { p99: number; wall: number }): Figure[] {
  const p99 = percentile(result.won, 99);
  return [
    {
      name: `booking p99, successful bookings, ${BOOKERS} bookers at once on one slot of ${CAPACITY} places (${label})`,
      value: ms(p99),
      unit: 'ms',
      note:
        `goal < ${goalMs} ms: ${p99 < goalMs ? 'met' : 'not met'}; p50 ${ms(percentile(result.won, 50))} ms over ${result.won.length} bookings in ${ROUNDS} rounds; ` +
        `every request of the burst p99 ${ms(percentile(result.all, 99))} ms, burst ${ms(result.wall)} ms (hello-world burst p99 ${ms(hello.p99)} ms, ${ms(hello.wall)} ms); ` +
        `${result.wrong === 0 ? `every round exactly ${CAPACITY} booked and ${BOOKERS - CAPACITY} refused (409 SLOT_UNAVAILABLE)` : `${result.wrong} rounds WRONG`}`,
    },
    {
      name: `${BOOKERS}-booking burst on one slot, wall time per booking request (${label})`,
      value: ms(result.wall / BOOKERS),
      unit: 'ms',
      ratio: Math.round((hello.wall / result.wall) * 1000) / 1000,
      note: 'ratio: the hello-world burst’s wall time over this one’s',
    },
  ];
}

const serviceEnv = (dataDir: string) => ({
  CPS_DATA_DIR: dataDir,
  CPS_WORKERS: '0',
  CPS_PUBLIC_URL: 'http://cps.bench',
  CPS_MASTER_KEY: randomBytes(32).toString('base64'),
  CPS_JWT_PRIVATE_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
});

export async function runSchedulingBench(_ctx: { helloWorldRps: number }): Promise<Figure[]> {
  const hello = await helloBurst();
  const figures: Figure[] = [
    {
      name: `hello-world, ${BOOKERS} GETs at once (baseline of this section, same client)`,
      value: ms(hello.p99),
      unit: 'ms',
      note: `p99 of every request; p50 ${ms(hello.p50)} ms; burst ${ms(hello.wall)} ms; ${machine()}`,
    },
  ];

  const dataDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-scheduling-'));
  try {
    const server = await spawnServer('bin/cps.js', ['serve'], serviceEnv(dataDir));
    try {
      figures.push(...figuresOf('SQLite, 1 process', 20, await burstRounds([server], await demoToken(server.url, dataDir)), hello));
    } finally {
      await server.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }

  const admin = new pg.Client({ connectionString: PG_BASE });
  try {
    await admin.connect();
  } catch (error) {
    figures.push({ name: 'scheduling on PostgreSQL', value: 0, unit: 'ms', note: `skipped: PostgreSQL unreachable (${(error as Error).message})` });
    return figures;
  }
  const name = `cps_bench_${randomBytes(6).toString('hex')}`;
  const pgDataDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-scheduling-'));
  const servers: RunningProcess[] = [];
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(PG_BASE);
    url.pathname = `/${name}`;
    const env = { ...serviceEnv(pgDataDir), DATABASE_URL: url.toString() };
    servers.push(await spawnServer('bin/cps.js', ['serve'], env));
    servers.push(await spawnServer('bin/cps.js', ['serve'], env));
    const token = await demoToken(servers[0]!.url, pgDataDir);
    figures.push(...figuresOf('PostgreSQL, 2 processes', 50, await burstRounds(servers, token), hello));
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await admin.end();
    rmSync(pgDataDir, { recursive: true, force: true });
  }
  return figures;
}

if (import.meta.main) {
  for (const figure of await runSchedulingBench({ helloWorldRps: 0 })) process.stdout.write(`${JSON.stringify(figure)}\n`);
  agent.destroy();
}
