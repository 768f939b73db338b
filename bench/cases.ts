/**
 * Cases listing: time per page at the first page and deep in a patient's history (1,000,000 cases
 * in one business, all of one patient, 20 per second of updated_at), on SQLite and on PostgreSQL.
 * Keyset paging should make depth nearly free: the deep/first ratio should stay under 1.5.
 *
 * Run alone: `node bench/cases.ts` (PostgreSQL from CPS_BENCH_DATABASE_URL, else
 * CPS_TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test; skipped if unreachable).
 * CASES_BENCH_ROWS overrides the row count.
 */
import { sql } from 'kysely';
import type { App } from '../src/http/app-type.ts';
import type { Storage } from '../src/db/index.ts';
import { CursorCodec } from '../src/modules/cases/cursor.ts';
import { inProcessService, median, round, scratchPgDatabase } from './lib.ts';

export interface BenchResult {
  name: string;
  value: number;
  unit: string;
  note?: string;
}

const ROWS = Number(process.env.CASES_BENCH_ROWS ?? 1_000_000);
const BATCH = 100_000;
const PER_SECOND = 20;
const T0 = 1_600_000_000;
const PATIENT = 'bench-patient';
const SAMPLES = 300;

/** Writes rows [from, to) with SQL alone: no row crosses into JavaScript. */
async function bulkInsert(storage: Storage, businessId: string): Promise<void> {
  const { db, dialect } = storage;
  for (let from = 0; from < ROWS; from += BATCH) {
    const to = Math.min(ROWS, from + BATCH) - 1;
    const columns = sql`(business_id, patient_ref, id, status, display_name, type, hi_type, partner_meta, occurred_at, created_at, updated_at)`;
    if (dialect === 'postgres') {
      await sql`insert into cases ${columns}
        select ${businessId}, ${PATIENT}, 'c' || lpad(i::text, 7, '0'), 'A', 'Case ' || i, 'OP', 'Prescription',
          '{"facility":"F1","hrn":"' || i || '"}', ${T0 * 1000}::bigint, (${T0} + i / ${PER_SECOND})::bigint * 1000, (${T0} + i / ${PER_SECOND})::bigint * 1000
        from generate_series(${from}::int, ${to}::int) as i`.execute(db);
    } else {
      await sql`insert into cases ${columns}
        with recursive seq(i) as (select cast(${from} as integer) union all select i + 1 from seq where i < ${to})
        select ${businessId}, ${PATIENT}, 'c' || substr('0000000' || i, -7, 7), 'A', 'Case ' || i, 'OP', 'Prescription',
          '{"facility":"F1","hrn":"' || i || '"}', ${T0 * 1000}, (${T0} + i / ${PER_SECOND}) * 1000, (${T0} + i / ${PER_SECOND}) * 1000
        from seq`.execute(db);
    }
  }
  await sql`analyze`.execute(db);
}

async function timePages(app: App, headers: Record<string, string>, urls: Record<string, string>): Promise<Record<string, number>> {
  const timings: Record<string, number[]> = Object.fromEntries(Object.keys(urls).map((k) => [k, []]));
  for (let round = 0; round < SAMPLES + 30; round++) {
    // Interleaved, so that drift on a shared machine hits every kind alike; the first rounds warm up.
    for (const [kind, url] of Object.entries(urls)) {
      const started = performance.now();
      const response = await app.inject({ method: 'GET', url, headers });
      const elapsed = performance.now() - started;
      if (response.statusCode !== 200) throw new Error(`${kind}: ${response.statusCode} ${response.body}`);
      const body = response.json() as { cases: unknown[] };
      if (body.cases.length !== 50) throw new Error(`${kind}: ${body.cases.length} cases instead of 50`);
      if (round >= 30) timings[kind]!.push(elapsed);
    }
  }
  return Object.fromEntries(Object.entries(timings).map(([kind, values]) => [kind, median(values)]));
}

async function benchDialect(databaseUrl: string | null): Promise<BenchResult[]> {
  const service = await inProcessService('cases', databaseUrl, { CPS_CASES_PAGE_SIZE: '50' });
  const { app, storage, businessId, clientId, ctx } = service;
  try {
    const loadStarted = performance.now();
    await bulkInsert(storage, businessId);
    const loadSeconds = (performance.now() - loadStarted) / 1000;

    const token = await ctx.tokens.issue(clientId, businessId, ['cases:read']);
    const headers = { authorization: `Bearer ${token}`, 'x-pt-id': PATIENT };
    // A page token 50 cases before the end, made as the service makes them.
    const depth = ROWS - 51;
    const last = await storage.db
      .selectFrom('cases')
      .select(['updated_at', 'id'])
      .where('business_id', '=', businessId)
      .where('patient_ref', '=', PATIENT)
      .where('id', '=', `c${String(depth).padStart(7, '0')}`)
      .executeTakeFirstOrThrow();
    const offset = new CursorCodec(service.masterKey).seal({ updatedAt: last.updated_at, id: last.id, updatedAfter: null }, businessId, PATIENT);
    const deepSecond = T0 + Math.floor(depth / PER_SECOND) - 1;
    const base = '/mr/api/v1/cases';
    const result = await timePages(app, headers, {
      first: base,
      deep: `${base}?offset=${encodeURIComponent(offset)}`,
      since: `${base}?u_at__gt=${deepSecond}`,
    });
    const dialect = storage.dialect;
    const note = `${ROWS.toLocaleString('en')} cases of one patient, median of ${SAMPLES} in-process HTTP requests; loaded in ${loadSeconds.toFixed(0)} s`;
    return [
      { name: `cases list: first page (${dialect})`, value: round(result.first!), unit: 'ms', note },
      { name: `cases list: page at depth ${depth.toLocaleString('en')} via next_token (${dialect})`, value: round(result.deep!), unit: 'ms' },
      { name: `cases list: page at depth via u_at__gt (${dialect})`, value: round(result.since!), unit: 'ms' },
      { name: `cases list: deep/first ratio (${dialect})`, value: round(result.deep! / result.first!), unit: 'x', note: 'should stay under 1.5' },
    ];
  } finally {
    await service.close();
  }
}

export async function runCasesBench(): Promise<BenchResult[]> {
  const results = await benchDialect(null);
  const pgDatabase = await scratchPgDatabase();
  if (!pgDatabase) {
    results.push({ name: 'cases list (postgres)', value: 0, unit: 'ms', note: 'skipped: PostgreSQL unreachable' });
    return results;
  }
  try {
    results.push(...(await benchDialect(pgDatabase.url)));
  } finally {
    await pgDatabase.drop();
  }
  return results;
}

if (import.meta.main) {
  for (const result of await runCasesBench()) {
    process.stdout.write(`${result.name}: ${result.value} ${result.unit}${result.note ? `  (${result.note})` : ''}\n`);
  }
}
