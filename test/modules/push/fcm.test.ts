import assert from 'node:assert/strict';
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  FCM_SCOPE,
  FcmClient,
  MAX_RETRY_AFTER_SECONDS,
  classifySend,
  classifyToken,
  parseRetryAfter,
  tokenUsable,
  type ServiceAccount,
} from '../../../src/modules/push/fcm.ts';
import { OutboundClient } from '../../../src/security/outbound-client.ts';
import { FakeFcm, FakeOAuth, INVALID_TOKEN, UNREGISTERED, rsaKey, unavailable, type RsaKey } from './fakes.ts';

describe('FCM decisions (pure)', () => {
  it('parses Retry-After as seconds or an HTTP date, capped', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(parseRetryAfter('7', now), 7);
    assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now), 30);
    assert.equal(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now), 0);
    assert.equal(parseRetryAfter('9999999', now), MAX_RETRY_AFTER_SECONDS);
    assert.equal(parseRetryAfter('soon', now), null);
    assert.equal(parseRetryAfter(null, now), null);
  });

  it('classifies send responses', () => {
    assert.deepEqual(classifySend(200, { name: 'projects/p/messages/1' }, null), { kind: 'sent', name: 'projects/p/messages/1' });
    assert.deepEqual(classifySend(404, UNREGISTERED.body, null), { kind: 'drop', error: 'UNREGISTERED' });
    assert.deepEqual(classifySend(400, INVALID_TOKEN.body, null), { kind: 'drop', error: 'INVALID_ARGUMENT' });
    const badData = {
      error: {
        code: 400,
        status: 'INVALID_ARGUMENT',
        details: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'message.data[0].key' }] }],
      },
    };
    assert.equal(classifySend(400, badData, null).kind, 'fail', 'a bad message is not a dead device');
    assert.deepEqual(classifySend(503, unavailable().body, '12'), { kind: 'retry', error: 'FCM 503 UNAVAILABLE', retryAfterSeconds: 12 });
    assert.equal(classifySend(429, { error: { status: 'RESOURCE_EXHAUSTED', details: [{ errorCode: 'QUOTA_EXCEEDED' }] } }, null).kind, 'retry');
    assert.equal(classifySend(500, null, null).kind, 'retry');
    assert.deepEqual(classifySend(401, { error: { status: 'UNAUTHENTICATED' } }, null), {
      kind: 'retry',
      error: 'FCM 401 UNAUTHENTICATED',
      retryAfterSeconds: null,
      invalidateToken: true,
    });
    assert.deepEqual(classifySend(403, { error: { status: 'PERMISSION_DENIED', details: [{ errorCode: 'SENDER_ID_MISMATCH' }] } }, null), {
      kind: 'fail',
      error: 'FCM 403 SENDER_ID_MISMATCH',
    });
  });

  it('classifies token responses and the cache margin', () => {
    assert.deepEqual(classifyToken(200, { access_token: 'a', expires_in: 3599 }, null), { kind: 'token', accessToken: 'a', expiresInSeconds: 3599 });
    assert.equal(classifyToken(400, { error: 'invalid_grant' }, null).kind, 'fail');
    assert.deepEqual(classifyToken(503, null, '3'), { kind: 'retry', error: 'OAuth token endpoint 503', retryAfterSeconds: 3 });
    assert.equal(tokenUsable(100_000, 39_999), true);
    assert.equal(tokenUsable(100_000, 40_000), false, 'a minute before expiry the token is renewed');
  });
});

describe('FCM client against local OAuth and FCM servers', () => {
  let key: RsaKey;
  let oauth: FakeOAuth;
  let fcm: FakeFcm;
  let account: ServiceAccount;
  const http = new OutboundClient({ publicOnly: false });
  const email = 'sender@demo.iam.gserviceaccount.com';
  const kid = 'kid-42';

  before(async () => {
    key = rsaKey();
    oauth = await new FakeOAuth(key.publicKey, { iss: email, kid }).start();
    fcm = await new FakeFcm().start();
    account = {
      project_id: 'demo-project',
      private_key_id: kid,
      client_email: email,
      token_uri: oauth.tokenUri,
      privateKey: createPrivateKey(key.pem),
    };
  });
  after(async () => {
    http.close();
    await oauth.stop();
    await fcm.stop();
  });

  it('signs an RS256 assertion the token endpoint verifies with the public key', async () => {
    const client = new FcmClient({ http, fcmUrl: fcm.url });
    const outcome = await client.send('b1', account, 'v1', { token: 'tok-a', title: 'Hi', body: 'There', data: { k: 'v' } });
    assert.equal(outcome.kind, 'sent');
    const verified = oauth.verified.at(-1)!;
    assert.equal(verified.header.alg, 'RS256');
    assert.equal(verified.header.kid, kid);
    assert.equal(verified.payload.iss, email);
    assert.equal(verified.payload.aud, oauth.tokenUri);
    assert.equal(verified.payload.scope, FCM_SCOPE);
    assert.equal(FCM_SCOPE, 'https://www.googleapis.com/auth/firebase.messaging', 'contract 7: the scope FCM HTTP v1 grants');
    assert.equal(verified.payload.exp! - verified.payload.iat!, 3600);
    const request = fcm.requests.at(-1)!;
    assert.equal(request.project, 'demo-project');
    assert.match(request.authorization ?? '', /^Bearer ya29\.fake-\d+$/);
    assert.deepEqual(request.message, { token: 'tok-a', notification: { title: 'Hi', body: 'There' }, data: { k: 'v' } });
  });

  it('reuses the access token until a minute before it expires', async () => {
    let now = Date.now();
    const client = new FcmClient({ http, fcmUrl: fcm.url, now: () => now });
    const before = oauth.verified.length;
    await client.send('b2', account, 'v1', { token: 't1', title: 'a', body: 'b' });
    await client.send('b2', account, 'v1', { token: 't2', title: 'a', body: 'b' });
    assert.equal(oauth.verified.length, before + 1, 'one token for two sends');
    const firstAuth = fcm.requests.at(-1)!.authorization;
    assert.equal(fcm.requests.at(-2)!.authorization, firstAuth);

    now += (3600 - 61) * 1000;
    await client.send('b2', account, 'v1', { token: 't3', title: 'a', body: 'b' });
    assert.equal(oauth.verified.length, before + 1, 'still valid 61 s before expiry');
    now += 2000;
    await client.send('b2', account, 'v1', { token: 't4', title: 'a', body: 'b' });
    assert.equal(oauth.verified.length, before + 2, 'renewed within the last minute');
    assert.notEqual(fcm.requests.at(-1)!.authorization, firstAuth);

    // Other credentials (a new version) never use the old token; concurrent sends share one fetch.
    await Promise.all([1, 2, 3].map((n) => client.send('b2', account, 'v2', { token: `c${n}`, title: 'a', body: 'b' })));
    assert.equal(oauth.verified.length, before + 3);
  });

  it('a refused access token is forgotten, and a refused assertion fails without retry', async () => {
    const client = new FcmClient({ http, fcmUrl: fcm.url });
    await client.send('b3', account, 'v1', { token: 'ok', title: 'a', body: 'b' });
    fcm.byToken.set('auth-fail', [{ status: 401, body: { error: { code: 401, status: 'UNAUTHENTICATED' } } }]);
    const before = oauth.verified.length;
    assert.equal((await client.send('b3', account, 'v1', { token: 'auth-fail', title: 'a', body: 'b' })).kind, 'retry');
    await client.send('b3', account, 'v1', { token: 'ok', title: 'a', body: 'b' });
    assert.equal(oauth.verified.length, before + 1, 'a fresh token after the 401');

    const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const outcome = await new FcmClient({ http, fcmUrl: fcm.url }).send('b4', { ...account, privateKey: other }, 'v1', {
      token: 'x',
      title: 'a',
      body: 'b',
    });
    assert.equal(outcome.kind, 'fail');
    assert.match(outcome.kind === 'fail' ? outcome.error : '', /400 invalid_grant/);

    oauth.script.push(unavailable('4'));
    const transient = await new FcmClient({ http, fcmUrl: fcm.url }).send('b5', account, 'v1', { token: 'x', title: 'a', body: 'b' });
    assert.deepEqual(transient, { kind: 'retry', error: 'OAuth token endpoint 503', retryAfterSeconds: 4 });
  });

  it("a send aborted while its business's token is fetched does not fail the sends sharing that fetch", async () => {
    const client = new FcmClient({ http, fcmUrl: fcm.url });
    const abort = new AbortController();
    // The first send's job is interrupted (shutdown, a lost lease); the second's is not.
    const first = client.send('b8', account, 'v1', { token: 'shared-1', title: 'a', body: 'b' }, abort.signal);
    const second = client.send('b8', account, 'v1', { token: 'shared-2', title: 'a', body: 'b' });
    abort.abort(new Error('lease lost'));
    const [interrupted, other] = await Promise.all([first, second]);
    assert.equal(interrupted.kind, 'retry');
    assert.deepEqual(other, { kind: 'sent', name: other.kind === 'sent' ? other.name : null }, 'the other send was failed by an abort not its own');
  });

  it('keeps a bounded number of requests in flight', async () => {
    const client = new FcmClient({ http, fcmUrl: fcm.url, maxInFlight: 2 });
    await client.send('b6', account, 'v1', { token: 'warm', title: 'a', body: 'b' });
    let release!: () => void;
    fcm.gate = new Promise((resolve) => {
      release = resolve;
    });
    fcm.maxInFlight = 0;
    const sends = Array.from({ length: 6 }, (_, n) => client.send('b6', account, 'v1', { token: `many-${n}`, title: 'a', body: 'b' }));
    while (fcm.inFlight < 2) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(client.pending, 6);
    fcm.gate = null;
    release();
    const outcomes = await Promise.all(sends);
    assert.ok(outcomes.every((o) => o.kind === 'sent'));
    assert.equal(fcm.maxInFlight, 2);
  });

  it('network failures are retried, not thrown', async () => {
    const outcome = await new FcmClient({ http, fcmUrl: 'http://127.0.0.1:9' }).send('b7', account, 'v1', { token: 'x', title: 'a', body: 'b' });
    // The token comes from the fake; FCM itself is unreachable, and only the class is told.
    assert.deepEqual(outcome, { kind: 'retry', error: 'FCM: could not connect', retryAfterSeconds: null });
  });
});
