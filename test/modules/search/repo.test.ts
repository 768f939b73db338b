/** Reading changed drugs a page at a time: every changed row once, in version order, and nothing older. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { catalogueVersion, drugsChangedAfter, type ChangesCursor } from '../../../src/modules/search/repo.ts';
import { importDrugs } from '../../../src/modules/search/service.ts';
import { createTestApp, DIALECT, type TestApp } from '../../helpers.ts';

describe(`search repository: changed drugs by page (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(async () => t.close());

  const drug = (name: string) => ({ name, manufacturer_name: 'Paging Labs', composition: [{ salt: 'Pagingazole', strength: '10mg' }] });

  async function readAll(since: number, pageSize: number): Promise<Array<{ id: string; name: string; seq: number }>> {
    const rows: Array<{ id: string; name: string; seq: number }> = [];
    for (let from: ChangesCursor = { seq: since, id: '' }; ;) {
      const page = await drugsChangedAfter(t.ctx.storage.db, since, from, pageSize);
      rows.push(...page.map((row) => ({ id: row.id, name: row.name, seq: Number(row.seq) })));
      if (page.length < pageSize) return rows;
      from = { seq: Number(page[page.length - 1]!.seq), id: page[page.length - 1]!.id };
    }
  }

  it('returns each change after a version once, in (version, id) order, across pages', async () => {
    const before = await catalogueVersion(t.ctx.storage.db);
    await importDrugs(t.ctx.storage.db, ['Pagezole 1', 'Pagezole 2', 'Pagezole 3', 'Pagezole 4', 'Pagezole 5'].map(drug), 'test');
    const middle = await catalogueVersion(t.ctx.storage.db);
    await importDrugs(t.ctx.storage.db, ['Pagezole 6', 'Pagezole 7', 'Pagezole 8'].map(drug), 'test');
    // An update moves a product of the first batch to the newest version.
    await importDrugs(t.ctx.storage.db, [{ ...drug('Pagezole 2'), product_sku: undefined, composition: [{ salt: 'Pagingazole', strength: '20mg' }] }], 'test');
    const all = await readAll(before, 3);
    assert.deepEqual(all.map((row) => row.name).sort(), ['Pagezole 1', 'Pagezole 2', 'Pagezole 3', 'Pagezole 4', 'Pagezole 5', 'Pagezole 6', 'Pagezole 7', 'Pagezole 8']);
    const order = all.map((row) => `${String(row.seq).padStart(12, '0')} ${row.id}`);
    assert.deepEqual(order, [...order].sort(), 'version, then id');
    assert.equal(all.find((row) => row.name === 'Pagezole 2')!.seq, await catalogueVersion(t.ctx.storage.db));
    const later = await readAll(middle, 2);
    assert.deepEqual(later.map((row) => row.name).sort(), ['Pagezole 2', 'Pagezole 6', 'Pagezole 7', 'Pagezole 8']);
    // The first load (after < 0) reads everything in id order.
    const everything = await readAll(-1, 1000);
    assert.ok(everything.length >= 8);
    assert.deepEqual(everything.map((row) => row.id), everything.map((row) => row.id).sort());
  });
});
