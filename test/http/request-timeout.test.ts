/** A request whose head or body arrives too slowly is answered 408 and its connection closed (CPS_REQUEST_TIMEOUT_SECONDS). */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { timeoutCheckIntervalMs } from '../../src/app.ts';
import { createTestApp, DIALECT, type TestApp } from '../support.ts';

describe(`request timeout (${DIALECT})`, () => {
  let t: TestApp;
  let port: number;
  before(async () => {
    t = await createTestApp({ env: { CPS_REQUEST_TIMEOUT_SECONDS: '1' } });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    port = (t.app.server.address() as net.AddressInfo).port;
  });
  after(() => t.close());

  /** Sends `head`, then drips `body` a byte every `everyMs`; resolves with what came back and when the socket closed. */
  function drip(head: string, body: string, everyMs: number): Promise<{ answer: string; closedAfterMs: number }> {
    return new Promise((resolve, reject) => {
      const started = Date.now();
      const socket = net.connect(port, '127.0.0.1');
      let answer = '';
      let sent = 0;
      const timer = setInterval(() => {
        if (sent < body.length && !socket.destroyed) socket.write(body[sent++]!);
      }, everyMs);
      socket.on('connect', () => socket.write(head));
      socket.on('data', (chunk) => (answer += chunk));
      socket.on('error', () => {});
      socket.on('close', () => {
        clearInterval(timer);
        resolve({ answer, closedAfterMs: Date.now() - started });
      });
      setTimeout(() => {
        clearInterval(timer);
        socket.destroy();
        reject(new Error(`socket still open after 10 s; got: ${answer}`));
      }, 10_000);
    });
  }

  it('answers 408 and closes a login whose body is dripped, before authentication', async () => {
    const body = JSON.stringify({ client_id: 'cl_x', client_secret: 'cs_y' });
    const head = `POST /connect-auth/v1/account/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const { answer, closedAfterMs } = await drip(head, body, 200);
    assert.match(answer, /^HTTP\/1\.1 408 /);
    assert.ok(closedAfterMs >= 900 && closedAfterMs < 3000, `closed after ${closedAfterMs} ms`);
  });

  it('closes the connection of a refused request whose body goes on dripping', async () => {
    // No token: 401 at once, but the body still owns the connection until the timeout ends it.
    const head = 'POST /dr/v1/patient HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n';
    const { answer, closedAfterMs } = await drip(head, '{"x":'.padEnd(100, ' '), 200);
    assert.match(answer, /^HTTP\/1\.1 401 .*HTTP\/1\.1 408 Request Timeout\r\n.*Connection: close/s);
    assert.ok(closedAfterMs < 3000, `closed after ${closedAfterMs} ms`);
  });

  it('checks for late requests a tenth of the timeout apart, between 0.1 s and 3 s', () => {
    assert.deepEqual([1000, 30_000, 60_000, 500].map(timeoutCheckIntervalMs), [100, 3000, 3000, 100]);
  });

  it('lets a request sent in time through', async () => {
    const response = await fetch(`http://127.0.0.1:${port}/health`);
    assert.equal(response.status, 200);
  });
});
