/**
 * `npm run bench`: the hello-world baseline and the service in the same run, loaded with autocannon,
 * then every module's scenarios; writes each figure and its ratio to the baseline into bench/RESULTS.md, replacing
 * only the tables of the sections it ran (bench/results-file.ts).
 * BENCH_SECONDS (default 10) sets the length of each HTTP load; BENCH_ONLY=a,b runs some sections.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { demoToken, load, machine, spawnServer, type Figure } from './lib.ts';
import { mergeResults } from './results-file.ts';

const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
const wanted = (section: string) => !only || only.includes(section);

const sections: Array<{ title: string; figures: Figure[] }> = [];
const started = new Date();
const loadAtStart = loadavg()[0]!;

function ratio(value: number, baseline: number): number {
  return Math.round((value / baseline) * 1000) / 1000;
}

// Baseline.
const hello = await spawnServer('bench/hello-world.ts', [], {}, '/ready');
const baseline = await load(`${hello.url}/`);
await hello.stop();
const helloWorldRps = baseline.rps;
sections.push({
  title: 'Baseline',
  figures: [
    {
      name: 'hello-world GET / (bare Fastify)',
      value: Math.round(baseline.rps),
      unit: 'req/s',
      ratio: 1,
      note: `p50 ${baseline.p50} ms, p99 ${baseline.p99} ms`,
    },
  ],
});

if (wanted('foundation')) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-'));
  try {
    // A search rate limit no load reaches: every search still takes a token from its bucket.
    const service = await spawnServer('bin/cps.js', ['serve'], {
      CPS_DATA_DIR: dataDir,
      CPS_SEARCH_RATE_LIMIT: '1000000',
      CPS_SEARCH_RATE_BURST: '1000000',
    });
    const demo = JSON.parse(readFileSync(path.join(dataDir, 'demo-credentials.json'), 'utf8'));
    const health = await load(`${service.url}/health`);
    const login = await load(`${service.url}/connect-auth/v1/account/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: demo.client_id, client_secret: demo.client_secret }),
      connections: 10,
    });
    const token = await demoToken(service.url, dataDir);
    const jwks = await load(`${service.url}/.well-known/jwks.json`, { headers: { authorization: `Bearer ${token}` } });
    // The fixed cost of an authenticated, rate-limited GET: a lab search with one small result.
    const search = await load(`${service.url}/medical-db/v1/drugs-and-labs?q=cbc&s_type=lab&limit=1`, {
      headers: { authorization: `Bearer ${token}` },
    });
    await service.stop();
    sections.push({
      title: 'Foundation (SQLite)',
      figures: [
        { name: 'cold start to /ready 200 (spawn, migrations, demo business)', value: Math.round(service.readyMs), unit: 'ms' },
        { name: 'GET /health', value: Math.round(health.rps), unit: 'req/s', ratio: ratio(health.rps, helloWorldRps), note: `p99 ${health.p99} ms` },
        {
          name: 'GET /.well-known/jwks.json',
          value: Math.round(jwks.rps),
          unit: 'req/s',
          ratio: ratio(jwks.rps, helloWorldRps),
          note: `p99 ${jwks.p99} ms`,
        },
        {
          name: 'GET drugs-and-labs?q=cbc&s_type=lab&limit=1 (bearer token, rate limit, built-in catalogue)',
          value: Math.round(search.rps),
          unit: 'req/s',
          ratio: ratio(search.rps, helloWorldRps),
          note: `p99 ${search.p99} ms, ${search.non2xx} non-2xx`,
        },
        {
          name: 'POST login (scrypt N=16384 per request, by design)',
          value: Math.round(login.rps),
          unit: 'req/s',
          ratio: ratio(login.rps, helloWorldRps),
          note: `p99 ${login.p99} ms, ${login.non2xx} non-2xx`,
        },
      ],
    });
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

// Module scenarios: each module's bench file exports one function returning its figures.
const modules: Array<{ section: string; file: string; fn: string; title: string }> = [
  { section: 'jobs', file: './jobs.ts', fn: 'runJobsBench', title: 'Background jobs' },
  { section: 'search', file: './search.ts', fn: 'runSearchBench', title: 'Drug and lab search' },
  { section: 'search-forgiveness', file: './search-forgiveness.ts', fn: 'runSearchForgivenessBench', title: 'What drug search forgives (issue 36)' },
  { section: 'appointments', file: './appointments.ts', fn: 'runAppointmentsBench', title: 'Appointments' },
  { section: 'scheduling', file: './scheduling.ts', fn: 'runSchedulingBench', title: 'Scheduling: 1,000 bookers at once on one slot (issue 19)' },
  { section: 'slots', file: './schedule-slots.ts', fn: 'runScheduleSlotsBench', title: 'Slots of the worst schedule the limits allow (issue 38)' },
  { section: 'cases', file: './cases.ts', fn: 'runCasesBench', title: 'Cases sync' },
  { section: 'patients', file: './patients.ts', fn: 'runPatientsBench', title: 'Patient search (issue 22)' },
  { section: 'postgres', file: './postgres.ts', fn: 'runPostgresBench', title: 'PostgreSQL, 2 server processes, against pgbench (issue 18)' },
  { section: 'webhooks', file: './webhooks.ts', fn: 'runWebhooksBench', title: 'Webhooks' },
  { section: 'login', file: './login.ts', fn: 'runLoginBench', title: 'Login under a flood of wrong secrets' },
  { section: 'audit', file: './audit.ts', fn: 'runAuditBench', title: 'Access log (issue 21)' },
  { section: 'documents', file: './documents.ts', fn: 'runDocumentsBench', title: 'Documents: upload, memory, listing depth (issue 34)' },
  { section: 'console', file: './console.ts', fn: 'runConsoleBench', title: 'Console (issue 35)' },
];
for (const module of modules) {
  if (!wanted(module.section) || !existsSync(path.join(import.meta.dirname, module.file))) continue;
  const imported = (await import(module.file)) as Record<string, (ctx: { helloWorldRps: number }) => Promise<Figure[]>>;
  const figures = await imported[module.fn]!({ helloWorldRps });
  sections.push({
    title: module.title,
    figures: figures.map((f) => (f.unit === 'req/s' && f.ratio === undefined ? { ...f, ratio: ratio(f.value, helloWorldRps) } : f)),
  });
}

const resultsFile = path.join(import.meta.dirname, 'RESULTS.md');
const preamble = [
  '# Benchmark results',
  '',
  'Written by `npm run bench`: a run replaces the tables of the sections it measures (`BENCH_ONLY=a,b` runs some) and keeps',
  'the rest, the notes under each table included. The line above a table names its run; a table without one is from the',
  'full run of 2026-11-26T00:00:04.668Z (2 × Intel(R) Xeon(R) Processor, 24 GiB, Node v24.21.0, linux) unless its notes say',
  'otherwise.',
  `Each HTTP load: autocannon, 10 s (BENCH_SECONDS), 50 connections unless noted, against a server in a child process on loopback.`,
  'Ratios are to the bare Fastify hello-world measured in the same run, on the same machine: the baseline of that run, or where a',
  'note says "in turns", the hello-world loaded in alternating rounds with that load and the same requests (the machine\'s speed',
  'drifts within minutes; the load generator shares the 2 cores, and paths in turn or a bearer token cost it more per request).',
  ...(existsSync(path.join(import.meta.dirname, 'SEARCH-ENGINES.md'))
    ? ['', 'The search engine comparison is in [SEARCH-ENGINES.md](SEARCH-ENGINES.md).']
    : []),
  '',
];
const run = `${started.toISOString()} (${machine()}; hello-world ${Math.round(helloWorldRps)} req/s; load average ${loadAtStart.toFixed(1)} at the start)`;
const results = mergeResults(existsSync(resultsFile) ? readFileSync(resultsFile, 'utf8') : '', preamble, run, sections);
writeFileSync(resultsFile, results);
process.stdout.write(results);
