/** Shared pieces of the benchmarks: servers in child processes, autocannon runs, machine facts. */
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { buildApp, createContext } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import type { AppContext } from '../src/context.ts';
import { openStorage, type Storage } from '../src/db/index.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import type { App } from '../src/http/app-type.ts';
import { createLogger } from '../src/logger.ts';
import { BusinessService } from '../src/modules/businesses/index.ts';
import { signingKeyFromPem } from '../src/security/keys.ts';
import { freePort } from '../test/net.ts';

export interface Figure {
  name: string;
  value: number;
  unit: string;
  /** Ratio to the hello-world baseline measured in the same run, where it applies. */
  ratio?: number;
  note?: string;
}

export interface RunningProcess {
  url: string;
  child: ChildProcess;
  /** Milliseconds from spawn to the first 200 of `readyPath`. */
  readyMs: number;
  stop(): Promise<void>;
}

const ROOT = path.resolve(import.meta.dirname, '..');

/** The service runs with the Node flags of `npm start` (package.json), as in production. */
const SERVICE_NODE_FLAGS = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start
  .split(/\s+/)
  .filter((word) => word.startsWith('--'));

/**
 * Spawns `node script args` with PORT set, and waits until readyPath answers 200. `nodeFlags` go
 * after the service's own (a profiler, a preloaded probe).
 */
export async function spawnServer(
  script: string,
  args: string[],
  env: Record<string, string>,
  readyPath = '/ready',
  nodeFlags: string[] = [],
): Promise<RunningProcess> {
  const port = await freePort();
  const started = performance.now();
  const flags = [...(script === 'bin/cps.js' ? SERVICE_NODE_FLAGS : []), ...nodeFlags];
  const child = spawn(process.execPath, [...flags, path.resolve(ROOT, script), ...args], {
    env: { ...process.env, LOG_LEVEL: 'warn', ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}${readyPath}`)).status === 200) break;
    } catch {
      // not yet listening
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const readyMs = performance.now() - started;
  return {
    url,
    child,
    readyMs,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** Runs `node script args` to the end (with the service's Node flags) and returns its stdout; fails on a non-zero exit. */
export function runCommand(script: string, args: string[], env: Record<string, string>): Promise<string> {
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, path.resolve(ROOT, script), ...args], {
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`${script} ${args.join(' ')} exited with ${code}`))));
  });
}

/** An access token of the demo business a first start writes into dataDir. */
export async function demoToken(url: string, dataDir: string): Promise<string> {
  const demo = JSON.parse(readFileSync(path.join(dataDir, 'demo-credentials.json'), 'utf8')) as { client_id: string; client_secret: string };
  const response = await fetch(`${url}/connect-auth/v1/account/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: demo.client_id, client_secret: demo.client_secret }),
  });
  return ((await response.json()) as { access_token: string }).access_token;
}

export interface LoadOptions {
  method?: 'GET' | 'POST' | 'PATCH' | 'PUT';
  headers?: Record<string, string>;
  body?: string | Buffer;
  connections?: number;
  seconds?: number;
  /** Paths every connection requests in turn (instead of the URL's own path). */
  paths?: string[];
  /**
   * loadAgainstHello: processes that must fall quiet before each turn, so that work a turn left
   * behind (the documents' thumbnails, say) runs in neither side's turn.
   */
  settle?: number[];
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

export async function load(url: string, options: LoadOptions = {}): Promise<LoadResult> {
  const result = await autocannon({
    url,
    method: options.method ?? 'GET',
    headers: options.headers,
    body: options.body,
    connections: options.connections ?? 50,
    duration: options.seconds ?? Number(process.env.BENCH_SECONDS ?? 10),
    ...(options.paths ? { requests: options.paths.map((path) => ({ method: options.method ?? 'GET', path })) } : {}),
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
  };
}

export interface ComparedLoad extends LoadResult {
  /** The hello-world's rate over the rounds that alternated with this load. */
  helloRps: number;
  /** rps / helloRps. */
  ratio: number;
}

/**
 * Loads `url` and the hello-world in turns, a few short rounds each, and compares their rates. On a
 * shared 2-core machine a server's rate drifts by a third within minutes (measured: the same
 * hello-world at 35k, 48k and 62k req/s in one quarter of an hour), which a baseline taken at the
 * start of the run does not follow; rounds that alternate see the same machine. The hello-world gets
 * the same requests (paths, headers): autocannon shares the 2 cores, and a rotation of paths or a
 * bearer token costs it more per request, which would otherwise count against the server.
 * Latency: the median of the rounds' p50 and the largest of their p99.
 */
export async function loadAgainstHello(helloOrigin: string, url: string, options: LoadOptions = {}): Promise<ComparedLoad> {
  const { pathname, search } = new URL(url);
  const helloUrl = `${helloOrigin}${pathname}${search}`;
  const rounds = 5;
  const seconds = Math.max(1, Math.round((options.seconds ?? Number(process.env.BENCH_SECONDS ?? 10)) / rounds));
  const hello: LoadResult[] = [];
  const target: LoadResult[] = [];
  for (let round = 0; round < rounds; round++) {
    await quiet(options.settle ?? []);
    hello.push(await load(helloUrl, { ...options, seconds }));
    await quiet(options.settle ?? []);
    target.push(await load(url, { ...options, seconds }));
  }
  const mean = (results: LoadResult[]) => results.reduce((sum, r) => sum + r.rps, 0) / results.length;
  const p50s = target.map((r) => r.p50).sort((a, b) => a - b);
  const rps = mean(target);
  const helloRps = mean(hello);
  return {
    rps,
    p50: p50s[Math.floor(p50s.length / 2)]!,
    p99: Math.max(...target.map((r) => r.p99)),
    errors: target.reduce((sum, r) => sum + r.errors, 0),
    non2xx: target.reduce((sum, r) => sum + r.non2xx, 0),
    helloRps,
    ratio: rps / helloRps,
  };
}

/** Linux's clock ticks a second, the unit of /proc's CPU times. */
const TICKS_PER_SECOND = 100;

/** CPU time (user and system, in clock ticks) that process `pid` has used. */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** Resolves once every process of `pids` used under 5 % of a core over a quarter of a second (60 s at most). */
export async function quiet(pids: number[]): Promise<void> {
  const windowMs = 250;
  const busyTicks = Math.max(1, Math.floor(0.05 * (windowMs / 1000) * TICKS_PER_SECOND));
  const until = Date.now() + 60_000;
  while (pids.length > 0 && Date.now() < until) {
    const before = pids.map(cpuTicks);
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    if (pids.every((pid, i) => cpuTicks(pid) - before[i]! <= busyTicks)) return;
  }
}

export function machine(): string {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  return `${cpus().length} × ${cpu}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${process.platform}`;
}

/** Whether a PostgreSQL server answers at `url` within 2 s. */
export async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

/** A fresh PostgreSQL database for a run (dropped by `drop`), or null when the server cannot be reached. */
export async function scratchPgDatabase(): Promise<{ url: string; drop: () => Promise<void> } | null> {
  const adminUrl = process.env.CPS_BENCH_DATABASE_URL ?? process.env.CPS_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const name = `cps_bench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  try {
    await admin.connect();
  } catch {
    return null;
  }
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

/** Three decimals, for figures in ms or s. */
export function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/**
 * A process's CPU time so far, in ms, from Linux's /proc: user and system time, or system time only;
 * `children` adds its reaped children's.
 */
function procCpuMs(pid: number | string, children = false, systemOnly = false): number | null {
  try {
    // Fields after the command name: utime, stime, cutime, cstime are 14 to 17 of stat, in ticks (100 a second).
    const [utime, stime, cutime, cstime] = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ').slice(11, 15).map(Number);
    const own = systemOnly ? stime! : utime! + stime!;
    const reaped = children ? (systemOnly ? cstime! : cutime! + cstime!) : 0;
    return (own + reaped) * 10;
  } catch {
    return null;
  }
}

/** The CPU time of every PostgreSQL process of this machine, those that ended included (their postmaster reaped them). */
function postgresCpuMs(): number | null {
  let total = 0;
  let found = false;
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue;
    } catch {
      continue;
    }
    const ms = procCpuMs(pid, true);
    if (ms === null) continue;
    total += ms;
    found = true;
  }
  return found ? total : null;
}

/** Busy CPU time of the whole machine (every core, idle and I/O wait left out), in ms. */
function machineBusyMs(): number | null {
  try {
    const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).map(Number);
    // user nice system idle iowait irq softirq steal
    return (ticks.slice(0, 8).reduce((sum, t) => sum + t, 0) - ticks[3]! - ticks[4]!) * 10;
  } catch {
    return null;
  }
}

export interface CpuShares {
  /** ms of CPU per unit (a request, a delivery, a transaction), by who spent it; null where /proc is not there. */
  servers: number | null;
  /** The part of `servers` spent in the kernel (system calls: sockets to clients, PostgreSQL and receivers). */
  serversSystem: number | null;
  postgres: number | null;
  /** This process: the load generator (autocannon) or the bench's own writers; with its reaped children (pgbench). */
  bench: number | null;
  machine: number | null;
}

/**
 * Where the CPU time of a load goes: started before it, `per(units)` after it gives the ms each unit
 * cost the servers (`pids`), PostgreSQL (every postgres process of the machine, unless the load does
 * not use it), this process and its children, and the machine as a whole (which includes anything
 * else running).
 */
export function cpuMeter(pids: Array<number | undefined> = [], options: { postgres?: boolean } = {}): { per(units: number): CpuShares } {
  const usesPostgres = options.postgres ?? true;
  const servers = (systemOnly: boolean) => {
    let total = 0;
    for (const pid of pids) {
      const ms = pid === undefined ? null : procCpuMs(pid, false, systemOnly);
      if (ms === null) return null;
      total += ms;
    }
    return total;
  };
  const read = (): CpuShares => ({
    servers: servers(false),
    serversSystem: servers(true),
    postgres: usesPostgres ? postgresCpuMs() : null,
    bench: procCpuMs('self', true),
    machine: machineBusyMs(),
  });
  const before = read();
  return {
    per(units) {
      const after = read();
      const share = (key: keyof CpuShares) => {
        const [a, b] = [after[key], before[key]];
        return a === null || b === null || units === 0 ? null : (a - b) / units;
      };
      const measured = pids.length > 0;
      return {
        servers: measured ? share('servers') : null,
        serversSystem: measured ? share('serversSystem') : null,
        postgres: share('postgres'),
        bench: share('bench'),
        machine: share('machine'),
      };
    },
  };
}

/** "CPU per request: servers 0.31 ms, PostgreSQL 0.25 ms, ...", naming only what was measured. */
export function cpuNote(shares: CpuShares, unit: string, benchLabel = 'load generator'): string {
  const system = shares.servers === null || shares.serversSystem === null ? '' : ` (${shares.serversSystem.toFixed(3)} of it in the kernel)`;
  const parts = [
    ['servers', shares.servers, system],
    ['PostgreSQL', shares.postgres, ''],
    [benchLabel, shares.bench, ''],
    ['machine in all', shares.machine, ''],
  ].flatMap(([label, ms, more]) => (ms === null ? [] : [`${label} ${(ms as number).toFixed(3)} ms${more}`]));
  return parts.length === 0 ? '' : `CPU per ${unit}: ${parts.join(', ')}`;
}

/** A service built in this process on a scratch data directory (and PostgreSQL database, when given), with one business. */
export interface InProcessService {
  app: App;
  ctx: AppContext;
  storage: Storage;
  masterKey: Buffer;
  businessId: string;
  clientId: string;
  /** Closes the app and the storage and removes the data directory. */
  close(): Promise<void>;
}

/**
 * Builds the service in this process for a bench that calls it by `app.inject` (no sockets, no
 * workers): a fresh data directory named after `name`, the database migrated, a business "Bench".
 * `env` adds settings (a page size, say).
 */
export async function inProcessService(name: string, databaseUrl: string | null, env: Record<string, string> = {}): Promise<InProcessService> {
  const dataDir = mkdtempSync(path.join(tmpdir(), `cps-bench-${name}-`));
  const config = loadConfig({
    CPS_DATA_DIR: dataDir,
    CPS_WORKERS: '0',
    LOG_LEVEL: 'silent',
    CPS_PUBLIC_URL: 'http://cps.bench',
    ...env,
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  });
  const storage = openStorage({ databaseUrl: config.databaseUrl, dataDir, poolSize: 4 });
  const removeAll = async () => {
    await storage.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const masterKey = randomBytes(32);
    const signing = await signingKeyFromPem(generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString());
    await migrateToLatest(storage.db);
    const ctx = createContext(config, storage, { signing, masterKey }, createLogger('silent'));
    const app = await buildApp(ctx);
    await app.ready();
    const business = await new BusinessService({ db: storage.db, chainSeal: ctx.audit.chainSeal }).createBusiness('Bench');
    return {
      app,
      ctx,
      storage,
      masterKey,
      businessId: business.business_id,
      clientId: business.client_id,
      close: async () => {
        await app.close();
        await removeAll();
      },
    };
  } catch (error) {
    await removeAll();
    throw error;
  }
}

/** The middle value (the upper one of an even count). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
