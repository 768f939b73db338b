/**
 * The index snapshot key is a hash of the contents of the code that shapes a snapshot: any change of a
 * file in the pure index folder, or a file added to it, gives another key, so a snapshot made by other
 * code is not trusted.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CATALOGUE_DIR, CATALOGUE_SHAPERS, contentHash, SHAPERS, snapshotKey } from '../../../src/modules/search/catalogue/snapshot-key.ts';

const MODULE_DIR = fileURLToPath(new URL('../../../src/modules/search/', import.meta.url));

describe('search index snapshot key', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'cps-snapshot-key-'));
  after(() => rmSync(root, { recursive: true, force: true }));

  it('changes with one byte of a file of the index folder, and with a file added to it', () => {
    cpSync(path.join(MODULE_DIR, 'index'), path.join(root, 'index'), { recursive: true });
    const original = contentHash(root, ['index']);
    assert.equal(original, contentHash(MODULE_DIR, ['index']), 'the same contents, wherever they are, give the same hash');

    const file = path.join(root, 'index', readdirSync(path.join(root, 'index')).sort()[0]!);
    const bytes = readFileSync(file);
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 1, bytes.length - 1);
    writeFileSync(file, bytes);
    const changed = contentHash(root, ['index']);
    assert.notEqual(changed, original);

    bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 1, bytes.length - 1);
    writeFileSync(file, bytes);
    assert.equal(contentHash(root, ['index']), original);
    writeFileSync(path.join(root, 'index', 'later.ts'), 'export {};\n');
    assert.notEqual(contentHash(root, ['index']), original);
  });

  it('covers the index folder and the official names the index joins: the key differs from a hash of the rest alone', () => {
    assert.match(snapshotKey(), /^[0-9a-f]{64}$/);
    assert.deepEqual(SHAPERS, ['index', 'catalogue', 'repo.ts']);
    assert.deepEqual(CATALOGUE_SHAPERS, ['synonyms.json']);
    const key = (module: string, catalogue: string) => createHash('sha256').update(module).update(catalogue).digest('hex');
    const names = contentHash(CATALOGUE_DIR, ['synonyms.json']);
    assert.equal(snapshotKey(), key(contentHash(MODULE_DIR, ['index', 'catalogue', 'repo.ts']), names));
    assert.notEqual(snapshotKey(), key(contentHash(MODULE_DIR, ['catalogue', 'repo.ts']), names));
    assert.notEqual(snapshotKey(), key(contentHash(MODULE_DIR, ['index', 'catalogue', 'repo.ts']), contentHash(CATALOGUE_DIR, ['confusables.json'])));
  });
});
