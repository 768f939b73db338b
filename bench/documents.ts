/**
 * Documents (issue 34): a 1 MB upload through POST /mr/api/v2/docs against a bare Fastify route that
 * receives and discards the same multipart body (bench/upload-sink.ts), loaded in turns (goal: ratio
 * >= 0.5); the server's peak RSS while 100 uploads of 5 MB run at once (goal: < 300 MB, the files
 * being streamed, never held whole); and the listing of 10,000 documents of one patient, its last page
 * against its first (goal: ratio <= 1.5); and the business limit's count of its bytes at 100,000 files
 * against the SUM it replaced; on SQLite and on PostgreSQL.
 *
 * Run alone: `node bench/documents.ts` (PostgreSQL as in bench/cases.ts; skipped if unreachable);
 * BENCH_DOCUMENTS=upload or =listing runs one half, =memory the 5 MB uploads alone;
 * BENCH_DOCUMENTS_DB=sqlite or =postgres one database; CPS_DOCUMENTS_STORE=files or =database another store than
 * the service's default for the database (back to back, to compare them); BENCH_CPU_PROF=dir writes the service's CPU
 * profiles there (read them with bench/cpu-profile-summary.ts).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { openStorage } from '../src/db/index.ts';
import { businessBytes } from '../src/modules/documents/repo.ts';
import { demoToken, inProcessService, loadAgainstHello, median, round, scratchPgDatabase, spawnServer, type Figure } from './lib.ts';

const PATIENT = 'bench-patient';
const MB = 1024 * 1024;

/** A PDF of `bytes` bytes (the service tells the type from the first bytes): a header, filler, the end marker. */
function pdfOf(bytes: number): Buffer {
  const head = Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n', 'latin1');
  const tail = Buffer.from('\n%%EOF\n');
  const filler = randomBytes(bytes - head.length - tail.length);
  return Buffer.concat([head, filler, tail]);
}

/** A multipart/form-data body with the file in a part named file. */
function multipartOf(file: Buffer): { body: Buffer; contentType: string } {
  const boundary = `----cpsbench${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="report.pdf"\r\ncontent-type: application/pdf\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return { body: Buffer.concat([head, file, tail]), contentType: `multipart/form-data; boundary=${boundary}` };
}

function rssBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(line?.match(/(\d+)/)?.[1] ?? 0) * 1024;
}

async function uploadFigures(part: string | undefined, databaseUrl: string | null): Promise<Figure[]> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cps-bench-documents-'));
  const dialect = databaseUrl ? 'postgres' : 'sqlite';
  // The service's default unless CPS_DOCUMENTS_STORE (passed on to the server) names another.
  const store = process.env.CPS_DOCUMENTS_STORE || (databaseUrl ? 'database' : 'files');
  // A business limit far above what the load stores (several GB), so that each upload's check runs as in production.
  const env = { CPS_DATA_DIR: dataDir, CPS_DOCUMENTS_MAX_BUSINESS_MB: '1000000', ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) };
  const sink = await spawnServer('bench/upload-sink.ts', [], {}, '/ready');
  const profileDir = process.env.BENCH_CPU_PROF;
  const profiling = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(profileDir)}`] : [];
  try {
    let service = await spawnServer('bin/cps.js', ['serve'], env, '/ready', profiling);
    const token = await demoToken(service.url, dataDir);
    const headers = (contentType: string, bearer = token) => ({ authorization: `Bearer ${bearer}`, 'x-pt-id': PATIENT, 'content-type': contentType });

    const figures: Figure[] = [];
    if (part !== 'memory') {
      const oneMb = multipartOf(pdfOf(MB));
      const upload = await loadAgainstHello(sink.url, `${service.url}/mr/api/v2/docs?task=smart`, {
        method: 'POST',
        headers: headers(oneMb.contentType),
        body: oneMb.body,
        connections: 10,
        // The thumbnail jobs a turn of uploads leaves run after it: in neither side's turn.
        settle: [service.child.pid!, sink.child.pid!],
      });
      figures.push({
        name: `POST /mr/api/v2/docs, 1 MB PDF (multipart, stored encrypted, ${dialect}, ${store} store)`,
        value: Math.round(upload.rps),
        unit: 'uploads/s',
        ratio: round(upload.ratio),
        note:
          `ratio to a bare Fastify + @fastify/multipart route that discards the same body (${Math.round(upload.helloRps)} req/s), ` +
          `in turns, each once both servers are quiet; goal >= 0.5; 10 connections; p99 ${upload.p99} ms, ${upload.non2xx} non-2xx, ${upload.errors} errors`,
      });
    }
    // A fresh process for the memory figure: what the throughput load left on the heap is not its,
    // nor are the thumbnail jobs it left queued (one a document: they would run meanwhile).
    await service.stop();
    const storage = openStorage({ databaseUrl, dataDir });
    await storage.db.deleteFrom('jobs').where('kind', '=', 'documents.thumbnail').where('status', '=', 'pending').execute();
    await storage.destroy();
    service = await spawnServer('bin/cps.js', ['serve'], env);
    // Tokens are signed with a key of the process's own: the new one needs its own token.
    const freshToken = await demoToken(service.url, dataDir);
    const pid = service.child.pid!;
    const fiveMb = multipartOf(pdfOf(5 * MB));
    const idleRss = rssBytes(pid);
    let peakRss = idleRss;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, rssBytes(pid));
    }, 5);
    const started = performance.now();
    const refusals = new Map<string, number>();
    const statuses = await Promise.all(
      Array.from({ length: 100 }, async () => {
        try {
          const response = await fetch(`${service.url}/mr/api/v2/docs?task=smart`, {
            method: 'POST',
            headers: headers(fiveMb.contentType, freshToken),
            body: new Uint8Array(fiveMb.body),
          });
          const text = await response.text();
          if (response.status !== 200)
            refusals.set(`${response.status} ${text.slice(0, 200)}`, (refusals.get(`${response.status} ${text.slice(0, 200)}`) ?? 0) + 1);
          return response.status;
        } catch (error) {
          const cause = String((error as { cause?: unknown }).cause ?? error);
          refusals.set(cause, (refusals.get(cause) ?? 0) + 1);
          return 0;
        }
      }),
    );
    if (refusals.size > 0) process.stderr.write(`documents bench, 5 MB uploads refused: ${JSON.stringify([...refusals])}\n`);
    const seconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    peakRss = Math.max(peakRss, rssBytes(pid));
    await service.stop();
    const failed = statuses.filter((s) => s !== 200).length;
    figures.push({
      name: `100 uploads of 5 MB at once: peak RSS of the server (${dialect})`,
      value: Math.round(peakRss / MB),
      unit: 'MB',
      note: `goal < 300 MB; ${Math.round(idleRss / MB)} MB before; all done in ${seconds.toFixed(1)} s; ${failed} not 200`,
    });
    return figures;
  } finally {
    await sink.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const DOCUMENTS = 10_000;
const SAMPLES = 200;

async function listingFigures(databaseUrl: string | null): Promise<Figure[]> {
  const service = await inProcessService('documents-list', databaseUrl);
  const { app, storage, businessId, clientId, ctx } = service;
  try {
    // 10,000 active documents, 10 per second of updated_at, in seconds long over.
    const t0 = 1_600_000_000_000;
    for (let from = 0; from < DOCUMENTS; from += 500) {
      const rows = Array.from({ length: Math.min(500, DOCUMENTS - from) }, (_, k) => {
        const i = from + k;
        const at = t0 + Math.floor(i / 10) * 1000;
        return {
          business_id: businessId,
          id: `d${String(i).padStart(6, '0')}`,
          patient_ref: PATIENT,
          status: 'A',
          source: 'api',
          dt: 'lr',
          document_date: null,
          tags: '["bench"]',
          title: `Report ${i}`,
          cases: '[]',
          task: null,
          created_at: at,
          updated_at: at,
          upload_until: null,
        };
      });
      await storage.db.insertInto('documents').values(rows).execute();
    }
    const token = await ctx.tokens.issue(clientId, businessId, ['documents:read']);
    const headers = { authorization: `Bearer ${token}`, 'x-pt-id': PATIENT };
    const base = '/mr/api/v1/docs';
    // Walk to the last page once, as a syncing client does, keeping its token.
    let lastUrl = base;
    let pages = 0;
    for (let url: string | null = base; url !== null; pages++) {
      const response = await app.inject({ method: 'GET', url, headers });
      if (response.statusCode !== 200) throw new Error(`${response.statusCode} ${response.body}`);
      const body = response.json() as { next_token: string | null };
      lastUrl = url;
      url = body.next_token === null ? null : `${base}?offset=${encodeURIComponent(body.next_token)}`;
    }
    const timings: Record<'first' | 'last', number[]> = { first: [], last: [] };
    for (let sample = 0; sample < SAMPLES + 20; sample++) {
      // Interleaved, so that drift on a shared machine hits both alike; the first rounds warm up.
      for (const [kind, url] of [
        ['first', base],
        ['last', lastUrl],
      ] as const) {
        const begun = performance.now();
        const response = await app.inject({ method: 'GET', url, headers });
        const elapsed = performance.now() - begun;
        if (response.statusCode !== 200) throw new Error(`${kind}: ${response.statusCode}`);
        if (sample >= 20) timings[kind].push(elapsed);
      }
    }
    const first = median(timings.first);
    const last = median(timings.last);
    const dialect = storage.dialect;
    return [
      {
        name: `documents list: first page (${dialect})`,
        value: round(first),
        unit: 'ms',
        note: `${DOCUMENTS.toLocaleString('en')} documents of one patient, ${pages} pages of ${ctx.config.documents.pageSize}; median of ${SAMPLES} in-process requests`,
      },
      { name: `documents list: last page via next_token (${dialect})`, value: round(last), unit: 'ms' },
      { name: `documents list: last/first ratio (${dialect})`, value: round(last / first), unit: 'x', note: 'goal <= 1.5' },
    ];
  } finally {
    await service.close();
  }
}

const COUNTED_FILES = 100_000;

/**
 * The business limit's count (repo.businessBytes, a running total kept by triggers) at 100,000 files
 * of one business, against the SUM over its files that it replaced, measured in the same run.
 */
async function businessBytesFigures(databaseUrl: string | null): Promise<Figure[]> {
  const service = await inProcessService('documents-bytes', databaseUrl);
  const { storage, businessId } = service;
  const db = storage.db;
  try {
    const now = Date.now();
    const ids = Array.from({ length: COUNTED_FILES }, (_, i) => `f${String(i).padStart(6, '0')}`);
    for (let from = 0; from < COUNTED_FILES; from += 500) {
      const some = ids.slice(from, from + 500);
      await db
        .insertInto('documents')
        .values(
          some.map((id) => ({
            ...{ business_id: businessId, id, patient_ref: PATIENT, status: 'A', source: 'api', dt: 'lr', document_date: null },
            ...{ tags: '[]', title: null, cases: '[]', task: null, created_at: now, updated_at: now, upload_until: null },
          })),
        )
        .execute();
    }
    // Fresh statistics, so that the file rows' foreign key checks plan on the documents as they are.
    await sql`analyze documents`.execute(db);
    for (let from = 0; from < COUNTED_FILES; from += 500) {
      const some = ids.slice(from, from + 500);
      await db
        .insertInto('document_files')
        .values(
          some.map((id) => ({
            ...{ business_id: businessId, document_id: id, idx: 0, form_id: `form-${id}`, state: 'stored', content_type: 'application/pdf' },
            ...{ declared_size: null, size: MB, file_name: null, store: 'files', storage_key: id, claimed_at: null, stored_at: now },
          })),
        )
        .execute();
    }
    await sql`analyze document_files`.execute(db);
    const summed = () =>
      db
        .selectFrom('document_files')
        .select((eb) => eb.fn.sum<number | string | null>(eb.fn.coalesce('size', 'declared_size')).as('bytes'))
        .where('business_id', '=', businessId)
        .where('state', '<>', 'removing')
        .executeTakeFirst();
    const timings: Record<'counted' | 'summed', number[]> = { counted: [], summed: [] };
    for (let sample = 0; sample < 60; sample++) {
      // Interleaved, the first rounds a warm-up, as the listing's.
      let begun = performance.now();
      const counted = await businessBytes(db, businessId);
      const countedMs = performance.now() - begun;
      begun = performance.now();
      const sum = Number((await summed())?.bytes ?? 0);
      const summedMs = performance.now() - begun;
      if (counted !== COUNTED_FILES * MB || sum !== counted) throw new Error(`counted ${counted}, summed ${sum}`);
      if (sample >= 10) {
        timings.counted.push(countedMs);
        timings.summed.push(summedMs);
      }
    }
    const counted = median(timings.counted);
    const summedMs = median(timings.summed);
    return [
      {
        name: `business limit's count of its bytes, ${COUNTED_FILES.toLocaleString('en')} files (${storage.dialect})`,
        value: round(counted),
        unit: 'ms',
        ratio: round(counted / summedMs),
        note: `ratio to the SUM over the business's files it replaced (${round(summedMs)} ms), in the same run; median of 50 in-process reads`,
      },
    ];
  } finally {
    await service.close();
  }
}

export async function runDocumentsBench(): Promise<Figure[]> {
  const part = process.env.BENCH_DOCUMENTS;
  const uploads = part !== 'listing';
  const listing = part === undefined || part === 'listing';
  const figures: Figure[] = [];
  const only = process.env.BENCH_DOCUMENTS_DB;
  if (only !== 'postgres') {
    if (uploads) figures.push(...(await uploadFigures(part, null)));
    if (listing) figures.push(...(await listingFigures(null)), ...(await businessBytesFigures(null)));
  }
  if (only === 'sqlite') return figures;
  const runs = [uploads && ((url: string) => uploadFigures(part, url)), listing && listingFigures, listing && businessBytesFigures];
  for (const run of runs) {
    if (!run) continue;
    // A database of its own for each: the listing counts on a patient with no other documents.
    const pgDatabase = await scratchPgDatabase();
    if (!pgDatabase) {
      figures.push({ name: 'documents (postgres)', value: 0, unit: 'ms', note: 'skipped: PostgreSQL unreachable' });
      return figures;
    }
    try {
      figures.push(...(await run(pgDatabase.url)));
    } finally {
      await pgDatabase.drop();
    }
  }
  return figures;
}

if (import.meta.main) {
  for (const figure of await runDocumentsBench()) {
    process.stdout.write(
      `${figure.name}: ${figure.value} ${figure.unit}${figure.ratio ? ` ratio ${figure.ratio}` : ''}${figure.note ? `  (${figure.note})` : ''}\n`,
    );
  }
}
