/** Reading changed drugs a page at a time: every changed row once, in version order, and nothing older. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openStorage } from '../../../src/db/index.ts';
import {
  catalogueVersion,
  drugsChangedAfter,
  storedSnapshotParts,
  storedSnapshotVersion,
  storeSnapshot,
  type ChangesCursor,
} from '../../../src/modules/search/repo.ts';
import { CatalogueImporter } from '../../../src/modules/search/ingest/importer.ts';
import { createTestApp, DIALECT, type TestApp } from '../../support.ts';

describe(`search repository: changed drugs by page (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(async () => t.close());

  const drug = (name: string) => ({ name, manufacturer_name: 'Paging Labs', composition: [{ salt: 'Pagingazole', strength: '10mg' }] });

  async function readAll(since: number, pageSize: number): Promise<Array<{ id: string; name: string; seq: number }>> {
    const rows: Array<{ id: string; name: string; seq: number }> = [];
    for (let from: ChangesCursor = { seq: since, id: '' }; ; ) {
      const page = await drugsChangedAfter(t.ctx.storage.db, since, from, pageSize);
      rows.push(...page.map((row) => ({ id: row.id, name: row.name, seq: Number(row.seq) })));
      if (page.length < pageSize) return rows;
      from = { seq: Number(page[page.length - 1]!.seq), id: page[page.length - 1]!.id };
    }
  }

  it('returns each change after a version once, in (version, id) order, across pages', async () => {
    const before = await catalogueVersion(t.ctx.storage.db);
    await new CatalogueImporter({ db: t.ctx.storage.db }).importDrugs(
      ['Pagezole 1', 'Pagezole 2', 'Pagezole 3', 'Pagezole 4', 'Pagezole 5'].map(drug),
      'test',
    );
    const middle = await catalogueVersion(t.ctx.storage.db);
    await new CatalogueImporter({ db: t.ctx.storage.db }).importDrugs(['Pagezole 6', 'Pagezole 7', 'Pagezole 8'].map(drug), 'test');
    // An update moves a product of the first batch to the newest version.
    await new CatalogueImporter({ db: t.ctx.storage.db }).importDrugs(
      [{ ...drug('Pagezole 2'), product_sku: undefined, composition: [{ salt: 'Pagingazole', strength: '20mg' }] }],
      'test',
    );
    const all = await readAll(before, 3);
    assert.deepEqual(all.map((row) => row.name).sort(), [
      'Pagezole 1',
      'Pagezole 2',
      'Pagezole 3',
      'Pagezole 4',
      'Pagezole 5',
      'Pagezole 6',
      'Pagezole 7',
      'Pagezole 8',
    ]);
    const order = all.map((row) => `${String(row.seq).padStart(12, '0')} ${row.id}`);
    assert.deepEqual(order, [...order].sort(), 'version, then id');
    assert.equal(all.find((row) => row.name === 'Pagezole 2')!.seq, await catalogueVersion(t.ctx.storage.db));
    const later = await readAll(middle, 2);
    assert.deepEqual(later.map((row) => row.name).sort(), ['Pagezole 2', 'Pagezole 6', 'Pagezole 7', 'Pagezole 8']);
    // The first load (after < 0) reads everything in id order.
    const everything = await readAll(-1, 1000);
    assert.ok(everything.length >= 8);
    assert.deepEqual(
      everything.map((row) => row.id),
      everything.map((row) => row.id).sort(),
    );
  });
});

describe(`search repository: stored index snapshots (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(async () => t.close());

  async function stored(source: string): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const part of storedSnapshotParts(t.ctx.storage.db, source)) parts.push(part);
    return Buffer.concat(parts);
  }

  it('stores a snapshot in parts and reads it back whole; an older version never replaces a newer one', async () => {
    const db = t.ctx.storage.db;
    const snapshot = Buffer.alloc(9 * 1024 * 1024, 7);
    assert.equal(await storedSnapshotVersion(db, 'release-a'), null);
    assert.equal(await storeSnapshot(db, 'release-a', 5, snapshot), true);
    assert.ok((await stored('release-a')).equals(snapshot));
    assert.equal(await storeSnapshot(db, 'release-a', 4, Buffer.from('older')), false);
    assert.equal(await storedSnapshotVersion(db, 'release-a'), 5);
    const newer = Buffer.from('newer');
    assert.equal(await storeSnapshot(db, 'release-a', 6, newer), true);
    assert.ok((await stored('release-a')).equals(newer));
  });

  it('keeps one whole snapshot when two processes store theirs at the same moment', {
    skip: DIALECT === 'sqlite' && 'SQLite takes one writer at a time',
  }, async () => {
    const other = openStorage({ databaseUrl: t.database.databaseUrl, dataDir: t.database.dataDir });
    try {
      const mine = Buffer.alloc(9 * 1024 * 1024, 1);
      const theirs = Buffer.alloc(9 * 1024 * 1024, 2);
      const results = await Promise.all([storeSnapshot(t.ctx.storage.db, 'release-b', 5, mine), storeSnapshot(other.db, 'release-b', 5, theirs)]);
      assert.ok(results.includes(true));
      const whole = await stored('release-b');
      assert.ok(whole.equals(mine) || whole.equals(theirs));
    } finally {
      await other.destroy();
    }
  });
});
