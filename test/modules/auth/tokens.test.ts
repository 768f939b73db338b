import assert from 'node:assert/strict';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, before, before as beforeAll, describe, it, mock } from 'node:test';
import { SignJWT, createLocalJWKSet, jwtVerify } from 'jose';
import { SCOPES } from '../../../src/auth/scopes.ts';
import { loadConfig } from '../../../src/config.ts';
import { createLogger } from '../../../src/logger.ts';
import type { App } from '../../../src/http/app-type.ts';
import { loadKeys, signingKeyFromPem } from '../../../src/security/keys.ts';
import { bearer, createTestApp, createTestClient, DIALECT, testConfig, testKeys, type TestApp, type TestClient } from '../../support.ts';

describe(`auth tokens (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  before(async () => {
    t = await createTestApp({
      setup: (app) => {
        app.get('/test/whoami', { config: { auth: { anyOf: [] }, family: 'standard' } }, async (request) => request.principal);
      },
    });
    client = await createTestClient(t.ctx);
  });
  after(async () => t.close());

  const login = (body: unknown) => t.app.inject({ method: 'POST', url: '/connect-auth/v1/account/login', payload: body as object });
  const refresh = (token: string, url = '/connect-auth/v1/account/refresh-token') =>
    t.app.inject({ method: 'POST', url, payload: { refresh_token: token } });

  describe('happy', () => {
    it('logs in and returns a token pair whose access token verifies against the JWKS', async () => {
      const response = await login({ client_id: client.clientId, client_secret: client.clientSecret });
      assert.equal(response.statusCode, 200);
      const body = response.json();
      assert.equal(body.expires_in, 1800);
      assert.equal(body.refresh_expires_in, 30 * 86400);
      assert.match(body.refresh_token, /^rt_/);
      const jwks = (await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json();
      assert.equal(jwks.keys.length, 1);
      assert.ok(jwks.keys[0].kid);
      assert.equal(jwks.keys[0].d, undefined, 'no private part in the JWKS');
      const { payload, protectedHeader } = await jwtVerify(body.access_token, createLocalJWKSet(jwks));
      assert.equal(protectedHeader.alg, 'EdDSA');
      assert.equal(protectedHeader.kid, jwks.keys[0].kid);
      assert.equal(payload.sub, client.clientId);
      assert.equal(payload.client_id, client.clientId);
      assert.equal(payload.b_id, client.businessId);
      assert.equal(payload.iss, 'http://cps.test');
      assert.ok(typeof payload.jti === 'string' && typeof payload.iat === 'number');
      assert.equal(payload.exp! - payload.iat!, 1800);
      assert.deepEqual(String(payload.scope).split(' ').sort(), [...SCOPES].sort(), 'a client created without scopes has every scope');
    });

    it('refreshes on both paths, each refresh token once, ignoring SDK headers', async () => {
      const first = (await login({ client_id: client.clientId, client_secret: client.clientSecret })).json();
      const second = await t.app.inject({
        method: 'POST',
        url: '/connect-auth/v1/account/refresh',
        payload: { refresh_token: first.refresh_token },
        headers: { 'client-id': client.clientId, 'jwt-payload': '{}' },
      });
      assert.equal(second.statusCode, 200);
      const third = await refresh(second.json().refresh_token);
      assert.equal(third.statusCode, 200);
      assert.notEqual(third.json().refresh_token, second.json().refresh_token);
      const whoami = await t.app.inject({ method: 'GET', url: '/test/whoami', headers: { auth: third.json().access_token } });
      assert.equal(whoami.statusCode, 200);
      assert.equal(whoami.json().businessId, client.businessId);
    });
  });

  describe('errors', () => {
    it('rejects wrong credentials with 401 in the auth family body', async () => {
      for (const body of [
        { client_id: client.clientId, client_secret: 'wrong' },
        { client_id: 'cl_unknown', client_secret: client.clientSecret },
      ]) {
        const response = await login(body);
        assert.equal(response.statusCode, 401);
        assert.deepEqual(Object.keys(response.json()).sort(), ['code', 'error']);
        assert.equal(response.json().code, 401);
      }
    });

    it('rejects a missing field with 400 naming it', async () => {
      const response = await login({ client_id: client.clientId });
      assert.equal(response.statusCode, 400);
      assert.equal(response.json().code, 400);
      assert.match(response.json().error, /client_secret/);
    });

    it('does not coerce body types', async () => {
      const response = await login({ client_id: 12345, client_secret: 'x' });
      assert.equal(response.statusCode, 400);
      assert.match(response.json().error, /client_id/);
    });

    it('rejects an unknown refresh token', async () => {
      const response = await refresh('rt_nope');
      assert.equal(response.statusCode, 401);
      assert.equal(response.json().code, 401);
    });
  });

  describe('security', () => {
    it('revokes the whole family when a spent refresh token comes back', async () => {
      const first = (await login({ client_id: client.clientId, client_secret: client.clientSecret })).json();
      const second = (await refresh(first.refresh_token)).json();
      const reuse = await refresh(first.refresh_token);
      assert.equal(reuse.statusCode, 401);
      // The descendant issued before the reuse is revoked too.
      const descendant = await refresh(second.refresh_token);
      assert.equal(descendant.statusCode, 401);
      // Another login is unaffected.
      const other = (await login({ client_id: client.clientId, client_secret: client.clientSecret })).json();
      assert.equal((await refresh(other.refresh_token)).statusCode, 200);
    });

    it('revokes the successor a refresh is storing while a spent token comes back', async () => {
      const first = (await login({ client_id: client.clientId, client_secret: client.clientSecret })).json().refresh_token;
      const second = (await refresh(first)).json().refresh_token;
      // The client's refresh of the second token is held between storing its successor and committing.
      const tokens = t.ctx.tokens as unknown as { issue: (...args: unknown[]) => Promise<unknown> };
      const issue = tokens.issue.bind(tokens);
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let entered!: () => void;
      const inside = new Promise<void>((resolve) => (entered = resolve));
      tokens.issue = async (...args: unknown[]) => {
        entered();
        await held;
        return issue(...args);
      };
      const legitimate = refresh(second);
      await inside;
      tokens.issue = issue;
      // A copy of the first token comes back: the login is revoked while that refresh is open.
      const replay = refresh(first);
      await new Promise((resolve) => setTimeout(resolve, 200));
      release();
      const [answered, replayed] = await Promise.all([legitimate, replay]);
      assert.equal(replayed.statusCode, 401);
      if (answered.statusCode === 200) {
        assert.equal((await refresh(answered.json().refresh_token)).statusCode, 401, 'the successor was revoked with its login');
      }
    });

    it('lets only one of two concurrent refreshes with the same token through', async () => {
      const first = (await login({ client_id: client.clientId, client_secret: client.clientSecret })).json();
      const results = await Promise.all([refresh(first.refresh_token), refresh(first.refresh_token)]);
      assert.deepEqual(results.map((r) => r.statusCode).sort(), [200, 401]);
    });

    it('stores client secrets only as scrypt hashes and refresh tokens only as hashes', async () => {
      const row = await t.ctx.storage.db.selectFrom('api_clients').selectAll().where('id', '=', client.clientId).executeTakeFirstOrThrow();
      assert.match(row.secret_hash, /^scrypt\$/);
      assert.ok(!row.secret_hash.includes(client.clientSecret));
      const pair = (await login({ client_id: client.clientId, client_secret: client.clientSecret })).json();
      const tokens = await t.ctx.storage.db.selectFrom('refresh_tokens').select('token_hash').execute();
      assert.ok(tokens.every((r) => r.token_hash !== pair.refresh_token));
    });

    async function verifyRejects(token: string): Promise<void> {
      // A route that needs any valid token: the JWKS is public, so use the refresh of a token-only route.
      const response = await t.app.inject({ method: 'GET', url: '/test/whoami', headers: bearer(token) });
      assert.equal(response.statusCode, 401, `token should be rejected: ${token.slice(0, 40)}`);
    }

    it('stops accepting a verified (cached) token once it expires', async () => {
      const token = await t.ctx.tokens.issue(client.clientId, client.businessId, ['search']);
      assert.ok(await t.ctx.tokens.verify(token));
      assert.ok(await t.ctx.tokens.verify(token), 'served from the cache');
      mock.timers.enable({ apis: ['Date'], now: Date.now() + 1801 * 1000 });
      try {
        assert.equal(await t.ctx.tokens.verify(token), null);
      } finally {
        mock.timers.reset();
      }
    });

    it('rejects expired, tampered, alg none and foreign-key tokens', async () => {
      const valid = await t.ctx.tokens.issue(client.clientId, client.businessId, ['search']);
      assert.ok(await t.ctx.tokens.verify(valid));
      const [h, p, s] = valid.split('.');
      const tamperedPayload = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), b_id: 'biz_other' })).toString(
        'base64url',
      );
      assert.equal(await t.ctx.tokens.verify(`${h}.${tamperedPayload}.${s}`), null, 'tampered');
      const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT', kid: t.ctx.keys.signing.kid })).toString('base64url')}.${p}.`;
      assert.equal(await t.ctx.tokens.verify(none), null, 'alg none');
      const foreign = await signingKeyFromPem(generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString());
      const foreignSameKid = await new SignJWT({ client_id: client.clientId, b_id: client.businessId, scope: 'search' })
        .setProtectedHeader({ alg: 'EdDSA', kid: t.ctx.keys.signing.kid })
        .setIssuer('http://cps.test')
        .setSubject(client.clientId)
        .setIssuedAt()
        .setExpirationTime('10m')
        .setJti('x')
        .sign(foreign.privateKey);
      assert.equal(await t.ctx.tokens.verify(foreignSameKid), null, 'foreign key with our kid');
      const expired = await new SignJWT({ client_id: client.clientId, b_id: client.businessId, scope: 'search' })
        .setProtectedHeader({ alg: 'EdDSA', kid: t.ctx.keys.signing.kid })
        .setIssuer('http://cps.test')
        .setSubject(client.clientId)
        .setIssuedAt(Math.floor(Date.now() / 1000) - 7200)
        .setExpirationTime(Math.floor(Date.now() / 1000) - 3600)
        .setJti('x')
        .sign(t.ctx.keys.signing.privateKey);
      assert.equal(await t.ctx.tokens.verify(expired), null, 'expired');
      for (const bad of [`${h}.${tamperedPayload}.${s}`, none, foreignSameKid, expired, 'garbage']) await verifyRejects(bad);
      // The cache is keyed by the signature's last characters: a token sharing them is no hit, and evicts nothing.
      assert.equal(t.ctx.tokens.verifyCached(`${h}.${tamperedPayload}.${s}`), undefined);
      assert.equal(t.ctx.tokens.verifyCached(valid)?.clientId, client.clientId, 'the valid token is still cached');
    });
  });
});

describe(`signing key rotation (${DIALECT})`, () => {
  const oldPem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  const newPem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  const publicPem = (pem: string) => createPublicKey(pem).export({ format: 'pem', type: 'spki' }).toString();
  let before: TestApp;
  const apps: TestApp[] = [];
  let client: TestClient;
  let oldToken: string;

  const whoami = (app: TestApp, token: string) => app.app.inject({ method: 'GET', url: '/test/whoami', headers: bearer(token) });
  const withWhoami = (app: App) => {
    app.get('/test/whoami', { config: { auth: { anyOf: [] }, family: 'standard' } }, async (request) => request.principal);
  };
  async function startWith(env: Record<string, string>): Promise<TestApp> {
    const keys = await loadKeys(testConfig(before.database, env));
    const app = await createTestApp({ env, keys: { ...keys, masterKey: before.ctx.keys.masterKey }, database: before.database, setup: withWhoami });
    apps.push(app);
    return app;
  }

  beforeAll(async () => {
    before = await createTestApp({ keys: { ...(await testKeys()), signing: await signingKeyFromPem(oldPem) }, setup: withWhoami });
    client = await createTestClient(before.ctx);
    const login = await before.app.inject({
      method: 'POST',
      url: '/connect-auth/v1/account/login',
      payload: { client_id: client.clientId, client_secret: client.clientSecret },
    });
    oldToken = login.json().access_token;
  });
  after(async () => {
    for (const app of apps) await app.close();
    await before.close();
  });

  it('refuses the old key’s tokens after a rotation without the previous key', async () => {
    const rotated = await startWith({ CPS_JWT_PRIVATE_KEY: newPem });
    assert.equal((await whoami(rotated, oldToken)).statusCode, 401);
  });

  for (const form of ['public', 'private'] as const) {
    it(`accepts the old key's tokens with CPS_JWT_PREVIOUS_PUBLIC_KEY (the ${form} PEM), publishes both keys, signs with the new one`, async () => {
      const rotated = await startWith({
        CPS_JWT_PRIVATE_KEY: newPem,
        CPS_JWT_PREVIOUS_PUBLIC_KEY: (form === 'public' ? publicPem(oldPem) : oldPem).replace(/\n/g, '\\n'),
      });
      const response = await whoami(rotated, oldToken);
      assert.equal(response.statusCode, 200);
      assert.equal(response.json().clientId, client.clientId);

      const jwks = (await rotated.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json();
      assert.deepEqual(
        jwks.keys.map((key: { alg: string }) => key.alg),
        ['ES256', 'EdDSA'],
      );
      for (const key of jwks.keys) assert.equal(key.d, undefined, 'no private part in the JWKS');
      const login = await rotated.app.inject({
        method: 'POST',
        url: '/connect-auth/v1/account/login',
        payload: { client_id: client.clientId, client_secret: client.clientSecret },
      });
      const { protectedHeader } = await jwtVerify(login.json().access_token, createLocalJWKSet(jwks));
      assert.equal(protectedHeader.alg, 'ES256');
      assert.equal(protectedHeader.kid, jwks.keys[0].kid);
      // The old key's tokens verify against the published set too, for outside verifiers.
      assert.equal((await jwtVerify(oldToken, createLocalJWKSet(jwks))).protectedHeader.kid, jwks.keys[1].kid);
    });
  }

  it('refuses a previous key that is not a PEM key, naming the variable', () => {
    assert.throws(() => loadConfig({ CPS_JWT_PREVIOUS_PUBLIC_KEY: 'not a key' }), /CPS_JWT_PREVIOUS_PUBLIC_KEY/);
  });
});

describe(`processes with different CPS_PUBLIC_URL (${DIALECT})`, () => {
  it("refuse each other's tokens, and the refusing one warns once naming both issuers", async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const withWhoami = (app: App) => {
      app.get('/test/whoami', { config: { auth: { anyOf: [] }, family: 'standard' } }, async (request) => request.principal);
    };
    const one = await createTestApp({ env: { CPS_PUBLIC_URL: 'http://127.0.0.1:8080' } });
    const two = await createTestApp({
      env: { CPS_PUBLIC_URL: 'http://127.0.0.1:8081' },
      database: one.database,
      logger: createLogger('warn', sink),
      setup: withWhoami,
    });
    try {
      const client = await createTestClient(one.ctx);
      const { access_token } = (
        await one.app.inject({
          method: 'POST',
          url: '/connect-auth/v1/account/login',
          payload: { client_id: client.clientId, client_secret: client.clientSecret },
        })
      ).json();
      for (let i = 0; i < 3; i++) {
        assert.equal((await two.app.inject({ method: 'GET', url: '/test/whoami', headers: bearer(access_token) })).statusCode, 401);
      }
      const warnings = lines.map((line) => JSON.parse(line)).filter((entry) => entry.issuer !== undefined);
      assert.equal(warnings.length, 1, 'once per issuer');
      assert.equal(warnings[0].issuer, 'http://127.0.0.1:8080');
      assert.equal(warnings[0].our_issuer, 'http://127.0.0.1:8081');
      assert.match(warnings[0].msg, /every process must share one CPS_PUBLIC_URL/);
      assert.ok(!lines.join('').includes(access_token), 'the token is not logged');
      // A forged token (another key) is refused without the warning.
      const forged = `${access_token.slice(0, -4)}AAAA`;
      assert.equal((await two.app.inject({ method: 'GET', url: '/test/whoami', headers: bearer(forged) })).statusCode, 401);
    } finally {
      await two.close();
      await one.close();
    }
  });
});
