/**
 * Login under a flood of wrong secrets: autocannon sends wrong secrets for one client id at 50
 * connections while a real client (another business's, from the same address) logs in with its
 * right secret, one login at a time; its latencies give p50 and p99. Once with login throttling off
 * (both budgets and the hashing bound at 0: every attempt is hashed) and once with the defaults; and
 * the real client alone, without a flood, for reference. One server process on SQLite each time.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { load, spawnServer, type Figure, type LoadResult } from './lib.ts';

const ADMIN_TOKEN = `bench-admin-${randomBytes(12).toString('hex')}`;
const THROTTLING_OFF = { CPS_LOGIN_CLIENT_FAILURES: '0', CPS_LOGIN_ADDRESS_FAILURES: '0', CPS_LOGIN_HASH_CONCURRENCY: '0' };

interface Credentials {
  client_id: string;
  client_secret: string;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

/** Sequential logins for `ms`: latencies in ms and the count of answers other than 200. */
async function realLogins(url: string, client: Credentials, ms: number): Promise<{ latencies: number[]; failed: number }> {
  const latencies: number[] = [];
  let failed = 0;
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const started = performance.now();
    const response = await fetch(`${url}/connect-auth/v1/account/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(client),
    });
    await response.arrayBuffer();
    latencies.push(performance.now() - started);
    if (response.status !== 200) failed++;
  }
  return { latencies: latencies.sort((a, b) => a - b), failed };
}

interface Scenario {
  real: { p50: number; p99: number; count: number; failed: number };
  flood: LoadResult | null;
}

async function scenario(env: Record<string, string>, flood: boolean, seconds: number): Promise<Scenario> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-login-'));
  const service = await spawnServer('bin/cps.js', ['serve'], { CPS_DATA_DIR: dataDir, CPS_ADMIN_TOKEN: ADMIN_TOKEN, ...env });
  try {
    const real = JSON.parse(readFileSync(path.join(dataDir, 'demo-credentials.json'), 'utf8')) as Credentials;
    const victim = (await (
      await fetch(`${service.url}/admin/v1/businesses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
        body: JSON.stringify({ name: 'Flooded' }),
      })
    ).json()) as Credentials;
    const flooding = flood
      ? load(`${service.url}/connect-auth/v1/account/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ client_id: victim.client_id, client_secret: 'cs_wrong' }),
          connections: 50,
          seconds,
        })
      : null;
    // The real client starts a second into the flood and stops a second before it ends.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const { latencies, failed } = await realLogins(service.url, real, (seconds - 2) * 1000);
    const round = (ms: number) => Math.round(ms * 10) / 10;
    return {
      real: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)), count: latencies.length, failed },
      flood: flooding ? await flooding : null,
    };
  } finally {
    await service.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function runLoginBench(_ctx: { helloWorldRps: number }): Promise<Figure[]> {
  const seconds = Math.max(4, Number(process.env.BENCH_SECONDS ?? 10));
  const quiet = await scenario({}, false, seconds);
  const off = await scenario(THROTTLING_OFF, true, seconds);
  const on = await scenario({}, true, seconds);
  const floodNote = (s: Scenario) =>
    `p50 ${s.real.p50} ms; ${s.real.count} logins, ${s.real.failed} refused; flood ${Math.round(s.flood!.rps)} req/s, ${s.flood!.non2xx} non-2xx, flood p99 ${s.flood!.p99} ms`;
  return [
    {
      name: 'real client login p99, no flood (one login at a time)',
      value: quiet.real.p99,
      unit: 'ms',
      note: `p50 ${quiet.real.p50} ms; ${quiet.real.count} logins, ${quiet.real.failed} refused`,
    },
    {
      name: 'real client login p99 during a flood of wrong secrets for another client id (50 connections), throttling off',
      value: off.real.p99,
      unit: 'ms',
      note: floodNote(off),
    },
    {
      name: 'the same, throttling on (defaults: 10 failures per client id, 100 per address, per 60 s; 4 verifications at once, 64 queued)',
      value: on.real.p99,
      unit: 'ms',
      note: floodNote(on),
    },
  ];
}
