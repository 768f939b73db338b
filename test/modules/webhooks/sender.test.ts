import assert from 'node:assert/strict';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createSender, parseRetryAfter, WEBHOOK_TIMEOUT_MS } from '../../../src/modules/webhooks/sender.ts';
import { failureClass, OutboundClient } from '../../../src/security/outbound-client.ts';
import {
  ekaSignatureHeader,
  generateSigningKey,
  keyProblem,
  keyWarning,
  signatureHeader,
  standardKeyBytes,
} from '../../../src/modules/webhooks/signer.ts';
import { ekaVerify } from './eka-verifier.ts';

interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}

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
    port,
    received,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('webhook signer', () => {
  it('signs the Standard Webhooks way (verified by the standardwebhooks package)', () => {
    const key = generateSigningKey();
    assert.ok(standardKeyBytes(key));
    const body = JSON.stringify({ event: 'external_review.request', data: { a: 'é' } });
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = {
      'webhook-id': 'evt_1',
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader([key], 'evt_1', timestamp, body),
    };
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

  it('accepts whsec_ keys of 24 to 64 bytes, and other keys of 8 to 200 characters without spaces', () => {
    assert.ok(standardKeyBytes(`whsec_${randomBytes(24).toString('base64')}`));
    assert.ok(standardKeyBytes(`whsec_${randomBytes(64).toString('base64')}`));
    assert.equal(standardKeyBytes(`whsec_${randomBytes(23).toString('base64')}`), null);
    assert.equal(standardKeyBytes(`whsec_${randomBytes(65).toString('base64')}`), null);
    assert.equal(standardKeyBytes('whsec_not base64!'), null);
    assert.match(keyProblem('whsec_not base64!')!, /base64 of 24 to 64/);
    for (const key of [randomUUID(), 'supersecretkey', 'eight-ch', randomBytes(32).toString('base64'), 'ключ-подписи-для-eka', 'x'.repeat(200)]) {
      assert.equal(keyProblem(key), null, key);
      assert.deepEqual(standardKeyBytes(key), Buffer.from(key, 'utf8'));
    }
    for (const key of ['seven-c', 'has a space in it', 'tab\there-0123456789', 'x'.repeat(201), '\ud800-lone-surrogate-key', '']) {
      assert.match(keyProblem(key) ?? '', /8 to 200 characters/, JSON.stringify(key));
      assert.equal(standardKeyBytes(key), null);
    }
  });

  it('warns of a guessable text key (short, or runs and repeats), not of a UUID, 32 random bytes or a generated key', () => {
    for (const key of ['supersecretkey', 'eight-ch', 'passwordpassword', 'a'.repeat(40), '0123456789abcdefghij']) {
      assert.match(keyWarning(key) ?? '', /signing_key is guessable \(about 10\^\d+ guesses\)/, key);
    }
    for (const key of [randomUUID(), randomBytes(32).toString('base64'), randomBytes(12).toString('hex'), generateSigningKey()]) {
      assert.equal(keyWarning(key), null, key);
    }
  });

  it("signs with a text key's UTF-8 bytes the Standard Webhooks way (the libraries' raw format)", () => {
    const key = randomUUID();
    const body = '{"event":"x"}';
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = {
      'webhook-id': 'evt_3',
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader([key], 'evt_3', timestamp, body),
    };
    assert.deepEqual(new Webhook(key, { format: 'raw' }).verify(body, headers), { event: 'x' });
  });

  it('writes Eka\'s header: t and the hex HMAC-SHA256 of "t.body" keyed with the key\'s text, whsec_ keys included', () => {
    const body = '{"event":"appointment.created","data":{"name":"Zo\\u00eb"}}';
    const timestamp = Math.floor(Date.now() / 1000);
    for (const key of [randomUUID(), generateSigningKey()]) {
      const header = ekaSignatureHeader([key], timestamp, body);
      const expected = createHmac('sha256', key).update(`${timestamp}.${body}`).digest('hex');
      assert.equal(header, `t=${timestamp},v1=${expected}`);
      assert.equal(ekaVerify(key, body, header), null);
      assert.equal(ekaVerify(randomUUID(), body, header), 'invalid signature');
      assert.equal(ekaVerify(key, body.replace('Zo', 'Za'), header), 'invalid signature');
      const old = ekaSignatureHeader([key], timestamp - 181, body);
      assert.equal(ekaVerify(key, body, old), 'outside the tolerance');
    }
  });

  it("carries a v1 per key during a rotation in Eka's header too, the current key's last", () => {
    const [oldKey, newKey] = [randomUUID(), randomUUID()];
    const timestamp = Math.floor(Date.now() / 1000);
    const header = ekaSignatureHeader([newKey, oldKey], timestamp, '{}');
    const signatures = header.split(',').slice(1);
    assert.equal(signatures.length, 2);
    assert.equal(signatures[1], `v1=${createHmac('sha256', newKey).update(`${timestamp}.{}`).digest('hex')}`);
    assert.equal(signatures[0], `v1=${createHmac('sha256', oldKey).update(`${timestamp}.{}`).digest('hex')}`);
    // A verifier that keeps the last v1, as Eka's sample does, checks the current key.
    assert.equal(ekaVerify(newKey, '{}', header), null);
  });
});

describe('webhook sender', () => {
  let server: Awaited<ReturnType<typeof receiver>>;
  const client = new OutboundClient({ publicOnly: false });
  before(async () => {
    server = await receiver((req, res) => {
      if (req.url === '/redirect') {
        res.writeHead(302, { location: '/ok' });
        res.end();
        return;
      }
      if (req.url === '/busy') {
        res.writeHead(503, { 'retry-after': '120' });
        res.end('busy');
        return;
      }
      if (req.url === '/hang') return; // never answers
      res.writeHead(204);
      res.end();
    });
  });
  after(async () => {
    client.close();
    await server.close();
  });

  it('POSTs the body with the given headers and reports the status', async () => {
    const sender = createSender(client);
    const result = await sender.send(`http://127.0.0.1:${server.port}/ok`, { 'content-type': 'application/json', 'webhook-id': 'evt_x' }, '{"a":1}');
    assert.equal(result.statusCode, 204);
    const last = server.received.at(-1)!;
    assert.equal(last.body, '{"a":1}');
    assert.equal(last.headers['content-type'], 'application/json');
    assert.equal(last.headers['webhook-id'], 'evt_x');
  });

  it('does not follow redirects, reads Retry-After, and gives up after the timeout', async () => {
    const sender = createSender(client, 200);
    const before = server.received.length;
    assert.equal((await sender.send(`http://127.0.0.1:${server.port}/redirect`, {}, '{}')).statusCode, 302);
    assert.equal(server.received.length, before + 1, 'the redirect was not followed');
    assert.deepEqual(await sender.send(`http://127.0.0.1:${server.port}/busy`, {}, '{}'), { statusCode: 503, retryAfterSeconds: 120 });
    await assert.rejects(sender.send(`http://127.0.0.1:${server.port}/hang`, {}, '{}'), (error) => failureClass(error) === 'timed out');
  });

  it('waits 15 s for an answer by default (contract 8: a 2xx within 15 s is success)', () => {
    assert.equal(WEBHOOK_TIMEOUT_MS, 15_000);
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    assert.equal(parseRetryAfter('30'), 30);
    assert.equal(parseRetryAfter(new Date(Date.now() + 90_000).toUTCString()), 90);
    assert.equal(parseRetryAfter('soon'), null);
    assert.equal(parseRetryAfter('99999999999999999999'), 7 * 86_400);
    assert.equal(parseRetryAfter(undefined), null);
  });

  it('refuses loopback in production before connecting (the policy itself is tested in test/security)', async () => {
    const production = new OutboundClient({ publicOnly: true });
    const before = server.connections();
    for (const endpoint of [
      `https://localhost:${server.port}/hook`,
      `https://127.0.0.1:${server.port}/hook`,
      `http://localhost:${server.port}/hook`,
    ]) {
      await assert.rejects(createSender(production).send(endpoint, {}, '{}'), (error) => failureClass(error) === 'address not allowed');
    }
    production.close();
    assert.equal(server.connections(), before, 'no connection was made');
  });
});
