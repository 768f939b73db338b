/**
 * Scheduling (issue 19): 1,000 bookers at once on one slot, against the real server in child processes
 * (SQLite: one process; PostgreSQL: two processes on one database, the bookers alternating between
 * them). Each round opens a fresh slot of CAPACITY places and sends its 1,000 bookings together; it
 * checks that exactly CAPACITY succeed and the rest are 409 SLOT_UNAVAILABLE. Figures: the p50 and p99
 * latency of the successful bookings (the goal: p99 under 20 ms on SQLite, 50 ms on PostgreSQL) as the
 * client sees it and by the server's own clock (bench/server-timing.ts, preloaded into every server:
 * request received to response headers written), the p99 of every request of the burst and its wall
 * time; the baseline is a burst of the same size against the bare Fastify hello-world, in the same run,
 * with the same client, on both clocks. BENCH_SCHEDULING_PIN=1 puts the client and the servers on
 * separate cores; BENCH_SCHEDULING_ONLY=sqlite|postgres runs one database; BENCH_SCHEDULING_DUMP=file
 * writes every request's timings (one JSON line per round) for analysis; BENCH_SCHEDULING_CPU_PROF=dir
 * writes a V8 CPU profile of the first PostgreSQL server into dir (`node bench/cpu-profile-summary.ts dir`).
 * BENCH_SCHEDULING_BOOKERS=n sends n bookings a round instead of 1,000 (10: the winners alone, no refusals).
 *
 * Run alone: `BENCH_ONLY=scheduling node bench/run.ts`, or `node bench/scheduling.ts` (prints the figures).
 */
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Agent, request } from 'node:http';
import { cpuMeter, cpuNote, demoToken, machine, spawnServer, type CpuShares, type Figure, type RunningProcess } from './lib.ts';

const PG_BASE = process.env.CPS_BENCH_DATABASE_URL ?? process.env.CPS_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const BOOKERS = Number(process.env.BENCH_SCHEDULING_BOOKERS ?? 1000);
const CAPACITY = 10;
const ROUNDS = Number(process.env.BENCH_SCHEDULING_ROUNDS ?? 10);
const SLOT_SECONDS = 900;
/** Servers load the timing probe (bench/server-timing.ts). */
const PROBE = ['--import', path.resolve(import.meta.dirname, 'server-timing.ts')];
/** A file to write every request's timings to, one JSON line a round (for analysis). */
const DUMP = process.env.BENCH_SCHEDULING_DUMP;

/** Every burst shares one pool of keep-alive connections, so a round does not also measure TCP set-up. */
const agent = new Agent({ keepAlive: true, maxSockets: BOOKERS });

interface Timed {
  status: number;
  ms: number;
  code?: string;
  /** The client's instants (epoch ms): request created, response ended. */
  sentAt: number;
  endedAt: number;
  /** The server's own instants (bench/server-timing.ts): request received, handler started, headers written. */
  server?: { received: number; handler: number | null; sent: number };
}

const wallNow = () => performance.timeOrigin + performance.now();

/** The server's own time for a request (received to response headers written), in milliseconds. */
const serverMs = (r: Timed) => (r.server ? r.server.sent - r.server.received : Number.NaN);

/**
 * BENCH_SCHEDULING_PIN=1: the client (this process) runs on CPU 0 and the servers on CPU 1
 * (`taskset`), so the load generator and the service do not take each other's core; PostgreSQL
 * itself is not pinned.
 */
const PIN = process.env.BENCH_SCHEDULING_PIN === '1';

function pin(servers: RunningProcess[]): void {
  if (!PIN) return;
  execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
  for (const server of servers) execFileSync('taskset', ['-a', '-p', '-c', '1', String(server.child.pid)], { stdio: 'ignore' });
}

function serverTiming(header: string | string[] | undefined): Timed['server'] {
  if (typeof header !== 'string') return undefined;
  const [received, handler, sent] = header.split(',');
  return { received: Number(received), handler: handler ? Number(handler) : null, sent: Number(sent) };
}

function timed(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Timed> {
  const started = performance.now();
  const sentAt = wallNow();
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method ?? 'GET', headers: init.headers, agent }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => {
        const ms = performance.now() - started;
        const status = response.statusCode ?? 0;
        const code = status >= 400 ? (JSON.parse(text) as { error?: { code?: string } }).error?.code : undefined;
        const server = serverTiming(response.headers['x-bench-timing']);
        resolve({ status, ms, sentAt, endedAt: wallNow(), ...(code !== undefined && { code }), ...(server && { server }) });
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
async function helloBurst(): Promise<{ p50: number; p99: number; wall: number; serverP50: number; serverP99: number; cpu: CpuShares }> {
  const hello = await spawnServer('bench/hello-world.ts', [], {}, '/ready', PROBE);
  pin([hello]);
  try {
    const all: number[] = [];
    const server: number[] = [];
    let wall = 0;
    let meter = cpuMeter([hello.child.pid], { postgres: false });
    for (let round = 0; round <= ROUNDS; round++) {
      const started = performance.now();
      const results = await Promise.all(Array.from({ length: BOOKERS }, () => timed(`${hello.url}/`)));
      if (DUMP) appendFileSync(DUMP, `${JSON.stringify({ label: 'hello', round, results })}\n`);
      if (round === 0) {
        meter = cpuMeter([hello.child.pid], { postgres: false });
        continue; // warm-up: connections, JIT
      }
      wall += performance.now() - started;
      all.push(...results.map((r) => r.ms));
      server.push(...results.map(serverMs));
    }
    return {
      p50: percentile(all, 50),
      p99: percentile(all, 99),
      wall: wall / ROUNDS,
      serverP50: percentile(server, 50),
      serverP99: percentile(server, 99),
      cpu: meter.per(ROUNDS * BOOKERS),
    };
  } finally {
    await hello.stop();
  }
}

/** Seeds a doctor, a clinic and a schedule through `servers[0]`, then runs the rounds across `servers`. */
async function burstRounds(servers: RunningProcess[], token: string, usesPostgres: boolean) {
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
  const wonServer: number[] = [];
  const all: number[] = [];
  let wall = 0;
  const wrong: string[] = [];
  /** Per round, the latest place among the arrivals (by the servers' clocks) of a successful booking: 0 to 9 when the first ten won. */
  const lastWinnerArrival: number[] = [];
  const pids = servers.map((server) => server.child.pid);
  let meter = cpuMeter(pids, { postgres: usesPostgres });
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
    if (DUMP) appendFileSync(DUMP, `${JSON.stringify({ label: servers.length, round, results })}\n`);
    const booked = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status === 409 && r.code === 'SLOT_UNAVAILABLE');
    if (booked.length !== CAPACITY || refused.length !== BOOKERS - CAPACITY) {
      const counts = new Map<string, number>();
      for (const r of results)
        counts.set(`${r.status}${r.code ? ` ${r.code}` : ''}`, (counts.get(`${r.status}${r.code ? ` ${r.code}` : ''}`) ?? 0) + 1);
      wrong.push(`round ${round}: ${[...counts].map(([k, n]) => `${n} × ${k}`).join(', ')}`);
    }
    if (round === 0) {
      meter = cpuMeter(pids, { postgres: usesPostgres });
      continue;
    }
    wall += elapsed;
    won.push(...booked.map((r) => r.ms));
    wonServer.push(...booked.map(serverMs));
    all.push(...results.map((r) => r.ms));
    const arrivals = results.map((r) => r.server?.received ?? Number.POSITIVE_INFINITY).sort((a, b) => a - b);
    lastWinnerArrival.push(Math.max(...booked.map((r) => arrivals.indexOf(r.server?.received ?? Number.NaN))));
  }
  return { won, wonServer, all, wall: wall / ROUNDS, wrong, lastWinnerArrival, cpu: meter.per(ROUNDS * BOOKERS) };
}

function figuresOf(
  label: string,
  goalMs: number,
  result: Awaited<ReturnType<typeof burstRounds>>,
  hello: Awaited<ReturnType<typeof helloBurst>>,
): Figure[] {
  const p99 = percentile(result.won, 99);
  const serverP99 = percentile(result.wonServer, 99);
  return [
    {
      name: `booking p99, successful bookings, ${BOOKERS} bookers at once on one slot of ${CAPACITY} places (${label})`,
      value: ms(p99),
      unit: 'ms',
      note:
        `goal < ${goalMs} ms: ${p99 < goalMs ? 'met' : 'not met'}; p50 ${ms(percentile(result.won, 50))} ms over ${result.won.length} bookings in ${ROUNDS} rounds; ` +
        `every request of the burst p99 ${ms(percentile(result.all, 99))} ms, burst ${ms(result.wall)} ms (hello-world burst p99 ${ms(hello.p99)} ms, ${ms(hello.wall)} ms); ` +
        `${result.wrong.length === 0 ? `every round exactly ${CAPACITY} booked and ${BOOKERS - CAPACITY} refused (409 SLOT_UNAVAILABLE)` : `NOT ${CAPACITY} booked and ${BOOKERS - CAPACITY} refused in ${result.wrong.join('; ')}`}`,
    },
    {
      name: `booking p99 by the server's clock, successful bookings, ${BOOKERS} bookers at once on one slot of ${CAPACITY} places (${label})`,
      value: ms(serverP99),
      unit: 'ms',
      note:
        `goal < ${goalMs} ms: ${serverP99 < goalMs ? 'met' : 'not met'}; request received to response headers written (bench/server-timing.ts); p50 ${ms(percentile(result.wonServer, 50))} ms; ` +
        `the rest of the client's ${ms(p99)} ms is the client's and the kernel's (hello-world burst by the server's clock: p50 ${ms(hello.serverP50)} ms, p99 ${ms(hello.serverP99)} ms); ` +
        `the winners were among the first ${Math.max(...result.lastWinnerArrival) + 1} requests to arrive in every round (by the servers' clocks)`,
    },
    {
      name: `${BOOKERS}-booking burst on one slot, wall time per booking request (${label})`,
      value: ms(result.wall / BOOKERS),
      unit: 'ms',
      ratio: Math.round((hello.wall / result.wall) * 1000) / 1000,
      note: `ratio: the hello-world burst’s wall time over this one’s; ${cpuNote(result.cpu, 'booking request', 'client')} (the hello-world burst: ${cpuNote(hello.cpu, 'request', 'client')})`,
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

class Skip extends Error {}

export async function runSchedulingBench(_ctx: { helloWorldRps: number }): Promise<Figure[]> {
  const hello = await helloBurst();
  const figures: Figure[] = [
    {
      name: `hello-world, ${BOOKERS} GETs at once (baseline of this section, same client)`,
      value: ms(hello.p99),
      unit: 'ms',
      note: `p99 of every request as the client sees it; p50 ${ms(hello.p50)} ms; burst ${ms(hello.wall)} ms; by the server's clock p50 ${ms(hello.serverP50)} ms, p99 ${ms(hello.serverP99)} ms; ${PIN ? 'client on CPU 0, servers on CPU 1; ' : ''}${machine()}`,
    },
  ];

  const only = process.env.BENCH_SCHEDULING_ONLY; // 'sqlite' or 'postgres' to run one of the two
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-scheduling-'));
  try {
    if (only === 'postgres') throw new Skip();
    const server = await spawnServer('bin/cps.js', ['serve'], serviceEnv(dataDir), '/ready', PROBE);
    pin([server]);
    try {
      figures.push(...figuresOf('SQLite, 1 process', 20, await burstRounds([server], await demoToken(server.url, dataDir), false), hello));
    } finally {
      await server.stop();
    }
  } catch (error) {
    if (!(error instanceof Skip)) throw error;
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  if (only === 'sqlite') return figures;

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
    const profileDir = process.env.BENCH_SCHEDULING_CPU_PROF;
    const profile = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(profileDir)}`] : [];
    servers.push(await spawnServer('bin/cps.js', ['serve'], env, '/ready', [...PROBE, ...profile]));
    servers.push(await spawnServer('bin/cps.js', ['serve'], env, '/ready', PROBE));
    pin(servers);
    const token = await demoToken(servers[0]!.url, pgDataDir);
    figures.push(...figuresOf('PostgreSQL, 2 processes', 50, await burstRounds(servers, token, true), hello));
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
