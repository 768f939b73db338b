/** Catalogue imports: layouts, idempotency, de-duplication across catalogues and derived fields. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTestApp, type TestApp } from '../../support.ts';
import { parseComposition, packKey, genericId, detectForm } from '../../../src/modules/search/index/derive.ts';
import { CatalogueImporter } from '../../../src/modules/search/ingest/importer.ts';
import { FIXTURES, HAS_SHARED_DATA, importFile, shared } from './support.ts';

const tmp = mkdtempSync(path.join(tmpdir(), 'cps-import-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
function file(name: string, text: string): string {
  const target = path.join(tmp, name);
  writeFileSync(target, text);
  return target;
}

async function drug(t: TestApp, name: string) {
  return t.ctx.storage.db.selectFrom('drugs').selectAll().where('name', '=', name).execute();
}

describe('derivations', () => {
  it('parses compositions with stray spaces and nested parentheses', () => {
    assert.deepEqual(parseComposition('Amoxycillin  (500mg) +  Clavulanic Acid (125mg) '), [
      { salt: 'Amoxycillin', strength: '500mg' },
      { salt: 'Clavulanic Acid', strength: '125mg' },
    ]);
    assert.deepEqual(parseComposition('Ambroxol (30mg/5ml) ', ' Levosalbutamol (1 mg/5ml)'), [
      { salt: 'Ambroxol', strength: '30mg/5ml' },
      { salt: 'Levosalbutamol', strength: '1mg/5ml' },
    ]);
  });

  it('gives one generic id per composition, whatever the order and spacing', () => {
    const a = genericId(parseComposition('Amoxycillin (500mg) + Clavulanic Acid (125mg)'), 'x');
    const b = genericId(parseComposition('Clavulanic  Acid (125 mg) + AMOXYCILLIN (500mg)'), 'y');
    const c = genericId(parseComposition('Amoxycillin (250mg) + Clavulanic Acid (125mg)'), 'z');
    assert.equal(a, b);
    assert.notEqual(a, c);
  });

  it('reads packs the same way in both 1mg and A-Z wording', () => {
    assert.equal(packKey('strip of 10 tablets'), packKey('10 tablets in 1 strip'));
    assert.equal(packKey('bottle of 30 ml Oral Suspension'), packKey('30 ml in 1 bottle'));
    assert.notEqual(packKey('strip of 10 tablets'), packKey('strip of 15 tablets'));
    // Words that name members of every object are words like any other.
    assert.equal(packKey('constructor of 10 tablets toString'), packKey('10 tablets'));
  });

  it('derives the dosage form from the name, then the pack', () => {
    assert.equal(detectForm('Ascoril LS Syrup'), 'syrup');
    assert.equal(detectForm('Glycomet 500 SR Tablet'), 'tablet');
    assert.equal(detectForm('Human Mixtard 30 Penfill'), 'injection');
    assert.equal(detectForm('Foo Forte', 'strip of 10 capsules'), 'capsule');
  });
});

describe('imports', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
    await t.modules.search.catalogue.start(); // the built-in catalogue is in; versions below are ours
  });
  after(() => t.close());

  it('imports the project NDJSON and is idempotent', async () => {
    const first = await importFile(t, 'drugs', path.join(FIXTURES, 'drugs.ndjson'));
    assert.equal(first.layout, 'ndjson');
    assert.ok(first.inserted + first.updated > 0);
    const again = await importFile(t, 'drugs', path.join(FIXTURES, 'drugs.ndjson'));
    assert.equal(again.inserted, 0);
    assert.equal(again.updated, 0);
    assert.equal(again.version, first.version, 'nothing changed: no new catalogue version');
    const [augmentin] = await drug(t, 'Augmentin 625 Duo Tablet');
    assert.equal(augmentin!.common_name, 'Amoxycillin + Clavulanic Acid');
    assert.deepEqual(JSON.parse(augmentin!.action_class!), { name: 'Penicillin with beta-lactamase inhibitor', atc_code: 'J01CR02' });
  });

  it('tolerates stray spaces, duplicate rows and bad lines', async () => {
    const csv = file(
      'az.csv',
      [
        'id,name,price(₹),Is_discontinued,manufacturer_name,type,pack_size_label,short_composition1,short_composition2',
        '1, Testocil 500  Tablet ,10,FALSE,  Testo Labs  Ltd ,allopathy,strip of 10 tablets,Testocillin  (500mg) , Clavutest (125mg) ',
        '2,Testocil 500 Tablet,10,FALSE,Testo Labs Ltd,allopathy,strip of 10 tablets,Testocillin (500mg),Clavutest (125mg)',
        '3,,10,FALSE,Testo Labs Ltd,allopathy,strip of 10 tablets,X (1mg),',
        '4,Oldtest Tablet,10,TRUE,Testo Labs Ltd,allopathy,strip of 10 tablets,Testocillin (250mg),',
      ].join('\n'),
    );
    const summary = await importFile(t, 'drugs', csv);
    assert.equal(summary.layout, 'az-medicines');
    assert.deepEqual([summary.read, summary.inserted, summary.skipped], [4, 2, 1]);
    const rows = await drug(t, 'Testocil 500 Tablet');
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.manufacturer_name, 'Testo Labs Ltd');
    assert.equal(rows[0]!.generic_name, 'Testocillin (500mg) + Clavutest (125mg)');
    assert.equal(rows[0]!.is_otc, null, 'the A-Z layout does not say');
    const ndjson = file('bad.ndjson', '{"name":"Good One Tablet","manufacturer_name":"Testo Labs Ltd"}\nnot json\n[1,2]\n{"name":"No Maker"}\n');
    const bad = await importFile(t, 'drugs', ndjson);
    assert.deepEqual([bad.read, bad.inserted, bad.skipped], [4, 1, 3]);
  });

  it('keeps a discontinued mark and other fields a later file does not give', async () => {
    await new CatalogueImporter({ db: t.ctx.storage.db }).importDrugs(
      [{ name: 'Keepme 5 Tablet', manufacturer_name: 'Keep Pharma', discontinued: true, is_otc: true, product_sku: 'strip of 10 tablets' }],
      'test',
    );
    const summary = await new CatalogueImporter({ db: t.ctx.storage.db }).importDrugs(
      [{ name: 'KEEPME-5 tablet', manufacturer_name: 'Keep Pharma Pvt. Ltd.', composition: [{ salt: 'Keepazole', strength: '5mg' }] }],
      'test',
    );
    assert.deepEqual([summary.inserted, summary.updated], [0, 1]);
    const rows = await t.ctx.storage.db.selectFrom('drugs').selectAll().where('name_key', '=', 'keepme 5 tablet').execute();
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.discontinued, 1);
    assert.equal(rows[0]!.is_otc, 1);
    assert.equal(rows[0]!.product_sku, 'strip of 10 tablets');
    assert.equal(rows[0]!.generic_name, 'Keepazole (5mg)');
  });

  it('rejects a file of unknown layout', async () => {
    await assert.rejects(importFile(t, 'drugs', file('x.csv', 'a,b,c\n1,2,3\n')), /unrecognised layout/);
    await assert.rejects(importFile(t, 'labs', file('y.csv', 'a,b\n1,2\n')), /unrecognised layout/);
  });
});

describe('imports of the shared catalogues', { skip: !HAS_SHARED_DATA && 'no ../shared/data' }, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  it('reads all three drug layouts and never creates the same product twice', async () => {
    const az = await importFile(t, 'drugs', shared('az_medicines_india_sample500.csv'));
    assert.equal(az.layout, 'az-medicines');
    assert.equal(az.read, 500);
    const pages = await importFile(t, 'drugs', shared('onemg_drugs_2k.csv'));
    assert.equal(pages.layout, '1mg-product-pages');
    assert.equal(pages.read, 2021);
    assert.ok(pages.updated > 0, 'products the A-Z file has are updated, not added');
    const details = await importFile(t, 'drugs', shared('medicine_details_1mg_11k.csv'));
    assert.equal(details.layout, '1mg-medicine-details');
    assert.equal(details.read, 11825);
    assert.ok(details.inserted < 11825 - 90, 'exact duplicate rows are not added twice');

    const augmentin = await drug(t, 'Augmentin 625 Duo Tablet');
    assert.equal(augmentin.length, 1, '"strip of 10 tablets" and "10 tablets in 1 strip" are one pack');
    assert.equal(augmentin[0]!.is_otc, 0, '1mg pages say "Prescription Required"');
    const duplicates = await t.ctx.storage.db
      .selectFrom('drugs')
      .select(['name_key', 'maker_key', 'pack_key'])
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .groupBy(['name_key', 'maker_key', 'pack_key'])
      .having((eb) => eb.fn.countAll(), '>', 1)
      .execute();
    assert.deepEqual(duplicates, []);

    const discontinued = await t.ctx.storage.db.selectFrom('drugs').select('discontinued').where('discontinued', '=', 1).execute();
    assert.ok(discontinued.length >= 30, 'A-Z discontinued marks survive the 1mg files');

    // Re-importing is idempotent: nothing new.
    const again = await importFile(t, 'drugs', shared('az_medicines_india_sample500.csv'));
    const twice = await importFile(t, 'drugs', shared('az_medicines_india_sample500.csv'));
    assert.equal(again.inserted, 0);
    assert.deepEqual([twice.inserted, twice.updated], [0, 0]);
  });

  it('reads the LOINC lab orders', async () => {
    const labs = await importFile(t, 'labs', shared('loinc_universal_lab_orders.csv'));
    assert.equal(labs.layout, 'loinc-lab-orders');
    assert.equal(labs.read, 1521);
    const row = await t.ctx.storage.db.selectFrom('lab_tests').selectAll().where('loinc', '=', '17856-6').executeTakeFirstOrThrow();
    assert.ok(JSON.parse(row.abbreviations).includes('HbA1c'));
    const again = await importFile(t, 'labs', shared('loinc_universal_lab_orders.csv'));
    assert.deepEqual([again.inserted, again.updated], [0, 0]);
  });
});
