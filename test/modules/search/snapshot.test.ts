/**
 * Index snapshots: a process reads the index a previous one wrote instead of building it, then applies
 * what changed since; a large catalogue is built, and rebuilt after many changes, in a builder process
 * (forked then, or the spare forked first) that writes the snapshot; a snapshot of another database or
 * a damaged file is ignored.
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../../src/logger.ts';
import { forkSpareBuilder, spareBuilder } from '../../../src/modules/search/catalogue/builder-parent.ts';
import { Catalogue } from '../../../src/modules/search/catalogue/catalogue.ts';
import { refreshStoredSnapshot } from '../../../src/modules/search/catalogue/snapshot-from-database.ts';
import { snapshotFileFor } from '../../../src/modules/search/catalogue/snapshots.ts';
import { parseQuery } from '../../../src/modules/search/index/query.ts';
import { catalogueVersion } from '../../../src/modules/search/repo.ts';
import { encodeSnapshot, readSnapshot, writeSnapshotFile } from '../../../src/modules/search/index/snapshot.ts';
import { grow } from '../../../src/modules/search/index/store.ts';
import { CatalogueImporter } from '../../../src/modules/search/ingest/importer.ts';
import { createTestApp, type TestApp } from '../../support.ts';
import { createSearchApp, type SearchApp } from './support.ts';

const DRUG_QUERIES = [
  'dolo',
  'paracetamol',
  'pan 40',
  'azithral',
  'zerodol sp',
  'amoxycillin clavulanic',
  'montair lc',
  'paracitamol',
  'glycomet gp 2',
];
const LAB_QUERIES = ['cbc', 'lft', 'thyroid', 'hba1c'];

function answers(catalogue: Catalogue): string[] {
  return [
    ...DRUG_QUERIES.map((q) =>
      catalogue.drugs
        .search(parseQuery(q), 20)
        .map((hit) => `${hit.record.id}:${hit.exact}:${hit.namePrefix}:${JSON.stringify(hit.record)}`)
        .join(),
    ),
    ...LAB_QUERIES.map((q) =>
      catalogue.labs
        .search(parseQuery(q), 20)
        .map((hit) => JSON.stringify(hit.record))
        .join(),
    ),
  ];
}

async function load(t: TestApp, file: string): Promise<Catalogue> {
  const catalogue = new Catalogue(t.ctx.storage.db, createLogger('silent'), { snapshotFile: file, pollIntervalMs: 60_000 });
  await catalogue.start();
  return catalogue;
}

describe('search index snapshots', () => {
  let t: SearchApp;
  let file: string;
  const opened: Catalogue[] = [];
  before(async () => {
    // The app's first load builds from the database and writes the snapshot; the fixture files are
    // imported after it, so a process reading it must apply them on top.
    t = await createSearchApp();
    await t.modules.search.catalogue.snapshotWritten();
    file = snapshotFileFor(t.ctx.config.dataDir, t.ctx.config.databaseUrl);
  });
  after(async () => {
    for (const catalogue of opened) await catalogue.stop();
    await t.close();
  });

  /**
   * A process's catalogue whose builds and rebuilds run in the builder process, and whose snapshot is
   * kept in the database too, whatever its size.
   */
  async function loadWithBuilder(name: string): Promise<Catalogue> {
    const config = t.ctx.config;
    const catalogue = new Catalogue(t.ctx.storage.db, createLogger('silent'), {
      snapshotFile: path.join(config.dataDir, name),
      builder: { databaseUrl: config.databaseUrl, dataDir: config.dataDir, minDrugs: 0, logLevel: 'silent' },
      storedSnapshotMinDrugs: 0,
      pollIntervalMs: 60_000,
    });
    opened.push(catalogue);
    await catalogue.start();
    return catalogue;
  }

  it('a new process reads the snapshot, applies later changes and answers like the process that built it', async () => {
    const app = t.modules.search.catalogue;
    assert.equal(app.loadedFrom, 'database');
    await new CatalogueImporter({ db: t.ctx.storage.db }).importDrugs(
      [{ name: 'Snapshotazole 10 Tablet', manufacturer_name: 'Later Labs', composition: [{ salt: 'Snapshotazole', strength: '10mg' }] }],
      'test',
    );
    await app.refresh();
    const restored = await load(t, file);
    opened.push(restored);
    assert.equal(restored.loadedFrom, 'snapshot');
    assert.equal(restored.version, app.version);
    assert.equal(restored.drugs.size, app.drugs.size);
    assert.equal(restored.labs.size, app.labs.size);
    assert.deepEqual(answers(restored), answers(app));
    assert.deepEqual(
      restored.drugs.search(parseQuery('snapshotazole'), 5).map((hit) => hit.record.name),
      ['Snapshotazole 10 Tablet'],
    );
  });

  it('builds a large catalogue in a builder process and reads the snapshot it writes', async () => {
    await t.ctx.storage.db.deleteFrom('search_snapshots').execute();
    const built = await loadWithBuilder('worker-index.bin');
    assert.equal(built.loadedFrom, 'builder');
    assert.equal(built.version, t.modules.search.catalogue.version);
    // The builder stores the snapshot in the database too, after writing the file this process read.
    for (let i = 0; i < 200 && (await storedVersions()).length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(await storedVersions(), [built.version]);
    // The same as building the same database here (the app's own index took the fixtures as updates,
    // which can order equally ranked products differently).
    const here = await load(t, path.join(t.ctx.config.dataDir, 'here-index.bin'));
    opened.push(here);
    assert.equal(here.loadedFrom, 'database');
    assert.deepEqual(answers(built), answers(here));
  });

  it('a start that builds hands the task to the spare builder process forked first, and lets an unused spare go', async () => {
    await t.ctx.storage.db.deleteFrom('search_snapshots').execute();
    forkSpareBuilder();
    const spare = spareBuilder()!;
    // The builder tells its parent once the file is written; a spare let go exits without a word.
    const outcome = new Promise((resolve) => {
      spare.once('message', () => resolve('built'));
      spare.once('exit', () => resolve('exited'));
    });
    const built = await loadWithBuilder('spare-index.bin');
    assert.equal(built.loadedFrom, 'builder');
    assert.equal(await outcome, 'built');
    assert.equal(spareBuilder(), null);

    forkSpareBuilder();
    const unused = spareBuilder()!;
    const exited = new Promise((resolve) => unused.once('exit', (code) => resolve(code)));
    const restored = await load(t, path.join(t.ctx.config.dataDir, 'spare-index.bin'));
    opened.push(restored);
    assert.equal(restored.loadedFrom, 'snapshot');
    assert.equal(await exited, 0);
    assert.equal(spareBuilder(), null);
  });

  async function storedVersions(): Promise<number[]> {
    const rows = await t.ctx.storage.db.selectFrom('search_snapshots').select('version').where('part', '=', 0).execute();
    return rows.map((row) => Number(row.version));
  }

  it('a process without a usable snapshot file reads the one kept in the database, and writes the file', async () => {
    const db = t.ctx.storage.db;
    const dir = t.ctx.config.dataDir;
    const silent = createLogger('silent');
    // What `cps import` does after a large import: stores a snapshot when there is none, not when it is current.
    await db.deleteFrom('search_snapshots').execute();
    assert.equal(await refreshStoredSnapshot(db, silent, path.join(dir, 'import-index.bin'), 0), true);
    assert.deepEqual(await storedVersions(), [await catalogueVersion(db)]);
    assert.equal(await refreshStoredSnapshot(db, silent, path.join(dir, 'import-index.bin'), 0), false);

    const file = path.join(dir, 'stored-index.bin');
    const fromDatabase = new Catalogue(db, silent, { snapshotFile: file, storedSnapshotMinDrugs: 0, pollIntervalMs: 60_000 });
    opened.push(fromDatabase);
    await fromDatabase.start();
    assert.equal(fromDatabase.loadedFrom, 'stored snapshot');
    assert.equal(fromDatabase.version, await catalogueVersion(db));
    const here = await load(t, path.join(dir, 'here-stored-index.bin'));
    opened.push(here);
    assert.deepEqual(answers(fromDatabase), answers(here));
    // The next start on this data directory reads the file.
    await fromDatabase.snapshotWritten();
    const fromFile = new Catalogue(db, silent, { snapshotFile: file, storedSnapshotMinDrugs: 0, pollIntervalMs: 60_000 });
    opened.push(fromFile);
    await fromFile.start();
    assert.equal(fromFile.loadedFrom, 'snapshot');

    // A damaged stored snapshot is ignored: the process builds.
    await db
      .updateTable('search_snapshots')
      .set({ data: Buffer.from('CPSSNAP1 and then nothing useful') })
      .execute();
    const fromDamaged = new Catalogue(db, silent, {
      snapshotFile: path.join(dir, 'damaged-stored-index.bin'),
      storedSnapshotMinDrugs: 0,
      pollIntervalMs: 60_000,
    });
    opened.push(fromDamaged);
    await fromDamaged.start();
    assert.equal(fromDamaged.loadedFrom, 'database');
    assert.deepEqual(answers(fromDamaged), answers(here));
  });

  it('ignores the snapshot of another database and a damaged file', async () => {
    const other = await createTestApp();
    try {
      const copied = path.join(other.ctx.config.dataDir, 'copied-index.bin');
      copyFileSync(file, copied);
      const fromOther = await load(other, copied);
      opened.push(fromOther);
      assert.equal(fromOther.loadedFrom, 'database');
      assert.ok(fromOther.drugs.search(parseQuery('dolo 650'), 5).length > 0);

      const damaged = path.join(other.ctx.config.dataDir, 'damaged-index.bin');
      writeFileSync(damaged, 'CPSSNAP1 and then nothing useful');
      const fromDamaged = await load(other, damaged);
      opened.push(fromDamaged);
      assert.equal(fromDamaged.loadedFrom, 'database');
      assert.deepEqual(answers(fromDamaged), answers(fromOther));
    } finally {
      for (const catalogue of opened.splice(1)) await catalogue.stop();
      await other.close();
    }
  });

  it('rebuilds in the builder process when changes would make a rebuild due, serving the current index meanwhile', async () => {
    const catalogue = await loadWithBuilder('rebuild-index.bin');
    const builds = catalogue.drugs.builds;
    const size = catalogue.drugs.size;
    const added = Array.from({ length: Math.max(1100, size) }, (_, i) => ({
      name: `Rebuildazole ${i + 1} Tablet`,
      manufacturer_name: 'Worker Labs',
      composition: [{ salt: 'Rebuildazole', strength: `${i + 1}mg` }],
    }));
    assert.ok(catalogue.drugs.wouldRebuildWith(added.length));
    await new CatalogueImporter({ db: t.ctx.storage.db }).importDrugs(added, 'test');
    const target = await catalogueVersion(t.ctx.storage.db);
    await catalogue.refresh();
    // The change went to the builder; this index answers as before until the builder's index replaces it.
    assert.equal(catalogue.drugs.size, size);
    assert.deepEqual(catalogue.drugs.search(parseQuery('rebuildazole'), 5), []);
    for (let i = 0; i < 1200 && catalogue.version !== target; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(catalogue.version, target);
    assert.equal(catalogue.drugs.size, size + added.length);
    assert.equal(catalogue.drugs.builds, builds, 'nothing was built in this thread');
    assert.equal(catalogue.drugs.rebuildDue, false);
    assert.deepEqual(
      catalogue.drugs.search(parseQuery('rebuildazole 17'), 1).map((hit) => hit.record.name),
      ['Rebuildazole 17 Tablet'],
    );
  });

  it('removes temporary files that a killed writer left, not one being written', async () => {
    const dir = t.ctx.config.dataDir;
    const target = path.join(dir, 'temporaries-index.bin');
    const stale = `${target}.0123456789ab.tmp`;
    const fresh = `${target}.ba9876543210.tmp`;
    writeFileSync(stale, 'left by a writer killed an hour ago');
    const hourAgo = new Date(Date.now() - 3_600_000);
    utimesSync(stale, hourAgo, hourAgo);
    writeFileSync(fresh, 'being written by another process');
    await writeSnapshotFile(
      target,
      encodeSnapshot({ source: 'test' }, { part: { meta: { n: 1 }, texts: { words: 'dolo' }, arrays: { ids: new Uint32Array([7, 8]) } } }),
    );
    assert.equal(existsSync(stale), false);
    assert.equal(existsSync(fresh), true);
    const read = await readSnapshot(target);
    assert.deepEqual([...(read!.sections.part!.arrays.ids as Uint32Array)], [7, 8]);
  });

  it('reads a file piece by piece, and not one cut short or whose header points past its end', async () => {
    const target = path.join(t.ctx.config.dataDir, 'pieces-index.bin');
    const pieces = encodeSnapshot(
      { source: 'test' },
      {
        part: { meta: { n: 2 }, texts: { words: 'dolo\u00e9', wide: 'd\u0101' }, arrays: { ids: new Uint32Array([7, 8]), on: new Uint8Array([1]) } },
      },
    );
    await writeSnapshotFile(target, pieces);
    const read = await readSnapshot(target);
    assert.deepEqual(read!.fields, { source: 'test' });
    assert.deepEqual(read!.sections.part!.meta, { n: 2 });
    assert.deepEqual(read!.sections.part!.texts, { words: 'dolo\u00e9', wide: 'd\u0101' });
    assert.deepEqual(read!.sections.part!.arrays, { ids: new Uint32Array([7, 8]), on: new Uint8Array([1]) });
    // Room asked for after an array: the same contents, grown in place up to the room, copied beyond it.
    const roomy = await readSnapshot(target, (section, key, length) => (section === 'part' && key === 'ids' ? length * 2 : 0));
    const ids = roomy!.sections.part!.arrays.ids as Uint32Array;
    assert.deepEqual([...ids], [7, 8]);
    assert.equal(ids.buffer.byteLength, 6 * 4);
    const longer = grow(ids, 5, Uint32Array);
    assert.equal(longer.buffer, ids.buffer);
    assert.deepEqual([...longer.subarray(0, 2)], [7, 8]);
    const copied = grow(longer, 7, Uint32Array);
    assert.notEqual(copied.buffer, ids.buffer);
    assert.deepEqual([...copied.subarray(0, 2)], [7, 8]);
    const whole = Buffer.concat(pieces);
    writeFileSync(target, whole.subarray(0, whole.length - 8));
    assert.equal(await readSnapshot(target), null);
    // Whole files whose header is wrong about a piece: past the end, or not a whole number of elements.
    const base = Math.ceil((16 + whole.readUInt32LE(8)) / 8) * 8;
    const header = JSON.parse(whole.toString('utf8', 16, 16 + whole.readUInt32LE(8)));
    for (const bytes of [header.size + 8, 6]) {
      const edited = structuredClone(header);
      edited.sections.part.arrays.ids.bytes = bytes;
      const json = Buffer.from(JSON.stringify(edited));
      const start = Buffer.alloc(Math.ceil((16 + json.length) / 8) * 8 - json.length);
      start.write('CPSSNAP1', 0, 'latin1');
      start.writeUInt32LE(json.length, 8);
      writeFileSync(target, Buffer.concat([start.subarray(0, 16), json, start.subarray(16), whole.subarray(base)]));
      assert.equal(await readSnapshot(target), null, `ids of ${bytes} bytes`);
    }
  });
});
