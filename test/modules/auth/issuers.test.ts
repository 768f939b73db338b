/** Processes sharing a database with different CPS_PUBLIC_URLs are named at start (auth/issuers.ts). */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { announceIssuer, watchIssuers } from '../../../src/auth/issuers.ts';
import { createLogger } from '../../../src/logger.ts';
import { createTestApp, DIALECT, type TestApp } from '../../support.ts';

const MINUTE = 60_000;

describe(`token issuers announced on the database (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => (t = await createTestApp()));
  after(async () => t.close());
  const db = () => t.ctx.storage.db;

  it('a start next to a live process of another issuer and the same key warns once, naming both issuers', async () => {
    const lines: string[] = [];
    const logger = createLogger('warn', new Writable({ write: (chunk, _encoding, done) => done(void lines.push(String(chunk))) }));
    const first = await watchIssuers(db(), 'http://10.0.0.5:8080', 'kid-shared', logger);
    const second = await watchIssuers(db(), 'http://10.0.0.6:8080', 'kid-shared', logger);
    first.stop();
    second.stop();
    const warnings = lines.map((line) => JSON.parse(line));
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0].issuer, 'http://10.0.0.6:8080');
    assert.equal(warnings[0].other_issuer, 'http://10.0.0.5:8080');
    assert.match(warnings[0].msg, /same CPS_PUBLIC_URL/);
  });

  it('the earlier process learns of the later one at its next announcement', async () => {
    const now = Date.now();
    assert.deepEqual(await announceIssuer(db(), 'https://a.clinic.test', 'kid-a', now), []);
    assert.deepEqual(await announceIssuer(db(), 'https://b.clinic.test', 'kid-a', now + 1000), ['https://a.clinic.test']);
    assert.deepEqual(await announceIssuer(db(), 'https://a.clinic.test', 'kid-a', now + MINUTE), ['https://b.clinic.test']);
  });

  it('the same issuer, another signing key, or an issuer unseen for over three minutes is no warning', async () => {
    const now = Date.now();
    await announceIssuer(db(), 'https://c.clinic.test', 'kid-c', now - 4 * MINUTE);
    await announceIssuer(db(), 'https://d.clinic.test', 'kid-other', now);
    assert.deepEqual(await announceIssuer(db(), 'https://e.clinic.test', 'kid-c', now), []);
    assert.deepEqual(await announceIssuer(db(), 'https://e.clinic.test', 'kid-c', now + 1000), []);
  });

  it('issuers unseen for a day are forgotten', async () => {
    const now = Date.now();
    await announceIssuer(db(), 'https://old.clinic.test', 'kid-old', now - 25 * 60 * MINUTE);
    await announceIssuer(db(), 'https://new.clinic.test', 'kid-new', now);
    const left = await db().selectFrom('token_issuers').select('issuer').where('issuer', '=', 'https://old.clinic.test').execute();
    assert.deepEqual(left, []);
  });
});
