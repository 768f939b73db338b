/**
 * Access token checks without a server: what `AccessTokens.verify` accepts and refuses. Tokens that the
 * service would never issue are signed here with jose and the service's own key, so only the rule under
 * test differs from a good token.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { afterEach, before, describe, it, mock } from 'node:test';
import { SignJWT, decodeJwt, decodeProtectedHeader, type JWTPayload } from 'jose';
import { AccessTokens } from '../../src/auth/tokens.ts';
import { signingKeyFromPem, type SigningKey } from '../../src/security/keys.ts';

const ISSUER = 'https://cps.example.test';
const pem = (type: 'ed25519' | 'ec') =>
  (type === 'ec' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('ed25519')).privateKey
    .export({ format: 'pem', type: 'pkcs8' })
    .toString();

let signing: SigningKey;
let previous: SigningKey;
let stranger: SigningKey;
before(async () => {
  signing = await signingKeyFromPem(pem('ed25519'));
  previous = await signingKeyFromPem(pem('ec'));
  stranger = await signingKeyFromPem(pem('ed25519'));
});
afterEach(() => mock.timers.reset());

const GOOD = { client_id: 'cl_1', b_id: 'b_1', scope: 'patients:read appointments:write', sub: 'cl_1', jti: 'tok-1' };

/** A token as `issue` writes it, with `claims` changed (undefined removes one) and the header and key given. */
async function forge(
  claims: Record<string, unknown>,
  options: { key?: KeyObject; alg?: string; kid?: string; issuer?: string; expiresIn?: string | number } = {},
): Promise<string> {
  const payload = Object.fromEntries(Object.entries({ ...GOOD, ...claims }).filter(([, v]) => v !== undefined)) as JWTPayload;
  const jwt = new SignJWT(payload)
    .setProtectedHeader({ alg: options.alg ?? 'EdDSA', kid: options.kid ?? signing.kid, typ: 'JWT' })
    .setIssuer(options.issuer ?? ISSUER)
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? '300s');
  return jwt.sign(options.key ?? signing.privateKey);
}

describe('issued tokens', () => {
  it('carry the client, business, scopes and a fresh id, verify with their claims, and expire after the ttl', async () => {
    const tokens = new AccessTokens(signing, ISSUER, 900);
    const token = await tokens.issue('cl_1', 'b_1', ['patients:read', 'appointments:write']);
    const claims = await tokens.verify(token);
    assert.deepEqual(
      { ...claims, tokenId: undefined },
      { clientId: 'cl_1', businessId: 'b_1', scopes: ['patients:read', 'appointments:write'], tokenId: undefined },
    );
    assert.match(claims!.tokenId, /^[0-9a-f-]{36}$/);
    const payload = decodeJwt(token);
    assert.deepEqual(decodeProtectedHeader(token), { alg: 'EdDSA', kid: signing.kid, typ: 'JWT' });
    assert.equal(payload.iss, ISSUER);
    assert.equal(payload.sub, 'cl_1');
    assert.equal(payload.scope, 'patients:read appointments:write');
    assert.equal(payload.exp! - payload.iat!, 900);
    assert.notEqual(decodeJwt(await tokens.issue('cl_1', 'b_1', [])).jti, payload.jti);
  });

  it('are signed ES256 with a P-256 key', async () => {
    const tokens = new AccessTokens(previous, ISSUER, 60);
    const token = await tokens.issue('cl_1', 'b_1', []);
    assert.equal(decodeProtectedHeader(token).alg, 'ES256');
    assert.deepEqual((await tokens.verify(token))?.scopes, []);
  });
});

describe('verification', () => {
  it('accepts a good token and splits its scope on spaces', async () => {
    const tokens = new AccessTokens(signing, ISSUER, 900);
    assert.deepEqual(await tokens.verify(await forge({ scope: ' a  b ' })), {
      clientId: 'cl_1',
      businessId: 'b_1',
      scopes: ['a', 'b'],
      tokenId: 'tok-1',
    });
  });

  it('refuses every token that is not exactly one of ours', async () => {
    const tokens = new AccessTokens(signing, ISSUER, 900);
    const good = await forge({});
    const refused: Array<[string, string]> = [
      ['signed with another key under our kid', await forge({}, { key: stranger.privateKey })],
      ['an unknown kid', await forge({}, { key: stranger.privateKey, kid: stranger.kid })],
      ['no kid', await forge({}, { kid: '' })],
      ['expired', await forge({}, { expiresIn: Math.floor(Date.now() / 1000) - 10 })],
      ['another issuer', await forge({}, { issuer: 'https://other.example.test' })],
      ['sub other than client_id', await forge({ sub: 'cl_2' })],
      ['no sub', await forge({ sub: undefined })],
      ['no jti', await forge({ jti: undefined })],
      ['jti not a string', await forge({ jti: 7 })],
      ['no client_id', await forge({ client_id: undefined })],
      ['client_id not a string', await forge({ client_id: 1, sub: '1' })],
      ['client_id and sub the same number', await forge({ client_id: 1, sub: 1 })],
      ['no b_id', await forge({ b_id: undefined })],
      ['b_id not a string', await forge({ b_id: ['b_1'] })],
      ['no scope', await forge({ scope: undefined })],
      ['scope not a string', await forge({ scope: ['a'] })],
      [
        'a changed payload',
        `${good.split('.')[0]}.${Buffer.from(JSON.stringify({ ...decodeJwt(good), b_id: 'b_2' })).toString('base64url')}.${good.split('.')[2]}`,
      ],
      ['alg none', `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${good.split('.')[1]}.`],
      ['not a JWT', 'not-a-token'],
    ];
    for (const [what, token] of refused) assert.equal(await tokens.verify(token), null, what);
    assert.ok(await tokens.verify(good));
  });

  it('refuses a token that lacks iat or exp', async () => {
    const tokens = new AccessTokens(signing, ISSUER, 900);
    const sign = (jwt: SignJWT) => jwt.setProtectedHeader({ alg: 'EdDSA', kid: signing.kid }).setIssuer(ISSUER).sign(signing.privateKey);
    assert.equal(await tokens.verify(await sign(new SignJWT({ ...GOOD }).setExpirationTime('300s'))), null, 'no iat');
    assert.equal(await tokens.verify(await sign(new SignJWT({ ...GOOD }).setIssuedAt())), null, 'no exp');
  });

  it('accepts a verify-only key of a rotation with its own algorithm, and no other algorithm under its kid', async () => {
    const tokens = new AccessTokens(signing, ISSUER, 900, [previous]);
    assert.ok(await tokens.verify(await forge({}, { key: previous.privateKey, alg: 'ES256', kid: previous.kid })));
    assert.equal(await tokens.verify(await forge({}, { key: signing.privateKey, alg: 'EdDSA', kid: previous.kid })), null);
    assert.deepEqual(tokens.jwks(), { keys: [signing.publicJwk, previous.publicJwk] });
    assert.deepEqual(new AccessTokens(signing, ISSUER, 900).jwks(), { keys: [signing.publicJwk] });
  });

  it('tells once per issuer of a token of ours under another issuer, and never of a forged one', async () => {
    const heard: string[] = [];
    const tokens = new AccessTokens(signing, ISSUER, 900, [], (issuer) => heard.push(issuer));
    await tokens.verify(await forge({}, { issuer: 'https://a.example.test' }));
    await tokens.verify(await forge({}, { issuer: 'https://a.example.test' }));
    await tokens.verify(await forge({}, { issuer: 'https://b.example.test' }));
    await tokens.verify(await forge({}, { issuer: 'https://c.example.test', key: stranger.privateKey }));
    await tokens.verify(await forge({}, { issuer: `https://${'x'.repeat(300)}.test` }));
    assert.deepEqual(heard, ['https://a.example.test', 'https://b.example.test', `https://${'x'.repeat(192)}`]);
  });

  it('tells of a foreign issuer that is not text as its text, and of nothing for its own tokens refused on other claims', async () => {
    const heard: string[] = [];
    const tokens = new AccessTokens(signing, ISSUER, 900, [], (issuer) => heard.push(issuer));
    const numberIssuer = await new SignJWT({ ...GOOD, iss: 5 } as unknown as JWTPayload)
      .setProtectedHeader({ alg: 'EdDSA', kid: signing.kid })
      .setIssuedAt()
      .setExpirationTime('300s')
      .sign(signing.privateKey);
    assert.equal(await tokens.verify(numberIssuer), null);
    assert.equal(await tokens.verify(await forge({}, { expiresIn: Math.floor(Date.now() / 1000) - 10 })), null);
    assert.equal(await tokens.verify(await forge({ sub: undefined })), null);
    assert.deepEqual(heard, ['5']);
  });

  it('tells of at most 16 foreign issuers', async () => {
    const heard: string[] = [];
    const tokens = new AccessTokens(signing, ISSUER, 900, [], (issuer) => heard.push(issuer));
    for (let i = 0; i < 20; i++) await tokens.verify(await forge({}, { issuer: `https://${i}.example.test` }));
    assert.equal(heard.length, 16);
  });
});

describe('verified tokens kept until expiry', () => {
  it('answers a token verified before at once, and nothing for one never verified', async () => {
    const tokens = new AccessTokens(signing, ISSUER, 900);
    const token = await forge({});
    assert.equal(tokens.verifyCached(token), undefined);
    const claims = await tokens.verify(token);
    assert.deepEqual(tokens.verifyCached(token), claims);
  });

  it('keeps every token verified, each answered by its own text', async () => {
    const tokens = new AccessTokens(signing, ISSUER, 900);
    const first = await forge({ jti: 'tok-a' });
    const second = await forge({ jti: 'tok-b', b_id: 'b_2' });
    await tokens.verify(first);
    await tokens.verify(second);
    assert.equal(tokens.verifyCached(first)?.tokenId, 'tok-a');
    assert.equal(tokens.verifyCached(second)?.businessId, 'b_2');
  });

  it('never answers for another token with the same last characters', async () => {
    const tokens = new AccessTokens(signing, ISSUER, 900);
    const token = await forge({});
    await tokens.verify(token);
    const [header, , signature] = token.split('.');
    const other = `${header}.${Buffer.from(JSON.stringify({ ...decodeJwt(token), b_id: 'b_2' })).toString('base64url')}.${signature}`;
    assert.equal(tokens.verifyCached(other), undefined);
    assert.equal(await tokens.verify(other), null);
    assert.ok(tokens.verifyCached(token), 'the forgery evicted the good token');
  });

  it('stops answering once the token expires', async () => {
    const tokens = new AccessTokens(signing, ISSUER, 900);
    const token = await forge({}, { expiresIn: '60s' });
    await tokens.verify(token);
    const expiresAt = decodeJwt(token).exp! * 1000;
    mock.timers.enable({ apis: ['Date'], now: expiresAt - 1 });
    assert.ok(tokens.verifyCached(token));
    mock.timers.setTime(expiresAt);
    assert.equal(tokens.verifyCached(token), undefined, 'at its expiry');
    mock.timers.setTime(expiresAt + 2_000);
    assert.equal(tokens.verifyCached(token), undefined);
    assert.equal(await tokens.verify(token), null);
  });
});
