/**
 * Webhook deliveries per second to a local receiver that answers 200 at once: events are recorded
 * straight into the database (as a completion's transaction would), and the clock runs from the
 * first event stored to the last delivery received. One server process on SQLite; two on PostgreSQL
 * (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres; skipped if unreachable).
 *
 * Then, on the same servers with the queue drained, the time from an event's commit to its receipt
 * while the queue is not backlogged: BENCH_WEBHOOK_RATE review requests a second (default 100; 0 skips it),
 * through the servers' API (each stores its event in its own transaction and wakes the workers of
 * its process, as a completion does), for BENCH_SECONDS. On PostgreSQL the throughput run also counts
 * the statements per delivery (pg_stat_statements) and the pool's waits (pg-probe.ts).
 * Goals (issue 18): >= 2,000/s on PostgreSQL with two processes, >= 3,000/s on SQLite, p99 < 1 s.
 * The throughput note gives the CPU time per delivery of the servers, PostgreSQL, the bench process
 * and the machine (Linux: /proc), which a machine shared with other work changes less than the rate.
 * BENCH_WEBHOOK_CPU_PROF=dir: each server writes a V8 CPU profile into dir/sqlite or dir/postgres
 * (summarise with `node bench/cpu-profile-summary.ts dir/sqlite`).
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { inTransaction, openStorage, type Storage } from '../src/db/index.ts';
import { recordEvent } from '../src/jobs/outbox.ts';
import { cpuMeter, cpuNote, spawnServer, type Figure } from './lib.ts';
import { PROBE, StatementCounter, perUnit, probeNote, readProbe } from './pg-stats.ts';

const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 2000);
const RATE = Number(process.env.BENCH_WEBHOOK_RATE ?? 100);
const ADMIN_TOKEN = `bench-admin-${randomBytes(12).toString('hex')}`;

async function startReceiver() {
  /** Event id (webhook-id) -> when its first delivery arrived. */
  const received = new Map<string, number>();
  let requests = 0;
  let last = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests++;
      last = performance.now();
      const id = String(req.headers['webhook-id']);
      if (!received.has(id)) received.set(id, last);
      res.writeHead(200);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    requests: () => requests,
    last: () => last,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

async function post(url: string, body: unknown, token?: string): Promise<any> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`);
  return response.json();
}

function reviewEvent(businessId: string, clientId: string, n: number) {
  const now = Math.floor(Date.now() / 1000);
  return {
    businessId,
    type: 'external_review.request' as const,
    payload: {
      event: 'external_review.request' as const,
      event_time: now,
      timestamp: now,
      client_id: clientId,
      business_id: businessId,
      data: {
        doctor_id: 'doc_b',
        external_review_link: `https://cps.test/reviews/${n}`,
        patient_id: 'pat_b',
        appointment_id: `apt_${n}`,
        clinic_id: 'cli_b',
      },
    },
  };
}

async function waitFor(receiver: Receiver, count: number): Promise<void> {
  const deadline = Date.now() + 300_000;
  while (receiver.received.size < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
}

/**
 * RATE review requests a second for BENCH_SECONDS, through the servers in turn (each stores an event
 * in its transaction, as a completion does, and wakes its own workers); milliseconds from each 202
 * (the event committed) to the event's first receipt.
 */
async function latency(origins: string[], receiver: Receiver, token: string, appointmentId: string) {
  const count = Math.max(1, Math.round(RATE * Number(process.env.BENCH_SECONDS ?? 10)));
  const before = receiver.received.size;
  const committed = new Map<string, number>();
  const started = performance.now();
  const writes: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const due = started + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    writes.push(
      post(`${origins[i % origins.length]}/dr/v1/appointment/${appointmentId}/review-request`, {}, token).then((body: { event_id: string }) => {
        committed.set(body.event_id, performance.now());
      }),
    );
  }
  await Promise.all(writes);
  await waitFor(receiver, before + count);
  const times = [...committed].map(([id, at]) => (receiver.received.get(id) ?? Number.POSITIVE_INFINITY) - at).sort((x, y) => x - y);
  const at = (q: number) => Math.round(times[Math.min(times.length - 1, Math.floor(q * times.length))]!);
  return { count, p50: at(0.5), p99: at(0.99), max: at(1), lost: times.filter((t) => t === Number.POSITIVE_INFINITY).length };
}

/** A doctor in a clinic and one appointment of the business, for the review requests. */
async function oneAppointment(origin: string, token: string): Promise<string> {
  const doctor = await post(`${origin}/cdr/v1/doctor/`, { firstname: 'Asha', lastname: 'Rao', partner_id: 'd1' }, token);
  const clinic = await post(`${origin}/cdr/v1/clinic/`, { name: 'Bench', address: '1 Road', doctor_ids: [doctor.svcid] }, token);
  const start = Math.floor(Date.now() / 1000) + 86_400;
  const booked = await post(
    `${origin}/dr/v1/appointment`,
    {
      clinic_id: clinic.svcid,
      doctor_id: doctor.svcid,
      appointment_details: { start_time: start, end_time: start + 900 },
      patient_details: { first_name: 'Ravi', last_name: 'Kumar', mobile: '+919812345678', gender: 'M', dob: '1990-04-01', partner_patient_id: 'p1' },
    },
    token,
  );
  return String(booked.appointment_id);
}

/**
 * Runs one scenario: `processes` servers on the database, EVENTS events, until all are delivered;
 * then the latency run. `stats` (PostgreSQL) counts the throughput run's statements.
 */
async function scenario(env: Record<string, string>, databaseUrl: string | null, dataDir: string, processes: number, stats: StatementCounter | null) {
  const receiver = await startReceiver();
  const servers = [];
  const probeDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-probe-'));
  const profileDir = process.env.BENCH_WEBHOOK_CPU_PROF;
  const profile = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(profileDir, databaseUrl ? 'postgres' : 'sqlite')}`] : [];
  for (let i = 0; i < processes; i++) {
    servers.push(
      await spawnServer('bin/cps.js', ['serve'], { ...env, CPS_BENCH_PROBE_FILE: path.join(probeDir, `${i}.json`) }, '/ready', [
        ...(databaseUrl ? PROBE : []),
        ...profile,
      ]),
    );
  }
  const writers = databaseUrl ? 4 : 1;
  const storage = openStorage({ databaseUrl, dataDir, poolSize: writers + 1 });
  try {
    const business = await post(`${servers[0]!.url}/admin/v1/businesses`, { name: 'Bench Clinic' }, ADMIN_TOKEN);
    const login = await post(`${servers[0]!.url}/connect-auth/v1/account/login`, {
      client_id: business.client_id,
      client_secret: business.client_secret,
    });
    await post(`${servers[0]!.url}/notification/v1/connect/webhook/subscriptions`, { endpoint: receiver.url }, login.access_token);
    const businessId = business.business_id as string;
    await stats?.reset();
    const meter = cpuMeter(
      servers.map((server) => server.child.pid),
      { postgres: databaseUrl !== null },
    );
    const startedAt = Date.now();
    const started = performance.now();
    // Completions arrive from many requests at once in production: on PostgreSQL several writers store
    // the events (100 per transaction), so the figure measures delivery rather than one writer's pace.
    let next = 0;
    const writer = async () => {
      for (let i = next; i < EVENTS; i = next) {
        next += 100;
        await inTransaction(storage.db, async (trx) => {
          for (let j = i; j < Math.min(EVENTS, i + 100); j++) await recordEvent(trx, reviewEvent(businessId, business.client_id, j));
        });
      }
    };
    await Promise.all(Array.from({ length: writers }, writer));
    const stored = (performance.now() - started) / 1000;
    await waitFor(receiver, EVENTS);
    const seconds = (receiver.last() - started) / 1000;
    const delivered = receiver.received.size;
    const requests = receiver.requests();
    // The bench's own share is its writers' and the receiver's.
    const cpu = cpuNote(meter.per(delivered), 'delivery', 'bench (writers and receiver)');
    const throughputStages = await stageBreakdown(storage, startedAt);
    const statements = stats ? perUnit(await stats.read(), delivered, 'delivery', 12) : '';
    // BENCH_WEBHOOK_RATE=0 leaves the latency run out.
    const lagStarted = Date.now();
    const lag =
      RATE > 0
        ? await latency(
            servers.map((server) => server.url),
            receiver,
            login.access_token,
            await oneAppointment(servers[0]!.url, login.access_token),
          )
        : null;
    const stages = lag ? await stageBreakdown(storage, lagStarted) : '';
    await Promise.all(servers.map((s) => s.stop()));
    const pool = probeNote(
      servers.map((_, i) => readProbe(path.join(probeDir, `${i}.json`))),
      delivered + (lag?.count ?? 0),
      'delivery (both runs)',
    );
    return { rate: delivered / seconds, delivered, requests, seconds, stored, cpu, throughputStages, statements, pool, lag, stages };
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await storage.destroy();
    await receiver.close();
    rmSync(probeDir, { recursive: true, force: true });
  }
}

function baseEnv(dataDir: string): Record<string, string> {
  return {
    CPS_DATA_DIR: dataDir,
    CPS_WORKERS: '1',
    CPS_ADMIN_TOKEN: ADMIN_TOKEN,
    CPS_PUBLIC_URL: 'http://cps.bench',
    CPS_MASTER_KEY: randomBytes(32).toString('base64'),
    CPS_JWT_PRIVATE_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
  };
}

/** Per job kind, for the jobs of the latency run: ms from due to claimed (p50/p99), and from claimed to finished. */
async function stageBreakdown(storage: Storage, since: number): Promise<string> {
  const rows = await storage.db
    .selectFrom('jobs')
    .select(['kind', 'due_at', 'started_at', 'finished_at'])
    .where('created_at', '>=', since)
    .where('status', '=', 'succeeded')
    .execute();
  const kinds = new Map<string, { wait: number[]; run: number[] }>();
  for (const row of rows) {
    const k = kinds.get(row.kind) ?? { wait: [], run: [] };
    kinds.set(row.kind, k);
    k.wait.push(Number(row.started_at) - Number(row.due_at));
    k.run.push(Number(row.finished_at) - Number(row.started_at));
  }
  const q = (xs: number[], p: number) => Math.round(xs.sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!);
  return [...kinds]
    .map(
      ([kind, k]) =>
        `${kind}: due to claimed p50 ${q(k.wait, 0.5)} ms, p99 ${q(k.wait, 0.99)} ms; claimed to settled p50 ${q(k.run, 0.5)} ms, p99 ${q(k.run, 0.99)} ms`,
    )
    .join('; ');
}

type Outcome = Awaited<ReturnType<typeof scenario>>;

function figures(label: string, r: Outcome, goal: number): Figure[] {
  const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
  const lag = r.lag;
  return [
    {
      name: `webhook deliveries, ${label}`,
      value: Math.round(r.rate),
      unit: 'deliveries/s',
      note:
        `${r.delivered} events in ${r.seconds.toFixed(2)} s (${r.requests} requests), from first event stored to last received (the last event was stored after ${r.stored.toFixed(2)} s; ${r.cpu ? `${r.cpu}; ` : ''}${r.throughputStages}); goal >= ${goal.toLocaleString('en')}/s: ${met(r.rate >= goal)}` +
        `${r.statements ? `. ${r.statements}` : ''}${r.pool ? `. ${r.pool}` : ''}`,
    },
    ...(lag
      ? [
          {
            name: `webhook event commit (202 of a review request) to receipt p99, ${label}, ${RATE} events/s`,
            value: lag.p99,
            unit: 'ms',
            note: `${lag.count} events, one per request; p50 ${lag.p50} ms, max ${lag.max} ms${lag.lost ? `, ${lag.lost} not received` : ''}${r.stages ? ` (${r.stages})` : ''}; goal p99 < 1 s: ${met(lag.p99 < 1000 && lag.lost === 0)}`,
          },
        ]
      : []),
  ];
}

export async function runWebhooksBench(_ctx: { helloWorldRps: number }): Promise<Figure[]> {
  const results: Figure[] = [];
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-webhooks-'));
  try {
    results.push(...figures('1 process, SQLite', await scenario(baseEnv(dataDir), null, dataDir, 1, null), 3000));
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }

  const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `cps_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  try {
    await admin.connect();
  } catch (error) {
    results.push({
      name: 'webhook deliveries, 2 processes, PostgreSQL',
      value: 0,
      unit: 'deliveries/s',
      note: `skipped: PostgreSQL unreachable (${(error as Error).message})`,
    });
    return results;
  }
  const pgDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-webhooks-'));
  let statsClient: pg.Client | null = null;
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    // The extension goes into the scratch database itself; its own queries are left out of the counts.
    statsClient = new pg.Client({ connectionString: url.toString() });
    await statsClient.connect();
    const stats = await new StatementCounter(statsClient, name).init();
    const twoPg = await scenario({ ...baseEnv(pgDir), DATABASE_URL: url.toString() }, url.toString(), pgDir, 2, stats);
    results.push(...figures('2 processes, PostgreSQL', twoPg, 2000));
  } finally {
    await statsClient?.end().catch(() => {});
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await admin.end();
    rmSync(pgDir, { recursive: true, force: true });
  }
  return results;
}

if (import.meta.main) {
  for (const f of await runWebhooksBench({ helloWorldRps: 0 }))
    process.stdout.write(`${f.name}: ${f.value} ${f.unit}${f.note ? `\n  ${f.note}` : ''}\n`);
}
