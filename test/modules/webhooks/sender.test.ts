import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { checkHost, createSender, isPublicAddress, parseRetryAfter, type Resolver } from '../../../src/modules/webhooks/sender.ts';
import { generateSigningKey, keyBytes, signatureHeader } from '../../../src/modules/webhooks/signer.ts';

interface Received { headers: IncomingMessage['headers']; body: string }

async function receiver(handle: (req: IncomingMessage, res: ServerResponse, body: string) => void) {
  const received: Received[] = [];
  let connections = 0;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      handle(req, res, body);
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port, received, connections: () => connections,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

describe('webhook signer', () => {
  it('signs the Standard Webhooks way (verified by the standardwebhooks package)', () => {
    const key = generateSigningKey();
    assert.ok(keyBytes(key));
    const body = JSON.stringify({ event: 'external_review.request', data: { a: 'é' } });
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': String(timestamp), 'webhook-signature': signatureHeader([key], 'evt_1', timestamp, body) };
    assert.deepEqual(new Webhook(key).verify(body, headers), JSON.parse(body));
    assert.equal(headers['webhook-signature'], new Webhook(key).sign('evt_1', new Date(timestamp * 1000), body));
    assert.throws(() => new Webhook(generateSigningKey()).verify(body, headers));
    assert.throws(() => new Webhook(key).verify(`${body} `, headers));
  });

  it('carries one signature per key during a rotation, each verifying', () => {
    const [oldKey, newKey] = [generateSigningKey(), generateSigningKey()];
    const timestamp = Math.floor(Date.now() / 1000);
    const signature = signatureHeader([newKey, oldKey], 'evt_2', timestamp, '{}');
    assert.equal(signature.split(' ').length, 2);
    for (const key of [oldKey, newKey]) {
      new Webhook(key).verify('{}', { 'webhook-id': 'evt_2', 'webhook-timestamp': String(timestamp), 'webhook-signature': signature });
    }
  });

  it('accepts keys of 24 to 64 bytes only', () => {
    assert.ok(keyBytes(`whsec_${randomBytes(24).toString('base64')}`));
    assert.ok(keyBytes(`whsec_${randomBytes(64).toString('base64')}`));
    assert.equal(keyBytes(`whsec_${randomBytes(23).toString('base64')}`), null);
    assert.equal(keyBytes(`whsec_${randomBytes(65).toString('base64')}`), null);
    assert.equal(keyBytes(randomBytes(32).toString('base64')), null);
    assert.equal(keyBytes('whsec_not base64!'), null);
  });
});

describe('webhook sender', () => {
  let server: Awaited<ReturnType<typeof receiver>>;
  before(async () => {
    server = await receiver((req, res) => {
      if (req.url === '/redirect') { res.writeHead(302, { location: '/ok' }); res.end(); return; }
      if (req.url === '/busy') { res.writeHead(503, { 'retry-after': '120' }); res.end('busy'); return; }
      if (req.url === '/hang') return; // never answers
      res.writeHead(204);
      res.end();
    });
  });
  after(() => server.close());

  it('POSTs the body with the given headers and reports the status', async () => {
    const sender = createSender({ publicOnly: false });
    const result = await sender.send(`http://127.0.0.1:${server.port}/ok`, { 'content-type': 'application/json', 'webhook-id': 'evt_x' }, '{"a":1}');
    sender.close();
    assert.equal(result.statusCode, 204);
    const last = server.received.at(-1)!;
    assert.equal(last.body, '{"a":1}');
    assert.equal(last.headers['content-type'], 'application/json');
    assert.equal(last.headers['webhook-id'], 'evt_x');
  });

  it('does not follow redirects, reads Retry-After, and gives up after the timeout', async () => {
    const sender = createSender({ publicOnly: false, timeoutMs: 200 });
    const before = server.received.length;
    assert.equal((await sender.send(`http://127.0.0.1:${server.port}/redirect`, {}, '{}')).statusCode, 302);
    assert.equal(server.received.length, before + 1, 'the redirect was not followed');
    assert.deepEqual(await sender.send(`http://127.0.0.1:${server.port}/busy`, {}, '{}'), { statusCode: 503, retryAfterSeconds: 120 });
    await assert.rejects(sender.send(`http://127.0.0.1:${server.port}/hang`, {}, '{}'), /no response within/);
    sender.close();
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    assert.equal(parseRetryAfter('30'), 30);
    assert.equal(parseRetryAfter(new Date(Date.now() + 90_000).toUTCString()), 90);
    assert.equal(parseRetryAfter('soon'), null);
    assert.equal(parseRetryAfter('99999999999999999999'), 7 * 86_400);
    assert.equal(parseRetryAfter(undefined), null);
  });
});

describe('webhook SSRF guard', () => {
  let server: Awaited<ReturnType<typeof receiver>>;
  before(async () => {
    server = await receiver((_req, res) => res.end());
  });
  after(() => server.close());

  it('classifies addresses', () => {
    for (const address of ['127.0.0.1', '10.0.0.1', '172.16.5.4', '192.168.0.1', '169.254.169.254', '100.100.100.200', '0.0.0.0',
      '::1', '::', 'fe80::1', 'fd00:ec2::254', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:a9fe:a9fe', '224.0.0.1', 'not-an-ip']) {
      assert.equal(isPublicAddress(address), false, address);
    }
    for (const address of ['93.184.215.14', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      assert.equal(isPublicAddress(address), true, address);
    }
  });

  it('refuses a hostname resolving to 127.0.0.1 without connecting, and plain http, in production', async () => {
    const sender = createSender({ publicOnly: true });
    const before = server.connections();
    await assert.rejects(sender.send(`https://localhost:${server.port}/hook`, {}, '{}'), /loopback, private/);
    await assert.rejects(sender.send(`https://127.0.0.1:${server.port}/hook`, {}, '{}'), /loopback, private/);
    await assert.rejects(sender.send(`http://localhost:${server.port}/hook`, {}, '{}'), /https/);
    sender.close();
    assert.equal(server.connections(), before, 'no connection was made');
  });

  it('checks the address at connect time, so DNS rebinding after registration does not pass', async () => {
    let calls = 0;
    // First answer public (registration), then loopback (delivery).
    const rebinding: Resolver = async () => (calls++ === 0 ? [{ address: '93.184.215.14', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]);
    assert.equal(await checkHost(new URL('https://rebind.example/hook'), rebinding), true);
    const sender = createSender({ publicOnly: true, resolve: rebinding });
    const before = server.connections();
    await assert.rejects(sender.send(`https://rebind.example:${server.port}/hook`, {}, '{}'), /loopback, private/);
    sender.close();
    assert.equal(server.connections(), before);
    // A name with any private address is refused at registration too.
    const mixed: Resolver = async () => [{ address: '93.184.215.14', family: 4 }, { address: '10.0.0.5', family: 4 }];
    assert.equal(await checkHost(new URL('https://mixed.example/'), mixed), false);
  });

  it('allows loopback http in development', async () => {
    const sender = createSender({ publicOnly: false });
    assert.equal((await sender.send(`http://localhost:${server.port}/hook`, {}, '{}')).statusCode, 200);
    sender.close();
  });
});
