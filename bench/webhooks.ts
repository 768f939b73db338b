/**
 * Webhook deliveries per second to a local receiver that answers 200 at once: events are recorded
 * straight into the database (as a change's transaction would), and the clock runs from the first
 * event stored to the last delivery received. One server process on SQLite; two on PostgreSQL
 * (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres; skipped if unreachable).
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { inTransaction, openStorage } from '../src/db/index.ts';
import { recordEvent } from '../src/jobs/outbox.ts';
import { spawnServer, type Figure } from './lib.ts';

const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 2000);
const ADMIN_TOKEN = `bench-admin-${randomBytes(12).toString('hex')}`;

async function startReceiver() {
  const seen = new Set<string>();
  let requests = 0;
  let last = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests++;
      seen.add(String(req.headers['webhook-id']));
      last = performance.now();
      res.writeHead(200);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    seen,
    requests: () => requests,
    last: () => last,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

async function post(url: string, body: unknown, token?: string): Promise<any> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`);
  return response.json();
}

/** Runs one scenario: `processes` servers on the database, EVENTS events, until all are delivered. */
async function scenario(env: Record<string, string>, databaseUrl: string | null, dataDir: string, processes: number) {
  const receiver = await startReceiver();
  const servers = [];
  for (let i = 0; i < processes; i++) servers.push(await spawnServer('bin/cps.js', ['serve'], env));
  const storage = openStorage({ databaseUrl, dataDir, poolSize: 2 });
  try {
    const business = await post(`${servers[0]!.url}/admin/v1/businesses`, { name: 'Bench Clinic' }, ADMIN_TOKEN);
    const login = await post(`${servers[0]!.url}/connect-auth/v1/account/login`, { client_id: business.client_id, client_secret: business.client_secret });
    await post(`${servers[0]!.url}/notification/v1/connect/webhook/subscriptions`, { endpoint: receiver.url }, login.access_token);
    const businessId = business.business_id as string;
    const started = performance.now();
    for (let i = 0; i < EVENTS; i += 100) {
      await inTransaction(storage.db, async (trx) => {
        for (let j = i; j < Math.min(EVENTS, i + 100); j++) {
          const now = Math.floor(Date.now() / 1000);
          await recordEvent(trx, {
            businessId,
            type: 'external_review.request',
            payload: {
              event: 'external_review.request', event_time: now, timestamp: now, client_id: business.client_id, business_id: businessId,
              data: { doctor_id: 'doc_b', external_review_link: `https://cps.test/reviews/${j}`, patient_id: 'pat_b', appointment_id: `apt_${j}`, clinic_id: 'cli_b' },
            },
          });
        }
      });
    }
    const deadline = Date.now() + 300_000;
    while (receiver.seen.size < EVENTS && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    const seconds = (receiver.last() - started) / 1000;
    return { rate: receiver.seen.size / seconds, delivered: receiver.seen.size, requests: receiver.requests(), seconds };
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await storage.destroy();
    await receiver.close();
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

export async function runWebhooksBench(_ctx: { helloWorldRps: number }): Promise<Figure[]> {
  const figures: Figure[] = [];
  const note = (r: { delivered: number; requests: number; seconds: number }) =>
    `${r.delivered} events in ${r.seconds.toFixed(2)} s (${r.requests} requests), from first event stored to last received`;

  const dataDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-webhooks-'));
  try {
    const sqlite = await scenario(baseEnv(dataDir), null, dataDir, 1);
    figures.push({ name: 'webhook deliveries, 1 process, SQLite', value: Math.round(sqlite.rate), unit: 'deliveries/s', note: note(sqlite) });
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }

  const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `cps_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  try {
    await admin.connect();
  } catch (error) {
    figures.push({ name: 'webhook deliveries, 2 processes, PostgreSQL', value: 0, unit: 'deliveries/s', note: `skipped: PostgreSQL unreachable (${(error as Error).message})` });
    return figures;
  }
  const pgDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-webhooks-'));
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    const twoPg = await scenario({ ...baseEnv(pgDir), DATABASE_URL: url.toString() }, url.toString(), pgDir, 2);
    figures.push({ name: 'webhook deliveries, 2 processes, PostgreSQL', value: Math.round(twoPg.rate), unit: 'deliveries/s', note: note(twoPg) });
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await admin.end();
    rmSync(pgDir, { recursive: true, force: true });
  }
  return figures;
}

if (import.meta.main) console.log(await runWebhooksBench({ helloWorldRps: 0 }));
