import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { MAX_RESPONSE_BYTES, OutboundClient, failureClass, failureDetail } from '../../src/security/outbound-client.ts';
import { AddressNotAllowedError } from '../../src/security/outbound.ts';
import { freePort } from '../net.ts';
import { countingListener, stubResolver, type CountingListener } from './support.ts';

/** A loopback HTTP receiver (development-mode tests only) that counts connections. */
async function receiver(handle: (req: IncomingMessage, res: ServerResponse) => void) {
  let connections = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => handle(req, res));
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('the request succeeded');
}

describe('outbound client (development: loopback allowed)', () => {
  let server: Awaited<ReturnType<typeof receiver>>;
  const client = new OutboundClient({ publicOnly: false });
  before(async () => {
    server = await receiver((req, res) => {
      if (req.url === '/big') {
        res.writeHead(200);
        res.end('x'.repeat(MAX_RESPONSE_BYTES * 3));
        return;
      }
      if (req.url === '/hang') return;
      if (req.url === '/redirect') {
        res.writeHead(302, { location: '/json' });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'retry-after': '5' });
      res.end('{"ok":true}');
    });
  });
  after(async () => {
    client.close();
    await server.close();
  });

  it('POSTs and reads status, headers and body; follows no redirect', async () => {
    const response = await client.request(`http://127.0.0.1:${server.port}/json`, { headers: { 'content-type': 'text/plain' }, body: 'hi' });
    assert.equal(response.status, 200);
    assert.equal(response.headers['retry-after'], '5');
    assert.deepEqual(JSON.parse(response.body), { ok: true });
    assert.equal((await client.request(`http://localhost:${server.port}/redirect`, { headers: {} })).status, 302);
  });

  it('reads a body up to the bound and drops the rest', async () => {
    const response = await client.request(`http://127.0.0.1:${server.port}/big`, { method: 'GET', headers: {} });
    assert.equal(response.status, 200);
    assert.equal(response.body.length, MAX_RESPONSE_BYTES);
  });

  it('classifies failures: a closed port and a TLS failure are the same class, a silent receiver times out', async () => {
    const closed = await failure(client.request(`http://127.0.0.1:${await freePort()}/`, { headers: {} }));
    // https to a plain-HTTP port: a TLS error, which must not be told apart from a closed port.
    const tls = await failure(client.request(`https://127.0.0.1:${server.port}/json`, { headers: {} }));
    const unresolvable = await failure(
      new OutboundClient({ publicOnly: false, resolve: stubResolver().resolve }).request('http://nowhere.test/', { headers: {} }),
    );
    const slow = await failure(client.request(`http://127.0.0.1:${server.port}/hang`, { headers: {}, timeoutMs: 100 }));
    const scheme = await failure(client.request('ftp://127.0.0.1/', { headers: {} }));
    const aborted = await failure(client.request(`http://127.0.0.1:${server.port}/hang`, { headers: {}, signal: AbortSignal.abort() }));
    assert.equal(failureClass(closed), 'could not connect');
    assert.equal(failureClass(tls), 'could not connect');
    assert.equal(failureClass(unresolvable), 'could not connect');
    assert.equal(failureClass(slow), 'timed out');
    assert.equal(failureClass(scheme), 'address not allowed');
    assert.equal(failureClass(aborted), 'interrupted');
    // The log keeps the details the class hides.
    assert.equal(failureDetail(closed).code, 'ECONNREFUSED');
    assert.notEqual(failureDetail(tls).code, 'ECONNREFUSED');
  });
});

describe('outbound client (production: public https only)', () => {
  let listener: CountingListener;
  before(async () => {
    listener = await countingListener();
  });
  after(() => listener.close());

  it('refuses loopback literals in every spelling and plain http before connecting', async () => {
    const dns = stubResolver();
    const client = new OutboundClient({ publicOnly: true, resolve: dns.resolve });
    for (const url of [
      `https://127.0.0.1:${listener.port}/`,
      `https://2130706433:${listener.port}/`,
      `https://0x7f.1:${listener.port}/`,
      `https://0177.0.0.1:${listener.port}/`,
      `https://127.1:${listener.port}/`,
      `https://[::1]:${listener.port}/`,
      `https://[::ffff:127.0.0.1]:${listener.port}/`,
      `https://[0:0:0:0:0:ffff:7f00:1]:${listener.port}/`,
      `https://[64:ff9b::7f00:1]:${listener.port}/`,
      `https://[2002:7f00:1::]:${listener.port}/`,
      `https://localhost:${listener.port}/`,
      `https://localhost.:${listener.port}/`,
      `http://example.test:${listener.port}/`,
    ]) {
      const error = await failure(client.request(url, { headers: {} }));
      assert.ok(error instanceof AddressNotAllowedError, url);
      assert.equal(failureClass(error), 'address not allowed');
    }
    client.close();
    assert.deepEqual(dns.asked, []);
    assert.equal(listener.connections(), 0, 'nothing was dialled');
  });

  it('refuses at connect time a name that now resolves to loopback (DNS rebinding)', async () => {
    const dns = stubResolver({ 'rebind.test': ['93.184.215.14'] });
    const client = new OutboundClient({ publicOnly: true, resolve: dns.resolve });
    assert.equal(await client.policy.check(new URL(`https://rebind.test:${listener.port}/hook`)), null, 'public at registration');
    for (const answer of ['127.0.0.1', '::ffff:127.0.0.1']) {
      dns.answer('rebind.test', [answer]);
      const error = await failure(client.request(`https://rebind.test:${listener.port}/hook`, { headers: {}, body: '{}' }));
      assert.ok(error instanceof AddressNotAllowedError, answer);
    }
    client.close();
    assert.deepEqual(dns.asked, ['rebind.test', 'rebind.test', 'rebind.test'], 'the socket asked DNS itself');
    assert.equal(listener.connections(), 0, 'the loopback listener received nothing');
  });
});
