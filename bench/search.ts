/**
 * Drug and lab search at 250,000 products (the real catalogues plus a synthetic corpus made from them,
 * see search-corpus.ts). Figures, with the goals of issue 4:
 *
 * - in-process query p50/p99 over the relevance query set and as-you-type prefixes (goal p99 <= 1 ms);
 * - index build time from records;
 * - a server process on SQLite holding the 250k catalogue: time from spawn to /ready 200 (goal <= 3 s)
 *   with no index snapshot anywhere, after `cps migrate` stored one in the database, and on a restart
 *   (reading its snapshot file); resident memory after load (goal <= 350 MB), and HTTP search
 *   throughput against the hello-world of the same run
 *   (goal >= 50 %), the hello-world loaded in turns with each search load: one brand, one typo, and the
 *   whole query set in turn, with the response cache and without it;
 * - imports into the running server: how soon new products are found, and the slowest /health meanwhile.
 *
 * Run alone: `node bench/search.ts` (SEARCH_BENCH_PRODUCTS overrides 250000).
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openStorage } from '../src/db/index.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { createLogger } from '../src/logger.ts';
import { Catalogue } from '../src/modules/search/catalogue/catalogue.ts';
import { snapshotFileFor } from '../src/modules/search/catalogue/snapshots.ts';
import type { SearchIndex } from '../src/modules/search/index/engine.ts';
import { highlight, highlightRanges } from '../src/modules/search/index/highlight.ts';
import { drugResponse, type DrugInput, type DrugRecord, type LabRecord } from '../src/modules/search/index/model.ts';
import { parseQuery } from '../src/modules/search/index/query.ts';
import { insertDrugs } from '../src/modules/search/repo.ts';
import { CatalogueImporter, newDrugRow } from '../src/modules/search/ingest/importer.ts';
import { QUERIES } from '../test/modules/search/queries.ts';
import { demoToken, load, loadAgainstHello, runCommand, spawnServer, type ComparedLoad } from './lib.ts';
import { realDrugs, realLabs, syntheticCorpus } from './search-corpus.ts';

export interface BenchFigure {
  name: string;
  value: number;
  unit: string;
  /** Ratio to the hello-world loaded in turns with it (loadAgainstHello). */
  ratio?: number;
  note?: string;
}

const PRODUCTS = Number(process.env.SEARCH_BENCH_PRODUCTS ?? 250_000);
/** New products imported into the running server: one update taken in place, one that makes a rebuild due. */
const SMALL_IMPORT = 10_000;
const LARGE_IMPORT = 80_000;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const round = (value: number, digits = 3) => Math.round(value * 10 ** digits) / 10 ** digits;

/** Queries as a prescriber types them: the relevance set, and brand names typed letter by letter. */
export function benchQueries(): Array<{ q: string; lab: boolean }> {
  const out = Object.values(QUERIES)
    .flat()
    .map((c) => ({ q: c.q, lab: !!c.lab }));
  for (const word of ['augmentin 625', 'paracetamol', 'montair lc', 'glycomet gp', 'azithromycin']) {
    for (let i = 1; i <= word.length; i++) out.push({ q: word.slice(0, i), lab: false });
  }
  return out;
}

/** What the handler does per request: parse, search, build the response with highlights. */
function searchOnce(drugs: SearchIndex<DrugRecord>, labs: SearchIndex<LabRecord>, q: string, lab: boolean): number {
  const query = parseQuery(q);
  if (lab) return labs.search(query, 10).length;
  return drugs.search(query, 10).map((hit) => {
    const highlighted: Record<string, string> = {};
    for (const [field, text] of [
      ['name', hit.record.name],
      ['generic_name', hit.record.generic_name],
    ] as const) {
      const ranges = highlightRanges(text, query, hit.typoMatches, field === 'name' && hit.namePrefix);
      if (ranges.length > 0) highlighted[field] = highlight(text, ranges);
    }
    return drugResponse(hit.record, hit.exact, highlighted);
  }).length;
}

export function measureQueries(
  drugs: SearchIndex<DrugRecord>,
  labs: SearchIndex<LabRecord>,
  rounds = 10,
): { p50: number; p99: number; max: number; samples: number } {
  const queries = benchQueries();
  // Warm-up (the optimising compiler, and the collection of what loading left behind), then the measured rounds.
  for (let i = 0; i < rounds; i++) for (const { q, lab } of queries) searchOnce(drugs, labs, q, lab);
  const times: number[] = [];
  for (let r = 0; r < rounds; r++) {
    for (const { q, lab } of queries) {
      const started = performance.now();
      searchOnce(drugs, labs, q, lab);
      times.push(performance.now() - started);
    }
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99), max: times[times.length - 1]!, samples: times.length };
}

async function demoHeaders(url: string, dataDir: string): Promise<Record<string, string>> {
  return { authorization: `Bearer ${await demoToken(url, dataDir)}` };
}

function rssMb(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: Math.round(kb('VmRSS') / 1024), hwm: Math.round(kb('VmHWM') / 1024) };
}

/**
 * An import into the catalogue of a running server: `products` new rows committed as one new version
 * (as `cps import` commits), then the time until a search finds the last of them, and the slowest
 * /health answer meanwhile (how long the server's event loop was held).
 */
async function importWhileServing(
  url: string,
  headers: Record<string, string>,
  dataDir: string,
  inputs: DrugInput[],
): Promise<{ visibleMs: number; slowestHealthMs: number; healthChecks: number }> {
  const storage = openStorage({ databaseUrl: null, dataDir });
  const last = inputs[inputs.length - 1]!.name;
  const found = async () => {
    const response = await fetch(`${url}/medical-db/v1/drugs-and-labs?q=${encodeURIComponent(last)}&limit=5`, { headers });
    return ((await response.json()) as { drugs: Array<{ name: string }> }).drugs.some((drug) => drug.name === last);
  };
  try {
    assert.equal(await found(), false);
    const now = Date.now();
    await storage.db.transaction().execute(async (trx) => {
      const { version } = await trx
        .updateTable('catalogue_meta')
        .set((eb) => ({ version: eb('version', '+', 1) }))
        .where('id', '=', 1)
        .returning('version')
        .executeTakeFirstOrThrow();
      await insertDrugs(
        trx,
        inputs.map((input) => newDrugRow(input, Number(version), now)),
      );
    });
    const committed = performance.now();
    let visible = false;
    let slowestHealthMs = 0;
    let healthChecks = 0;
    const health = (async () => {
      while (!visible) {
        const started = performance.now();
        await fetch(`${url}/health`);
        slowestHealthMs = Math.max(slowestHealthMs, performance.now() - started);
        healthChecks++;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    while (!(await found())) await new Promise((resolve) => setTimeout(resolve, 50));
    const visibleMs = performance.now() - committed;
    visible = true;
    await health;
    return { visibleMs, slowestHealthMs, healthChecks };
  } finally {
    await storage.destroy();
  }
}

/** The index alone, loaded from the database as a server loads it, then queried in this process. */
async function inProcessFigures(dataDir: string, note: string, labCount: number): Promise<BenchFigure[]> {
  const storage = openStorage({ databaseUrl: null, dataDir });
  const catalogue = new Catalogue(storage.db, createLogger('silent'), { builtin: false, pollIntervalMs: 3_600_000 });
  const built = performance.now();
  await catalogue.start();
  const buildMs = performance.now() - built;
  await catalogue.stop();
  await storage.destroy();
  const latency = measureQueries(catalogue.drugs, catalogue.labs);
  // Returning lets the index go: the HTTP loads that follow run autocannon in this process, and a
  // load generator with a 250k-product heap to collect would slow down the measurement.
  return [
    { name: 'index load and build (in process, from the database)', value: Math.round(buildMs), unit: 'ms', note: `${note}, ${labCount} lab tests` },
    {
      name: 'query p50 (in process: parse, search, response)',
      value: round(latency.p50),
      unit: 'ms',
      note: `${latency.samples} samples of ${benchQueries().length} queries`,
    },
    {
      name: 'query p99 (in process; goal <= 1 ms)',
      value: round(latency.p99),
      unit: 'ms',
      note: `max ${round(latency.max)} ms; ${latency.p99 <= 1 ? 'met' : 'NOT met'}`,
    },
  ];
}

export async function runSearchBench(_ctx: { helloWorldRps: number }): Promise<BenchFigure[]> {
  const figures: BenchFigure[] = [];
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cps-search-bench-'));
  try {
    // The catalogue goes into a SQLite database first; the generated objects are then let go, so the
    // in-process figures are not taken amid a heap of half a million objects a server does not have.
    const { note, labCount } = await (async () => {
      const real = await realDrugs();
      const corpus = syntheticCorpus(real, PRODUCTS);
      const labInputs = await realLabs();
      const now = Date.now();
      const storage = openStorage({ databaseUrl: null, dataDir });
      await migrateToLatest(storage.db);
      await storage.db.transaction().execute(async (trx) => {
        await insertDrugs(
          trx,
          corpus.map((input) => newDrugRow(input, 1, now)),
        );
        await trx.updateTable('catalogue_meta').set({ version: 1 }).where('id', '=', 1).execute();
      });
      await new CatalogueImporter({ db: storage.db }).importLabs(labInputs, 'bench');
      await storage.destroy();
      return {
        note: `${corpus.length.toLocaleString('en')} products (${real.length.toLocaleString('en')} real, the rest synthetic)`,
        labCount: labInputs.length,
      };
    })();
    figures.push(...(await inProcessFigures(dataDir, note, labCount)));

    // Server processes on SQLite with the whole catalogue. Each start imports the built-in catalogue
    // (mostly there already: a few changes to apply after reading a snapshot).
    const env = { CPS_DATA_DIR: dataDir, CPS_SEARCH_RATE_LIMIT: '1000000', CPS_SEARCH_RATE_BURST: '1000000' };
    const paths = benchQueries().map(({ q, lab }) => `/medical-db/v1/drugs-and-labs?q=${encodeURIComponent(q)}${lab ? '&s_type=lab' : ''}`);
    /** A start, then a 3 s search load and its resident memory. */
    const startAndLoad = async () => {
      const started = await spawnServer('bin/cps.js', ['serve'], env);
      await load(started.url, { headers: await demoHeaders(started.url, dataDir), paths, seconds: 3 });
      const memory = rssMb(started.child.pid!);
      await started.stop();
      return { readyMs: started.readyMs, memory };
    };
    // No snapshot anywhere (as after a release that changed the search code): the builder process builds
    // the index and writes its snapshot to the file and the database.
    const unsnapshotted = await startAndLoad();
    // A first start of a release whose search code cannot read the stored snapshot, deployed as the
    // docs/5-api.md says: `cps migrate` first, which builds and stores one (as `cps import` does after a large
    // import); the server, on another machine (no snapshot file), reads the stored one and writes its file.
    const storage = openStorage({ databaseUrl: null, dataDir });
    try {
      await storage.db.deleteFrom('search_snapshots').execute();
      rmSync(snapshotFileFor(dataDir, null));
    } finally {
      await storage.destroy();
    }
    const migrateStarted = performance.now();
    const migrate = await runCommand('bin/cps.js', ['migrate'], env);
    const migrateMs = performance.now() - migrateStarted;
    assert.equal((JSON.parse(migrate) as { index_snapshot_stored: boolean }).index_snapshot_stored, true);
    // The server starts on another machine: the command's snapshot file is not there.
    rmSync(snapshotFileFor(dataDir, null));
    const first = await startAndLoad();
    // Throughput is compared with a hello-world loaded in turns with each search load.
    const hello = await spawnServer('bench/hello-world.ts', [], {}, '/ready');
    // Restart: reads the snapshot.
    const server = await spawnServer('bin/cps.js', ['serve'], env);
    const verdict = (result: ComparedLoad) => (result.ratio >= 0.5 ? 'met' : 'NOT met');
    const throughput = (name: string, result: ComparedLoad, note: string): BenchFigure => ({
      name,
      value: Math.round(result.rps),
      unit: 'req/s',
      ratio: round(result.ratio),
      note: `hello-world in turns with it, same requests: ${Math.round(result.helloRps)} req/s; p50 ${result.p50} ms, p99 ${result.p99} ms, ${result.non2xx} non-2xx${note}`,
    });
    try {
      const headers = await demoHeaders(server.url, dataDir);
      const afterLoad = rssMb(server.child.pid!);
      // Warm-up (the optimising compiler, the collection of what the start left behind), not measured.
      await load(`${hello.url}/`, { seconds: 2 });
      await load(server.url, { headers, paths, seconds: 3 });
      const brand = await loadAgainstHello(hello.url, `${server.url}/medical-db/v1/drugs-and-labs?q=augmentin%20625`, { headers });
      const typo = await loadAgainstHello(hello.url, `${server.url}/medical-db/v1/drugs-and-labs?q=paracitamol`, { headers });
      const mix = await loadAgainstHello(hello.url, server.url, { headers, paths });
      const memory = rssMb(server.child.pid!);
      // Imports while it serves: a small one taken as an update, a large one rebuilt in the builder process.
      const imported = syntheticCorpus(await realDrugs(), PRODUCTS + SMALL_IMPORT + LARGE_IMPORT).slice(PRODUCTS);
      for (const inputs of [imported.slice(0, SMALL_IMPORT), imported.slice(SMALL_IMPORT)]) {
        const result = await importWhileServing(server.url, headers, dataDir, inputs);
        figures.push({
          name: `import of ${inputs.length.toLocaleString('en')} new products into the running server: searchable after`,
          value: Math.round(result.visibleMs),
          unit: 'ms',
          note: `slowest of ${result.healthChecks} GET /health meanwhile: ${Math.round(result.slowestHealthMs)} ms; the server polls the catalogue version every 2 s`,
        });
      }
      const met = (ms: number) => (ms <= 3000 ? 'met' : 'NOT met');
      figures.push({
        name: 'server start to /ready 200, restart (goal <= 3 s)',
        value: Math.round(server.readyMs),
        unit: 'ms',
        note: `reads its index snapshot file; ${met(server.readyMs)}`,
      });
      figures.push({
        name: 'server start to /ready 200, first start of a release after cps migrate, or after cps import (goal <= 3 s)',
        value: Math.round(first.readyMs),
        unit: 'ms',
        note: `no snapshot file: reads the snapshot that \`cps migrate\` (${Math.round(migrateMs)} ms, as a command) stored in the database; ${met(first.readyMs)}`,
      });
      figures.push({
        name: 'server start to /ready 200, no snapshot anywhere (goal <= 3 s)',
        value: Math.round(unsnapshotted.readyMs),
        unit: 'ms',
        note: `as after a release that changed the search code, started without \`cps migrate\`: the builder process builds the index; ${met(unsnapshotted.readyMs)}`,
      });
      const largest = Math.max(memory.rss, first.memory.rss, unsnapshotted.memory.rss);
      figures.push({
        name: 'server resident memory after load (goal <= 350 MB)',
        value: largest,
        unit: 'MB',
        note: `the largest of, after a 3 s search load: the process whose index the builder process built, ${unsnapshotted.memory.rss} MB (peak ${unsnapshotted.memory.hwm}); the one that read the stored snapshot, ${first.memory.rss} MB (peak ${first.memory.hwm}); and the restarted one after the HTTP loads above, ${memory.rss} MB (${afterLoad.rss} MB before them, peak ${memory.hwm}); ${largest <= 350 ? 'met' : 'NOT met'}`,
      });
      figures.push(throughput('GET drugs-and-labs?q=augmentin 625 (goal >= 50 % of hello-world)', brand, `; ${verdict(brand)}`));
      figures.push(throughput('GET drugs-and-labs?q=paracitamol (typo tolerance)', typo, `; ${verdict(typo)}`));
      figures.push(
        throughput(
          `GET drugs-and-labs, ${paths.length} queries in turn (relevance set, typed prefixes)`,
          mix,
          ` (404s expected for a few prefixes); ${verdict(mix)}`,
        ),
      );
    } finally {
      await server.stop();
    }
    // The same mix with the response cache off: every request searches.
    const uncached = await spawnServer('bin/cps.js', ['serve'], { ...env, CPS_SEARCH_CACHE_MB: '0' });
    try {
      const headers = await demoHeaders(uncached.url, dataDir);
      await load(uncached.url, { headers, paths, seconds: 3 });
      const mix = await loadAgainstHello(hello.url, uncached.url, { headers, paths });
      figures.push(throughput(`GET drugs-and-labs, ${paths.length} queries in turn, response cache off`, mix, '; every request searches'));
    } finally {
      await uncached.stop();
    }
    // The services above log at warn (spawnServer's default); LOG_LEVEL's default is info, a line per request.
    const logging = await spawnServer('bin/cps.js', ['serve'], { ...env, LOG_LEVEL: 'info' });
    try {
      const headers = await demoHeaders(logging.url, dataDir);
      await load(logging.url, { headers, paths, seconds: 3 });
      const brand = await loadAgainstHello(hello.url, `${logging.url}/medical-db/v1/drugs-and-labs?q=augmentin%20625`, { headers });
      figures.push(throughput('GET drugs-and-labs?q=augmentin 625 at LOG_LEVEL=info (the default)', brand, '; the log goes to /dev/null here'));
    } finally {
      await logging.stop();
      await hello.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  return figures;
}

if (import.meta.main) {
  for (const figure of await runSearchBench({ helloWorldRps: 0 }))
    console.log(
      `${figure.name}: ${figure.value} ${figure.unit}${figure.ratio !== undefined ? ` (${figure.ratio} of hello-world)` : ''}${figure.note ? ` (${figure.note})` : ''}`,
    );
}
