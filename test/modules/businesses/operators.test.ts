/** Operators manage access from the cps command: list businesses and clients, revoke a client. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runCli } from '../../process.ts';
import { createTestApp, DIALECT } from '../../support.ts';
import { BusinessService } from '../../../src/modules/businesses/index.ts';

describe(`cps business list, client list, client revoke (${DIALECT})`, () => {
  it('lists businesses and clients without secrets, and a revoked client can no longer log in or refresh', async () => {
    const t = await createTestApp();
    const env = { CPS_DATA_DIR: t.database.dataDir, ...(t.database.databaseUrl ? { DATABASE_URL: t.database.databaseUrl } : {}) };
    const cli = async (args: string[]) => {
      const result = await runCli(args, env);
      assert.equal(result.code, 0, result.stderr);
      return JSON.parse(result.stdout);
    };
    const login = (client_id: string, client_secret: string) =>
      t.app.inject({ method: 'POST', url: '/connect-auth/v1/account/login', payload: { client_id, client_secret } });
    try {
      const businesses = new BusinessService({ db: t.ctx.storage.db, chainSeal: t.ctx.audit.chainSeal });
      const first = await businesses.createBusiness('Sunrise Clinic');
      const second = await businesses.createClient(first.business_id, ['search']);
      const session = await login(second.client_id, second.client_secret);
      assert.equal(session.statusCode, 200, session.body);
      await assert.rejects(businesses.revokeClient(second.client_id), /without onClientDisabled/, 'no revoke that would leave the refresh tokens');

      const listed = await cli(['business', 'list']);
      assert.deepEqual(
        listed.map((b: { id: string; name: string; clients: number }) => [b.id, b.name, b.clients]),
        [[first.business_id, 'Sunrise Clinic', 2]],
      );
      const clients = await cli(['client', 'list', '--business', first.business_id]);
      assert.deepEqual(
        clients.map((c: { client_id: string; scopes: string[]; disabled_at: null }) => [c.client_id, c.disabled_at]),
        [
          [first.client_id, null],
          [second.client_id, null],
        ],
      );
      assert.deepEqual(clients[1].scopes, ['search']);
      assert.ok(!JSON.stringify(clients).includes('cs_'), 'no secret is shown');

      assert.deepEqual(await cli(['client', 'revoke', '--client', second.client_id]), { client_id: second.client_id, revoked: true });
      assert.equal((await login(second.client_id, second.client_secret)).statusCode, 401, 'no more logins');
      const refreshed = await t.app.inject({
        method: 'POST',
        url: '/connect-auth/v1/account/refresh',
        payload: { refresh_token: session.json().refresh_token, access_token: session.json().access_token },
      });
      assert.equal(refreshed.statusCode, 401, `no more refreshes (${refreshed.body})`);
      const unrevoked = await t.ctx.storage.db
        .selectFrom('refresh_tokens')
        .select('id')
        .where('client_id', '=', second.client_id)
        .where('revoked_at', 'is', null)
        .execute();
      assert.deepEqual(unrevoked, [], 'its refresh tokens are revoked');
      assert.equal((await login(first.client_id, first.client_secret)).statusCode, 200, 'the other client is untouched');
      const after = await cli(['client', 'list', '--business', first.business_id]);
      assert.ok(typeof after[1].disabled_at === 'number');
      assert.equal((await cli(['business', 'list']))[0].clients, 1);

      const again = await runCli(['client', 'revoke', '--client', second.client_id], env);
      assert.deepEqual([again.code, again.stderr], [1, `cps: Active API client ${second.client_id} not found\n`]);
      const unknown = await runCli(['client', 'list', '--business', 'biz_nope'], env);
      assert.deepEqual([unknown.code, unknown.stderr], [1, 'cps: Business biz_nope not found\n']);
    } finally {
      await t.close();
    }
  });
});
