/**
 * The name search over the query set (name-queries.ts), on the database under test: every expected
 * patient among the first hits, every absent one nowhere; another business's patients never.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openStorage, type Storage } from '../../../src/db/index.ts';
import { migrateToLatest } from '../../../src/db/migrate.ts';
import { PatientNameIndex, type IndexedPatient } from '../../../src/modules/patients/name-index.ts';
import { createTestDatabase, type TestDatabase } from '../../support.ts';
import { NON_MATCHES, PATIENTS, problemsWith, QUERIES } from './name-queries.ts';

const BUSINESS = 'bs_query_set';
const OTHER = 'bs_other';

let database: TestDatabase;
let storage: Storage;
let index: PatientNameIndex;

function patient(ref: string, businessId: string): IndexedPatient {
  const p = PATIENTS.find((x) => x.ref === ref)!;
  return {
    id: `${businessId}:${p.ref}`,
    business_id: businessId,
    first_name: p.first,
    middle_name: p.middle ?? null,
    last_name: p.last ?? null,
    mobile: p.mobile ?? null,
  };
}

before(async () => {
  database = await createTestDatabase();
  storage = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir });
  await migrateToLatest(storage.db);
  index = new PatientNameIndex({ db: storage.db });
  await index.indexMany(PATIENTS.map((p) => patient(p.ref, BUSINESS)));
});

after(async () => {
  await storage.destroy();
  await database.drop();
});

async function refs(query: string, limit = 20): Promise<string[]> {
  const page = await index.search(BUSINESS, query, { limit });
  return page.hits.map((hit) => hit.patientId.slice(BUSINESS.length + 1));
}

test(`the query set: ${QUERIES.length} queries find their patients among the first hits`, async (t) => {
  assert.ok(QUERIES.length >= 60);
  const problems: string[] = [];
  let first = 0;
  let top5 = 0;
  for (const q of QUERIES) {
    const found = await refs(q.query);
    problems.push(...problemsWith(q, found));
    if (found[0] === q.expect[0]) first++;
    if (q.expect.every((ref) => found.slice(0, 5).includes(ref))) top5++;
  }
  t.diagnostic(`${first}/${QUERIES.length} with the first expected patient at rank 1, ${top5}/${QUERIES.length} with all in the top 5`);
  assert.deepEqual(problems, []);
});

test('queries that must not match', async () => {
  const problems: string[] = [];
  for (const q of NON_MATCHES) problems.push(...problemsWith(q, await refs(q.query)));
  assert.deepEqual(problems, []);
});

test('a mobile number finds the family sharing it, by prefix and written any way', async () => {
  assert.deepEqual((await refs('+91 98110 00001')).sort(), ['rajesh-sharma', 'ramesh-sharma']);
  assert.deepEqual((await refs('9811000001')).sort(), ['rajesh-sharma', 'ramesh-sharma']);
  assert.deepEqual((await refs('981100000')).sort(), ['rajesh-sharma', 'ramesh-sharma', 'sunita-sharma']);
  assert.deepEqual(await refs('98480'), ['srinivasa-rao']);
});

test('a partner id finds its patient exactly', async () => {
  const p = { ...patient('gurpreet-kaur', BUSINESS), id: `${BUSINESS}:gk2`, partner_patient_id: 'US0001' };
  await index.index(storage.db, p);
  assert.deepEqual(await refs('US0001'), ['gk2']);
  assert.deepEqual(await refs('US000'), []);
  await index.remove(storage.db, p.id);
  assert.deepEqual(await refs('US0001'), []);
});

test('re-indexing follows a changed name and mobile; archived patients only when asked', async () => {
  const p = { ...patient('jaspal-sandhu', BUSINESS), id: `${BUSINESS}:moved` };
  await index.index(storage.db, p);
  assert.ok((await refs('Jaspal Sandhu')).includes('moved'));
  await index.index(storage.db, { ...p, first_name: 'Kuldeep', mobile: '9000000099' });
  assert.ok(!(await refs('Jaspal Sandhu')).includes('moved'));
  assert.ok((await refs('Kuldip Sandhu')).includes('moved'));
  assert.deepEqual(await refs('9000000099'), ['moved']);
  await index.index(storage.db, { ...p, first_name: 'Kuldeep', archived: true });
  assert.ok(!(await refs('Kuldeep Sandhu')).includes('moved'));
  const archived = await index.search(BUSINESS, 'Kuldeep Sandhu', { limit: 5, includeArchived: true });
  assert.ok(archived.hits.some((hit) => hit.patientId.endsWith(':moved')));
  await index.remove(storage.db, p.id);
  const rows = await storage.db.selectFrom('patient_search_keys').select('key').where('business_id', '=', BUSINESS).execute();
  assert.ok(rows.every((row) => !row.key.includes('kuldeep')));
});

test('pages are slices of one ranking', async () => {
  const all = await index.search(BUSINESS, 'sharma', { limit: 50 });
  const firstPage = await index.search(BUSINESS, 'sharma', { limit: 2 });
  const secondPage = await index.search(BUSINESS, 'sharma', { limit: 2, offset: 2 });
  assert.equal(firstPage.more, true);
  assert.deepEqual([...firstPage.hits, ...secondPage.hits], all.hits.slice(0, 4));
  const last = await index.search(BUSINESS, 'sharma', { limit: 50, offset: all.hits.length - 1 });
  assert.equal(last.hits.length, 1);
  assert.equal(last.more, false);
});

test('a surname 162 patients share: an initial and the surname, or the surname begun, still find their patient', async () => {
  const CROWDED = 'bs_crowded';
  const crowd: IndexedPatient[] = [];
  for (const a of 'bdgklmnpt')
    for (const b of 'bdgklmnpt')
      for (const v of 'ai')
        crowd.push({ id: `${CROWDED}:dev-${a}${v}${b}`, business_id: CROWDED, first_name: `Dev${a}${v}${b}`, last_name: 'Sharma' });
  await index.indexMany([...crowd, ...['rajesh-sharma', 'ramesh-sharma', 'sunita-sharma'].map((ref) => patient(ref, CROWDED))]);
  const cases: Array<[query: string, first: string[]]> = [
    ['R K Sharma', ['rajesh-sharma']],
    ['R Sharma', ['rajesh-sharma', 'ramesh-sharma']],
    ['Sunita Sh', ['sunita-sharma']],
  ];
  for (const [query, first] of cases) {
    const page = await index.search(CROWDED, query, { limit: 20 });
    const found = page.hits.map((hit) => hit.patientId.slice(CROWDED.length + 1));
    assert.deepEqual(found.slice(0, first.length).sort(), first, `${query}: ${found.slice(0, 5).join(', ')}`);
  }
});

test("another business's patients are never found", async () => {
  await index.index(storage.db, { ...patient('ayesha-khan', OTHER), partner_patient_id: 'OTHER1' });
  assert.deepEqual(await refs('Ayesha Khan'), ['ayesha-khan']);
  assert.deepEqual(await refs('OTHER1'), []);
  const other = await index.search(OTHER, 'Aisha', { limit: 5 });
  assert.deepEqual(
    other.hits.map((hit) => hit.patientId),
    [`${OTHER}:ayesha-khan`],
  );
});
