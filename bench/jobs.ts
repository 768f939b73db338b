/**
 * Background jobs, end to end: jobs per second from the first enqueue to the last handler call,
 * with a no-op handler. SQLite: one process enqueues and runs them. PostgreSQL: the bench process
 * enqueues, two worker processes (this file with --worker) share the work. Goal: 2,000/s on PostgreSQL.
 *
 * Run alone: `node bench/jobs.ts` (PostgreSQL from CPS_BENCH_DATABASE_URL, else
 * CPS_TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test; skipped if unreachable).
 * JOBS_BENCH_COUNT overrides the number of jobs (default 10,000).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Registry } from 'prom-client';
import { inTransaction, openStorage, type Storage } from '../src/db/index.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { enqueueMany } from '../src/jobs/queue-repo.ts';
import { JobQueue } from '../src/jobs/queue.ts';
import { reachable } from './lib.ts';
import { createLogger } from '../src/logger.ts';

export interface BenchResult {
  name: string;
  value: number;
  unit: string;
  note?: string;
}

const COUNT = Number(process.env.JOBS_BENCH_COUNT ?? 10_000);
const KIND = 'bench.noop';
const CONCURRENCY = Number(process.env.JOBS_BENCH_CONCURRENCY ?? 20);
const BATCH = 100;
const PRODUCERS = 4;

function newQueue(storage: Storage, onRun: () => void): JobQueue {
  const queue = new JobQueue(storage, createLogger('warn'), new Registry());
  queue.register(KIND, async () => onRun(), { concurrency: CONCURRENCY });
  return queue;
}

/** COUNT jobs from PRODUCERS concurrent producers, BATCH jobs per transaction. */
async function produce(storage: Storage): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: PRODUCERS }, async () => {
      while (next < COUNT) {
        const size = Math.min(BATCH, COUNT - next);
        next += size;
        await inTransaction(storage.db, (trx) =>
          enqueueMany(
            trx,
            Array.from({ length: size }, (_, i) => ({ kind: KIND, payload: { i } })),
          ),
        );
      }
    }),
  );
}

async function benchSqlite(): Promise<BenchResult> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-jobs-'));
  const storage = openStorage({ databaseUrl: null, dataDir });
  try {
    await migrateToLatest(storage.db);
    let ran = 0;
    let done!: () => void;
    const finished = new Promise<void>((resolve) => {
      done = resolve;
    });
    const queue = newQueue(storage, () => {
      if (++ran === COUNT) done();
    });
    await queue.start();
    const started = performance.now();
    await produce(storage);
    await finished;
    const seconds = (performance.now() - started) / 1000;
    await queue.stop(1000);
    return {
      name: 'jobs end to end, SQLite, 1 process',
      value: Math.round(COUNT / seconds),
      unit: 'jobs/s',
      note: `${COUNT} no-op jobs, concurrency ${CONCURRENCY}`,
    };
  } finally {
    await storage.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** What a started, idle queue costs: CPU of this process per second, five kinds registered, default poll. */
async function benchIdle(): Promise<BenchResult> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-jobs-'));
  const storage = openStorage({ databaseUrl: null, dataDir });
  try {
    await migrateToLatest(storage.db);
    const queue = new JobQueue(storage, createLogger('warn'), new Registry());
    for (const kind of ['a', 'b', 'c', 'd']) queue.register(`idle.${kind}`, async () => {});
    await queue.start();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const before = process.cpuUsage();
    const seconds = 5;
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    const used = process.cpuUsage(before);
    await queue.stop(0);
    return {
      name: 'idle workers, SQLite: CPU per second',
      value: Math.round(((used.user + used.system) / 1000 / seconds) * 100) / 100,
      unit: 'ms/s',
      note: 'five kinds, 1 s poll, no jobs',
    };
  } finally {
    await storage.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function benchPostgres(adminUrl: string): Promise<BenchResult> {
  const name = `cps_bench_jobs_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const storage = openStorage({ databaseUrl: url.toString(), dataDir: tmpdir(), poolSize: PRODUCERS });
  const workers = [];
  try {
    await migrateToLatest(storage.db);
    for (let i = 0; i < 2; i++) {
      const child = spawn(process.execPath, [import.meta.filename, '--worker'], {
        env: { ...process.env, JOBS_BENCH_DATABASE_URL: url.toString() },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      workers.push(child);
      const [line] = (await once(child.stdout, 'data')) as [Buffer];
      if (!line.toString().startsWith('ready')) throw new Error(`worker did not start: ${line}`);
    }
    const started = performance.now();
    await produce(storage);
    const produced = performance.now();
    for (;;) {
      const row = await storage.db
        .selectFrom('jobs')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', '=', 'succeeded')
        .executeTakeFirstOrThrow();
      if (Number(row.n) >= COUNT) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const seconds = (performance.now() - started) / 1000;
    return {
      name: 'jobs end to end, PostgreSQL, 2 worker processes',
      value: Math.round(COUNT / seconds),
      unit: 'jobs/s',
      note: `${COUNT} no-op jobs, concurrency ${CONCURRENCY} per process; enqueueing took ${Math.round(produced - started)} ms; goal 2,000`,
    };
  } finally {
    await Promise.all(
      workers.map(async (child) => {
        if (child.exitCode !== null) return;
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        await exited;
      }),
    );
    await storage.destroy();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

async function worker(): Promise<void> {
  const storage = openStorage({ databaseUrl: process.env.JOBS_BENCH_DATABASE_URL!, dataDir: tmpdir(), poolSize: 10 });
  const queue = newQueue(storage, () => {});
  await queue.start();
  process.stdout.write('ready\n');
  process.once('SIGTERM', async () => {
    await queue.stop(1000);
    await storage.destroy();
    process.exit(0);
  });
}

export async function runJobsBench(): Promise<BenchResult[]> {
  const results = [await benchSqlite(), await benchIdle()];
  const pgUrl = process.env.CPS_BENCH_DATABASE_URL ?? process.env.CPS_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  if (await reachable(pgUrl)) results.push(await benchPostgres(pgUrl));
  else results.push({ name: 'jobs end to end, PostgreSQL, 2 worker processes', value: 0, unit: 'jobs/s', note: 'skipped: PostgreSQL unreachable' });
  return results;
}

if (import.meta.main) {
  if (process.argv.includes('--worker')) {
    await worker();
  } else {
    for (const result of await runJobsBench())
      process.stdout.write(`${result.name}: ${result.value} ${result.unit}${result.note ? ` (${result.note})` : ''}\n`);
  }
}
