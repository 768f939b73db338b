/** A changed master key stops the start, naming the variable, instead of failing every job later. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { assertMasterKeyOpensStoredValues, MasterKeyMismatchError } from '../src/stored-secrets.ts';
import { runCli } from './process.ts';
import { bearer, createTestApp, createTestClient, createTestDatabase, DIALECT, testKeys } from './support.ts';

describe(`the master key check at start (${DIALECT})`, () => {
  it('opens a stored value of each kind with the right key, and names what a wrong key cannot open', async () => {
    const keys = await testKeys();
    const database = await createTestDatabase();
    const t = await createTestApp({ keys, database });
    try {
      await assertMasterKeyOpensStoredValues(t.ctx.storage.db, randomBytes(32)).then(
        () => undefined,
        () => assert.fail('nothing sealed is stored yet: any key passes'),
      );
      const client = await createTestClient(t.ctx, { scopes: ['webhook:admin'] });
      const created = await t.app.inject({
        method: 'POST',
        url: '/notification/v1/connect/webhook/subscriptions',
        headers: bearer(client.token),
        payload: { endpoint: 'http://127.0.0.1:9/hook' },
      });
      assert.equal(created.statusCode, 201, created.body);
      await assertMasterKeyOpensStoredValues(t.ctx.storage.db, keys.masterKey);
      await assert.rejects(
        assertMasterKeyOpensStoredValues(t.ctx.storage.db, randomBytes(32)),
        (error) =>
          error instanceof MasterKeyMismatchError && error.what === 'webhook signing keys' && /^CPS_MASTER_KEY does not open/.test(error.message),
      );
      await t.ctx.storage.db.deleteFrom('webhook_subscriptions').execute();

      // The real command: a start with another key stops with one line naming the variable, no stack.
      await t.ctx.storage.db
        .insertInto('push_credentials')
        .values({
          business_id: client.businessId,
          sealed: (await import('../src/security/encryption.ts')).encrypt(keys.masterKey, '{}', client.businessId),
          project_id: 'p',
          client_email: 'e@p.test',
          private_key_id: 'k',
          created_at: 0,
          updated_at: 0,
        })
        .execute();
      const result = await runCli(['serve'], {
        CPS_DATA_DIR: database.dataDir,
        CPS_MASTER_KEY: randomBytes(32).toString('base64'),
        CPS_WORKERS: '0',
        PORT: '0',
        ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
      });
      assert.equal(result.code, 1);
      assert.match(result.stderr, /^cps: CPS_MASTER_KEY does not open the push service accounts stored in this database: .*\n$/);
    } finally {
      await t.close();
      await database.drop();
    }
  });

  it('cps keys rotate re-encrypts every stored value under the new key, all or nothing', async () => {
    const keys = await testKeys();
    const database = await createTestDatabase();
    const t = await createTestApp({ keys, database });
    const env = (current: Buffer, next: Buffer) => ({
      CPS_DATA_DIR: database.dataDir,
      CPS_MASTER_KEY: current.toString('base64'),
      CPS_NEW_MASTER_KEY: next.toString('hex'),
      ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
    });
    try {
      const client = await createTestClient(t.ctx, { scopes: ['webhook:admin'] });
      for (const port of [9, 10]) {
        const created = await t.app.inject({
          method: 'POST',
          url: '/notification/v1/connect/webhook/subscriptions',
          headers: bearer(client.token),
          payload: { endpoint: `http://127.0.0.1:${port}/hook` },
        });
        assert.equal(created.statusCode, 201, created.body);
      }
      const before = await t.ctx.storage.db.selectFrom('webhook_subscriptions').select('signing_key').orderBy('id').execute();
      const next = randomBytes(32);

      const wrong = await runCli(['keys', 'rotate'], env(randomBytes(32), next));
      assert.equal(wrong.code, 1);
      assert.match(wrong.stderr, /^cps: CPS_MASTER_KEY does not open the webhook signing keys/);
      assert.deepEqual(await t.ctx.storage.db.selectFrom('webhook_subscriptions').select('signing_key').orderBy('id').execute(), before);

      const rotated = await runCli(['keys', 'rotate'], env(keys.masterKey, next));
      assert.equal(rotated.code, 0, rotated.stderr);
      assert.equal(JSON.parse(rotated.stdout).reencrypted['webhook signing keys'], 2);
      await assertMasterKeyOpensStoredValues(t.ctx.storage.db, next);
      await assert.rejects(assertMasterKeyOpensStoredValues(t.ctx.storage.db, keys.masterKey), MasterKeyMismatchError);
    } finally {
      await t.close();
      await database.drop();
    }
  });
});
