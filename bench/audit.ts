/**
 * The access log's cost (issue 21): GET /dr/v1/appointment/{id} with the log on (the default: an
 * entry per answer, fsynced to the write-ahead file before it is sent, batched into the database)
 * against the same load with CPS_AUDIT=off, on SQLite, in the same run. Two servers seeded alike are
 * loaded in alternating turns (the machine's speed drifts within minutes), and the requests of all
 * turns are summed per server.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { seed } from './appointments.ts';
import { spawnServer, type Figure } from './lib.ts';

const CONNECTIONS = 50;
const TURNS = 3;

async function load(base: string, paths: string[], token: string, seconds: number) {
  let next = 0;
  return autocannon({
    url: `${base}${paths[0]}`,
    connections: CONNECTIONS,
    duration: seconds,
    headers: { auth: token },
    requests: [{ setupRequest: (request) => ({ ...request, path: paths[next++ % paths.length]! }) }],
  });
}

export async function runAuditBench(): Promise<Figure[]> {
  const seconds = Math.max(2, Math.round(Number(process.env.BENCH_SECONDS ?? 10) / 2));
  const dirs = { on: mkdtempSync(path.join(tmpdir(), 'cps-bench-audit-on-')), off: mkdtempSync(path.join(tmpdir(), 'cps-bench-audit-off-')) };
  const servers = {
    on: await spawnServer('bin/cps.js', ['serve'], {
      CPS_DATA_DIR: dirs.on,
      CPS_WORKERS: '0',
      CPS_AUDIT: 'on',
      ...JSON.parse(process.env.BENCH_AUDIT_ENV ?? '{}'),
    }),
    off: await spawnServer('bin/cps.js', ['serve'], { CPS_DATA_DIR: dirs.off, CPS_WORKERS: '0', CPS_AUDIT: 'off' }),
  };
  try {
    const setups = {
      on: await seed(servers.on.url, dirs.on),
      off: await seed(servers.off.url, dirs.off),
    };
    const totals = { on: { requests: 0, seconds: 0, failed: 0, p99: 0 }, off: { requests: 0, seconds: 0, failed: 0, p99: 0 } };
    for (const side of ['on', 'off'] as const) {
      await load(
        servers[side].url,
        setups[side].appointmentIds.map((id) => `/dr/v1/appointment/${id}`),
        setups[side].token,
        1,
      ); // warm-up
    }
    for (let turn = 0; turn < TURNS; turn++) {
      for (const side of turn % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
        const result = await load(
          servers[side].url,
          setups[side].appointmentIds.map((id) => `/dr/v1/appointment/${id}`),
          setups[side].token,
          seconds,
        );
        totals[side].requests += result.requests.total;
        totals[side].seconds += seconds;
        totals[side].failed += result.non2xx + result.errors;
        totals[side].p99 = Math.max(totals[side].p99, result.latency.p99);
      }
    }
    const rate = (side: 'on' | 'off') => totals[side].requests / totals[side].seconds;
    const ratio = Math.round((rate('on') / rate('off')) * 1000) / 1000;
    const note = (side: 'on' | 'off') =>
      `${TURNS} turns of ${seconds} s alternating with the other, worst p99 ${totals[side].p99} ms${totals[side].failed ? `, ${totals[side].failed} failed` : ''}`;
    return [
      { name: 'GET /dr/v1/appointment/{id}, access log on (SQLite)', value: Math.round(rate('on')), unit: 'req/s', note: note('on') },
      { name: 'GET /dr/v1/appointment/{id}, CPS_AUDIT=off (SQLite)', value: Math.round(rate('off')), unit: 'req/s', note: note('off') },
      { name: 'access log on / off (goal >= 0.95)', value: ratio, unit: 'ratio', note: 'same run, same load, same seed' },
    ];
  } finally {
    await Promise.all([servers.on.stop(), servers.off.stop()]);
    rmSync(dirs.on, { recursive: true, force: true });
    rmSync(dirs.off, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  for (const figure of await runAuditBench()) process.stdout.write(`${JSON.stringify(figure)}\n`);
}
