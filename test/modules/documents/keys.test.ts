/** Document files under a master key rotation: each file's own key is re-sealed, the bytes stay as they are and open. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { assertMasterKeyOpensStoredValues, MasterKeyMismatchError, reencryptStoredValues } from '../../../src/stored-secrets.ts';
import { createTestApp, createTestClient, createTestDatabase, DIALECT, testKeys } from '../../support.ts';
import { documentsApi, download, sampleFile, storedOf } from './support.ts';

describe(`documents: the master key (${DIALECT})`, () => {
  it('a start with another key names the document file keys; cps keys rotate keeps every file readable', async () => {
    const keys = await testKeys();
    const database = await createTestDatabase();
    const first = await createTestApp({ keys, database });
    const pdf = sampleFile('pdf', 600_000);
    let id: string;
    let token: string;
    try {
      const client = await createTestClient(first.ctx);
      token = client.token;
      id = await documentsApi(first.app, token, 'pt-keys').create([pdf], ['application/pdf']);
      await assert.rejects(
        assertMasterKeyOpensStoredValues(first.ctx.storage.db, randomBytes(32)),
        (error) => error instanceof MasterKeyMismatchError && error.what === 'document file keys',
      );
      const chunksBefore = await storedOf(first, id);
      assert.equal(chunksBefore.length, 1);
      const rotated = { ...keys, masterKey: randomBytes(32) };
      const moved = await reencryptStoredValues(first.ctx.storage.db, keys.masterKey, rotated.masterKey);
      assert.equal(moved['document file keys'], 1);
      const chunksAfter = await storedOf(first, id);
      assert.deepEqual(chunksAfter, chunksBefore, 'the bytes are not rewritten');
      await first.close();

      const second = await createTestApp({ keys: rotated, database });
      try {
        await assertMasterKeyOpensStoredValues(second.ctx.storage.db, rotated.masterKey);
        const client = await createTestClient(second.ctx);
        const api = documentsApi(second.app, client.token, 'pt-keys');
        // Another business cannot see it; the owner's token, signed by the same key, can.
        assert.equal((await api.get(id)).statusCode, 404);
        const owner = documentsApi(second.app, token, 'pt-keys');
        const read = await owner.get(id);
        assert.equal(read.statusCode, 200, read.body);
        assert.ok((await download(second.app, read.json().files[0].asset_url)).rawPayload.equals(pdf));
      } finally {
        await second.close();
      }
    } finally {
      await database.drop();
    }
  });
});
