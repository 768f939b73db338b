/**
 * PostgreSQL, several processes (issue 18): two server processes on one PostgreSQL database behind
 * the load, against what the same PostgreSQL does under `pgbench` with the same clients for the
 * same time, in the same run.
 *
 * - `pgbench -i` fills a scratch database of its own; then `pgbench -S` (select only) runs just
 *   before the GET load and `pgbench -N` (simple update) just before the PATCH load, each with 50
 *   clients (2 threads) for BENCH_SECONDS: the machine's speed drifts within minutes, so each pair
 *   is measured side by side.
 * - The service: a scratch database, 50 appointments booked by the demo business, then GET and PATCH
 *   /dr/v1/appointment/{id} over the 50 in turn. Two processes (`bin/cps.js serve`, workers on, as
 *   deployed) get 25 connections each from two autocannon instances running at once: autocannon
 *   loads one origin, and a round-robin proxy in front would add a hop that costs the same 2 cores.
 *   The rate is the sum of the two; p50 the mean of the two (the halves are alike), p99 the larger.
 * - GET is also compared with the bare Fastify hello-world, loaded just before it with the same
 *   requests (paths, headers, 2 × 25 connections).
 * - What the loads sent: pg_stat_statements of the scratch database (when preloaded), and a probe
 *   preloaded into each server (pg-probe.ts) counting pool checkouts, waits and statements.
 * - Where the CPU time went, per request or transaction (Linux /proc, lib.ts cpuMeter): the servers
 *   (and their kernel share), every PostgreSQL process, the load generator or pgbench, the machine.
 * - CPS_BENCH_DATABASE_URL=postgres://postgres@localhost/test?host=/var/run/postgresql runs everything, pgbench too, over
 *   PostgreSQL's Unix socket.
 * - BENCH_PG_CPU_PROF=dir: the first server of each load writes a V8 CPU profile into dir/get and
 *   dir/patch (summarise with `node bench/cpu-profile-summary.ts dir/get`).
 *
 * Run alone: `node bench/postgres.ts` (PostgreSQL from CPS_BENCH_DATABASE_URL, else
 * CPS_TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test; skipped if unreachable).
 */
import { spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { PATCH_BODY, seed } from './appointments.ts';
import { cpuMeter, cpuNote, reachable, spawnServer, type Figure, type RunningProcess } from './lib.ts';
import { PROBE, StatementCounter, perUnit, probeNote, readProbe } from './pg-stats.ts';

const PG_BASE = process.env.CPS_BENCH_DATABASE_URL ?? process.env.CPS_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const CLIENTS = 50;
const PROCESSES = 2;
const seconds = () => Number(process.env.BENCH_SECONDS ?? 10);

const round = (n: number, digits = 3) => Math.round(n * 10 ** digits) / 10 ** digits;
const met = (ok: boolean) => (ok ? 'met' : 'NOT met');

interface PgbenchResult {
  tps: number;
  latencyMs: number;
  failed: number;
  /** CPU per transaction: PostgreSQL's and pgbench's own. */
  cpu: string;
}

/** Runs pgbench against `url` (its host, port, user and database) and reads tps and the mean latency. */
function pgbench(url: URL, args: string[]): Promise<PgbenchResult> {
  // A Unix socket's directory comes as ?host= (postgres:///db?host=/var/run/postgresql).
  const host = url.searchParams.get('host') ?? url.hostname;
  const connection = ['-h', host, '-p', url.port || '5432', '-U', decodeURIComponent(url.username || 'postgres')];
  const meter = cpuMeter();
  const child = spawn('pgbench', [...connection, ...args, url.pathname.slice(1)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`pgbench ${args.join(' ')} exited with ${code}: ${out.slice(-500)}`));
      const transactions = Number(/number of transactions actually processed: (\d+)/.exec(out)?.[1] ?? 0);
      resolve({
        tps: Number(/tps = ([\d.]+)/.exec(out)?.[1] ?? 0),
        latencyMs: Number(/latency average = ([\d.]+) ms/.exec(out)?.[1] ?? 0),
        failed: Number(/number of failed transactions: (\d+)/.exec(out)?.[1] ?? 0),
        cpu: cpuNote(meter.per(transactions), 'transaction', 'pgbench'),
      });
    });
  });
}

interface Load {
  rps: number;
  requests: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

/** One autocannon per origin, CLIENTS spread evenly, all at once; every connection walks `paths` in turn. */
async function loadSpread(
  origins: string[],
  paths: string[],
  method: 'GET' | 'PATCH',
  headers: Record<string, string>,
  duration: number,
  body?: unknown,
): Promise<Load> {
  const results = await Promise.all(
    origins.map((origin, i) => {
      let next = i;
      return autocannon({
        url: `${origin}${paths[0]}`,
        method,
        connections: CLIENTS / origins.length,
        duration,
        headers: { ...headers, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        requests: [{ setupRequest: (request) => ({ ...request, path: paths[next++ % paths.length]! }) }],
      });
    }),
  );
  return {
    rps: results.reduce((sum, r) => sum + r.requests.average, 0),
    requests: results.reduce((sum, r) => sum + r.requests.total, 0),
    p50: round(results.reduce((sum, r) => sum + r.latency.p50, 0) / results.length, 1),
    p99: Math.max(...results.map((r) => r.latency.p99)),
    errors: results.reduce((sum, r) => sum + r.errors, 0),
    non2xx: results.reduce((sum, r) => sum + r.non2xx, 0),
  };
}

interface Phase {
  load: Load;
  warmRequests: number;
  statements: string;
  pool: string;
  cpu: string;
}

/**
 * Starts PROCESSES servers with the probe (the first with the CPU profiler when asked), warms them
 * up for 1 s, and runs the load with pg_stat_statements reset just before it.
 */
async function phase(
  name: string,
  env: Record<string, string>,
  stats: StatementCounter,
  paths: string[],
  method: 'GET' | 'PATCH',
  token: string,
  body?: unknown,
): Promise<Phase> {
  const probeDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-probe-'));
  const profileDir = process.env.BENCH_PG_CPU_PROF;
  const servers: RunningProcess[] = [];
  try {
    for (let i = 0; i < PROCESSES; i++) {
      const flags = [...PROBE, ...(profileDir && i === 0 ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(profileDir, name)}`] : [])];
      servers.push(await spawnServer('bin/cps.js', ['serve'], { ...env, CPS_BENCH_PROBE_FILE: path.join(probeDir, `${i}.json`) }, '/ready', flags));
    }
    const origins = servers.map((s) => s.url);
    for (const origin of origins) {
      // A load of refusals measures nothing: every process must answer the request first.
      const response = await fetch(`${origin}${paths[0]}`, {
        method,
        headers: { auth: token, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      if (!response.ok) throw new Error(`${method} ${paths[0]} on ${origin}: ${response.status} ${await response.text()}`);
    }
    const warm = await loadSpread(origins, paths, method, { auth: token }, 1, body);
    await stats.reset();
    const meter = cpuMeter(servers.map((server) => server.child.pid));
    const load = await loadSpread(origins, paths, method, { auth: token }, seconds(), body);
    const cpu = cpuNote(meter.per(load.requests), 'request');
    const statements = perUnit(await stats.read(), load.requests, 'request');
    await Promise.all(servers.splice(0).map((s) => s.stop()));
    const probes = Array.from({ length: PROCESSES }, (_, i) => readProbe(path.join(probeDir, `${i}.json`)));
    return { load, warmRequests: warm.requests, statements, pool: probeNote(probes, load.requests + warm.requests, 'request'), cpu };
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    rmSync(probeDir, { recursive: true, force: true });
  }
}

/** The hello-world with the load's requests and spread (both autocannon instances on its one origin). */
async function helloWorld(paths: string[], token: string): Promise<Load & { cpu: string }> {
  const hello = await spawnServer('bench/hello-world.ts', [], {}, '/ready');
  try {
    await loadSpread([hello.url, hello.url], paths, 'GET', { auth: token }, 1);
    const meter = cpuMeter([hello.child.pid], { postgres: false });
    const load = await loadSpread([hello.url, hello.url], paths, 'GET', { auth: token }, seconds());
    return { ...load, cpu: cpuNote(meter.per(load.requests), 'request') };
  } finally {
    await hello.stop();
  }
}

export async function runPostgresBench(ctx: { helloWorldRps: number }): Promise<Figure[]> {
  if (!(await reachable(PG_BASE))) {
    return [{ name: 'PostgreSQL, 2 processes', value: 0, unit: 'req/s', note: `skipped: PostgreSQL unreachable at ${PG_BASE}` }];
  }
  const admin = new pg.Client({ connectionString: PG_BASE });
  await admin.connect();
  const suffix = randomBytes(4).toString('hex');
  const serviceDb = `cps_bench_pg_${suffix}`;
  const pgbenchDb = `cps_bench_pgbench_${suffix}`;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-postgres-'));
  const urlOf = (db: string) => {
    const url = new URL(PG_BASE);
    url.pathname = `/${db}`;
    return url;
  };
  let statsClient: pg.Client | null = null;
  try {
    await admin.query(`CREATE DATABASE ${serviceDb}`);
    await admin.query(`CREATE DATABASE ${pgbenchDb}`);
    await pgbench(urlOf(pgbenchDb), ['-i', '-q']);
    // pg_stat_statements is read from the pgbench database, never from one others use.
    statsClient = new pg.Client({ connectionString: urlOf(pgbenchDb).toString() });
    await statsClient.connect();
    const stats = await new StatementCounter(statsClient, serviceDb).init();
    // Keys and issuer fixed for the run: every process (the seeder, then two per load, each on a port
    // of its own) accepts the same tokens.
    const env = {
      CPS_DATA_DIR: dataDir,
      CPS_PUBLIC_URL: 'http://cps.bench',
      DATABASE_URL: urlOf(serviceDb).toString(),
      CPS_MASTER_KEY: randomBytes(32).toString('base64'),
      CPS_JWT_PRIVATE_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    };

    // Seed through one process; count the statements of the 50 bookings.
    const seeder = await spawnServer('bin/cps.js', ['serve'], { ...env, CPS_WORKERS: '0' });
    let seeded: Awaited<ReturnType<typeof seed>>;
    let booking: string;
    let perBooking: number;
    try {
      seeded = await seed(seeder.url, dataDir, () => stats.reset());
      const booked = await stats.read();
      perBooking = booked.reduce((sum, s) => sum + s.calls, 0) / seeded.appointmentIds.length;
      booking = perUnit(booked, seeded.appointmentIds.length, 'booking');
    } finally {
      await seeder.stop();
    }
    const paths = seeded.appointmentIds.map((id) => `/dr/v1/appointment/${id}`);
    const pgbenchArgs = ['-c', String(CLIENTS), '-j', '2', '-T', String(seconds())];

    const selectOnly = await pgbench(urlOf(pgbenchDb), ['-S', ...pgbenchArgs]);
    const hello = await helloWorld(paths, seeded.token);
    const get = await phase('get', env, stats, paths, 'GET', seeded.token);
    const simpleUpdate = await pgbench(urlOf(pgbenchDb), ['-N', ...pgbenchArgs]);
    const patch = await phase('patch', env, stats, paths, 'PATCH', seeded.token, PATCH_BODY);

    const failed = (l: Load) => l.errors + l.non2xx;
    const getToS = get.load.rps / selectOnly.tps;
    const getToHello = get.load.rps / hello.rps;
    const getToBaseline = get.load.rps / ctx.helloWorldRps;
    const patchToN = patch.load.rps / simpleUpdate.tps;
    const spread = `${PROCESSES} processes × ${CLIENTS / PROCESSES} connections, over ${paths.length} appointments`;
    return [
      {
        name: 'pgbench -S (select only), same PostgreSQL',
        value: Math.round(selectOnly.tps),
        unit: 'tps',
        note: `${CLIENTS} clients, 2 threads, ${seconds()} s, scale 1, simple protocol; latency average ${selectOnly.latencyMs} ms; ${selectOnly.cpu}`,
      },
      {
        name: 'pgbench -N (simple update), same PostgreSQL',
        value: Math.round(simpleUpdate.tps),
        unit: 'tps',
        note: `${CLIENTS} clients, 2 threads, ${seconds()} s, scale 1, simple protocol; latency average ${simpleUpdate.latencyMs} ms${simpleUpdate.failed ? `, ${simpleUpdate.failed} failed` : ''}; ${simpleUpdate.cpu}`,
      },
      {
        name: 'hello-world GET, just before the GET load (same requests, 2 × 25 connections)',
        value: Math.round(hello.rps),
        unit: 'req/s',
        ratio: 1,
        note: `p50 ${hello.p50} ms, p99 ${hello.p99} ms; ${hello.cpu}`,
      },
      {
        name: 'GET /dr/v1/appointment/{id}, PostgreSQL, 2 processes',
        value: Math.round(get.load.rps),
        unit: 'req/s',
        ratio: round(getToHello),
        note:
          `${spread}; p50 ${get.load.p50} ms, p99 ${get.load.p99} ms, ${failed(get.load)} errors/non-2xx; ` +
          `${round(getToS)} of pgbench -S (goal >= 0.3: ${met(getToS >= 0.3)}); ${round(getToHello)} of the hello-world just before, ` +
          `${round(getToBaseline)} of the run's baseline (goal >= 0.25: ${met(getToHello >= 0.25)}). ${get.cpu}. ${get.statements}. ${get.pool}`,
      },
      {
        name: 'PATCH /dr/v1/appointment/{id}, PostgreSQL, 2 processes',
        value: Math.round(patch.load.rps),
        unit: 'req/s',
        ratio: round(patch.load.rps / ctx.helloWorldRps),
        note:
          `${spread}; p50 ${patch.load.p50} ms, p99 ${patch.load.p99} ms, ${failed(patch.load)} errors/non-2xx; ` +
          `${round(patchToN)} of pgbench -N (goal >= 0.5: ${met(patchToN >= 0.5)}; p99 <= 50 ms: ${met(patch.load.p99 <= 50)}; 0 errors: ${met(failed(patch.load) === 0)}). ` +
          `${patch.cpu}. ${patch.statements}. ${patch.pool}`,
      },
      {
        name: 'POST /dr/v1/appointment (booking): statements per request',
        value: round(perBooking, 2),
        unit: 'statements',
        note: `counted over the ${paths.length} bookings of the seed, one process: ${booking}`,
      },
    ];
  } finally {
    await statsClient?.end().catch(() => {});
    await admin.query(`DROP DATABASE IF EXISTS ${serviceDb} WITH (FORCE)`).catch(() => {});
    await admin.query(`DROP DATABASE IF EXISTS ${pgbenchDb} WITH (FORCE)`).catch(() => {});
    await admin.end();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  for (const f of await runPostgresBench({ helloWorldRps: Number(process.env.BENCH_HELLO_RPS ?? Number.NaN) })) {
    process.stdout.write(`${f.name}: ${f.value} ${f.unit}${f.ratio !== undefined ? ` (ratio ${f.ratio})` : ''}${f.note ? `\n  ${f.note}` : ''}\n`);
  }
}
