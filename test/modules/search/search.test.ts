/** GET /medical-db/v1/drugs-and-labs: fields, ranking rules, errors and security (contract section 3). */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bearer, createTestClient } from '../../support.ts';
import { CatalogueImporter } from '../../../src/modules/search/ingest/importer.ts';
import { createSearchApp, type SearchApp } from './support.ts';

const URL_ = '/medical-db/v1/drugs-and-labs';

function assertGenericErr(body: any, status: number, mentions?: string) {
  assert.deepEqual(Object.keys(body).sort(), ['code', 'details', 'error']);
  assert.equal(body.code, status);
  assert.equal(body.details, null);
  assert.equal(typeof body.error, 'string');
  if (mentions) assert.match(body.error, new RegExp(mentions));
}

describe('search: happy path', () => {
  let t: SearchApp;
  before(async () => {
    t = await createSearchApp();
  });
  after(() => t.close());

  it('returns drugs with every field of interface 2.1 and 2.2', async () => {
    const { status, body, headers } = await t.search({ q: 'Dolo 650 Tablet' });
    assert.equal(status, 200);
    assert.deepEqual(body.lab_tests, []);
    assert.equal(headers['cache-control'], 'no-store');
    const drug = body.drugs[0];
    assert.equal(drug.name, 'Dolo 650 Tablet');
    assert.equal(drug.drug_name_match, true);
    assert.match(drug.id, /^drg_/);
    assert.equal(typeof drug.manufacturer_name, 'string');
    assert.equal(drug.product_type, 'tablet');
    assert.equal(drug.generic_name, 'Paracetamol (650mg)');
    assert.equal(drug.common_name, 'Paracetamol');
    assert.match(drug.generic_id, /^gen_[0-9a-f]{16}$/);
    assert.equal(drug.soa, false);
    assert.equal(drug.include_suggestion, true);
    assert.ok(drug.is_otc === true || drug.is_otc === null);
    assert.deepEqual(Object.keys(drug.dosage).sort(), ['days', 'df_id', 'dosage', 'dosage_form', 'food', 'unit', 'unit_id', 'unit_name']);
    assert.equal(drug.dosage.dosage_form, 'Tablet');
    assert.equal(drug.dosage.df_id, 'df_tablet');
    assert.equal(drug.dosage.dosage, null);
    assert.equal(drug.dosage.days, null);
    assert.equal(drug.dosage.food, null);
    assert.equal(drug.highlighted_fields.name, '<em>Dolo</em> <em>650</em> <em>Tablet</em>');
  });

  it('treats case, spaces and hyphens alike and splits letters from digits', async () => {
    for (const q of ['PAN40', 'pan-40', 'Pan 40']) {
      const { body } = await t.search({ q });
      assert.equal(body.drugs[0].name, 'Pan 40 Tablet', q);
    }
    const { body } = await t.search({ q: 'zerodol sp' });
    assert.equal(body.drugs[0].name, 'Zerodol-SP Tablet');
    const exact = await t.search({ q: 'ZERODOL SP tablet' });
    assert.equal(exact.body.drugs[0].drug_name_match, true);
  });

  it('shares generic_id between products with the same composition only', async () => {
    const pan = (await t.search({ q: 'Pan 40 Tablet' })).body.drugs[0];
    const other = (await t.search({ q: 'Pantafix 40 Tablet' })).body.drugs[0];
    const panD = (await t.search({ q: 'Pan-D Capsule' })).body.drugs[0];
    assert.equal(pan.generic_id, other.generic_id);
    assert.notEqual(pan.generic_id, panD.generic_id);
    assert.equal(panD.common_name, 'Pantoprazole + Domperidone');
    assert.equal(panD.product_type, 'capsule');
  });

  it('escapes HTML in highlighted fields and wraps only matched parts', async () => {
    const { body } = await t.search({ q: 'tixylix' });
    assert.equal(body.drugs[0].highlighted_fields.name, '<em>Tixylix</em> Cough &amp; Cold &lt;Kids&gt; Syrup');
    const generic = (await t.search({ q: 'chlorphen' })).body.drugs.find((d: any) => d.name.startsWith('Tixylix'));
    assert.match(generic.highlighted_fields.generic_name, /^<em>Chlorphen<\/em>iramine Maleate \(2mg\/5ml\)/);
  });

  it('puts discontinued products after active ones, except an exact name', async () => {
    const { body } = await t.search({ q: 'cetirizine', limit: 100 });
    const names = body.drugs.map((d: any) => d.name);
    const old = names.indexOf('Oldcetz 10 Tablet');
    assert.ok(old > names.indexOf('Cetzine 10mg Tablet'));
    assert.ok(
      body.drugs.slice(old).every((d: any) => d.include_suggestion === false),
      'only discontinued after it',
    );
    const exact = await t.search({ q: 'oldcetz 10 tablet' });
    assert.equal(exact.body.drugs[0].name, 'Oldcetz 10 Tablet');
    assert.equal(exact.body.drugs[0].include_suggestion, false);
    assert.equal(exact.body.drugs[0].drug_name_match, true);
  });

  it('honours limit, default 10', async () => {
    assert.equal((await t.search({ q: 'tablet', limit: 2 })).body.drugs.length, 2);
    assert.ok((await t.search({ q: 'tablet' })).body.drugs.length <= 10);
  });

  it('searches lab tests by name and abbreviation with s_type=lab', async () => {
    const { status, body } = await t.search({ q: 'cbc', s_type: 'lab' });
    assert.equal(status, 200);
    assert.deepEqual(body.drugs, []);
    const lab = body.lab_tests[0];
    assert.match(lab.name, /complete blood count/i);
    assert.deepEqual(Object.keys(lab).sort(), ['category', 'description', 'id', 'name', 'preparation', 'price']);
    assert.equal(typeof lab.price, 'number');
    assert.match((await t.search({ q: 'HbA1c', s_type: 'lab' })).body.lab_tests[0].name, /HbA1c/);
  });

  it('answers 404 with empty lists when nothing matches', async () => {
    for (const s_type of ['drug', 'lab']) {
      const { status, body } = await t.search({ q: 'qqqzzzxxx', s_type });
      assert.equal(status, 404);
      assert.deepEqual(body, { drugs: [], lab_tests: [] });
    }
  });

  it('reports the index in /ready', async () => {
    const response = await t.app.inject({ url: '/ready' });
    assert.equal(response.statusCode, 200);
    assert.equal(response.json().checks.search, true);
  });

  it('answers a repeated query (in any spelling) the same from the response cache, and drops it when the catalogue changes', async () => {
    const first = await t.search({ q: 'cachezole' });
    assert.equal(first.status, 404);
    assert.deepEqual(first.body, { drugs: [], lab_tests: [] });
    const dolo = await t.search({ q: 'dolo 650' });
    for (const q of ['dolo 650', 'DOLO-650', '  Dolo650 ']) {
      const again = await t.search({ q });
      assert.equal(again.status, 200);
      assert.equal(again.headers['content-type'], 'application/json; charset=utf-8');
      assert.deepEqual(again.body, dolo.body);
    }
    await new CatalogueImporter({ db: t.ctx.storage.db }).importDrugs(
      [{ name: 'Cachezole 5 Tablet', manufacturer_name: 'Cache Labs', composition: [{ salt: 'Cachezole', strength: '5mg' }] }],
      'test',
    );
    await t.modules.search.catalogue.refresh();
    const after = await t.search({ q: 'cachezole' });
    assert.equal(after.status, 200);
    assert.deepEqual(
      after.body.drugs.map((d: { name: string }) => d.name),
      ['Cachezole 5 Tablet'],
    );
  });
});

describe('search: errors', () => {
  let t: SearchApp;
  before(async () => {
    t = await createSearchApp({ files: [] });
  });
  after(() => t.close());

  const cases: Array<[string, Record<string, string | number>, string]> = [
    ['missing q', {}, 'q'],
    ['blank q', { q: '   ' }, 'q'],
    ['q over 200 characters', { q: 'a'.repeat(201) }, 'q'],
    ['limit 0', { q: 'dolo', limit: 0 }, 'limit'],
    ['limit 101', { q: 'dolo', limit: 101 }, 'limit'],
    ['limit not a number', { q: 'dolo', limit: 'ten' }, 'limit'],
    ['limit not an integer', { q: 'dolo', limit: '2.5' }, 'limit'],
    ['unknown s_type', { q: 'dolo', s_type: 'food' }, 's_type'],
  ];
  for (const [name, query, field] of cases) {
    it(`400 GenericErr naming the parameter: ${name}`, async () => {
      const { status, body } = await t.search(query);
      assert.equal(status, 400);
      assertGenericErr(body, 400, field);
    });
  }

  it('answers 404 GenericErr on an unknown path under /medical-db', async () => {
    const response = await t.app.inject({ url: '/medical-db/v1/nothing', headers: bearer(t.client.token) });
    assert.equal(response.statusCode, 404);
    assertGenericErr(response.json(), 404);
  });
});

describe('search: security and rate limit', () => {
  let t: SearchApp;
  before(async () => {
    t = await createSearchApp({ env: { CPS_SEARCH_RATE_LIMIT: '1', CPS_SEARCH_RATE_BURST: '3' } });
  });
  after(() => t.close());

  it('401 without a token or with a bad one, 403 without the search scope (before input checks)', async () => {
    const none = await t.app.inject({ url: `${URL_}?limit=0` });
    assert.equal(none.statusCode, 401);
    assertGenericErr(none.json(), 401);
    const bad = await t.search({ limit: 0 }, 'not-a-token');
    assert.equal(bad.status, 401);
    const other = await createTestClient(t.ctx, { scopes: ['cases:read'] });
    const forbidden = await t.search({ limit: 0 }, other.token);
    assert.equal(forbidden.status, 403);
    assertGenericErr(forbidden.body, 403);
  });

  it('accepts the raw token in the auth header', async () => {
    const client = await createTestClient(t.ctx, { scopes: ['search'] });
    const response = await t.app.inject({ url: `${URL_}?q=dolo`, headers: { auth: client.token } });
    assert.equal(response.statusCode, 200);
  });

  it('serves every business the same global catalogue; buckets are per API client', async () => {
    const a = await createTestClient(t.ctx, { scopes: ['search'] });
    const b = await createTestClient(t.ctx, { scopes: ['search'] });
    const resultA = await t.search({ q: 'pan' }, a.token);
    const resultB = await t.search({ q: 'pan' }, b.token);
    assert.notEqual(a.businessId, b.businessId);
    assert.deepEqual(resultA.body, resultB.body);
    // Exhaust a's bucket (burst 3, one used above); b is unaffected.
    await t.search({ q: 'pan' }, a.token);
    await t.search({ q: 'pan' }, a.token);
    const limited = await t.search({ q: 'pan' }, a.token);
    assert.equal(limited.status, 429);
    assertGenericErr(limited.body, 429);
    assert.ok(Number(limited.headers['retry-after']) >= 1);
    assert.equal((await t.search({ q: 'pan' }, b.token)).status, 200);
  });
});
