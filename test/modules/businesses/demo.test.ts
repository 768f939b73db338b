/** The development demo business: its credentials reach their file even when the data directory is missing. */
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createDemoBusiness } from '../../../src/modules/businesses/index.ts';
import { createTestApp, DIALECT, type TestApp } from '../../support.ts';

describe(`demo business (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  it('creates a missing data directory (0700) and writes the credentials (0600) that log in', async () => {
    const dataDir = path.join(t.database.dataDir, 'not-yet', 'data');
    await createDemoBusiness({ ...t.ctx, config: { ...t.ctx.config, env: 'development', dataDir } });
    const file = path.join(dataDir, 'demo-credentials.json');
    assert.equal(statSync(dataDir).mode & 0o777, 0o700);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const { client_id, client_secret } = JSON.parse(readFileSync(file, 'utf8'));
    const login = await t.app.inject({ method: 'POST', url: '/connect-auth/v1/account/login', payload: { client_id, client_secret } });
    assert.equal(login.statusCode, 200);
  });
});
