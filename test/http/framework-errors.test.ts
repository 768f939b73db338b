/**
 * Errors raised before any route runs (the router's and Node's HTTP parser's) answer in the family
 * body of their path, with x-request-id and Cache-Control: no-store. The router's through
 * app.inject(); the parser's through a raw socket to the app listening on loopback.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { MAX_PARAM_LENGTH } from '../../src/app.ts';
import { createTestApp, DIALECT, type TestApp } from '../support.ts';

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends `request` as is and reads the answer until the server closes the connection. */
function rawRequest(port: number, request: string | Buffer): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    });
    socket.write(request);
  });
}

function assertCommonHeaders(headers: Record<string, string | string[] | number | undefined>): void {
  assert.match(String(headers['x-request-id']), /^req_/);
  assert.equal(headers['cache-control'], 'no-store');
  assert.match(String(headers['content-type']), /^application\/json/);
}

describe(`framework errors in the family body (${DIALECT})`, () => {
  let t: TestApp;
  let port: number;
  before(async () => {
    t = await createTestApp();
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const address = t.app.server.address();
    port = typeof address === 'object' && address ? address.port : 0;
  });
  after(async () => t.close());

  describe('router errors (inject)', () => {
    it('answers bad percent-encoding with 400 in each family', async () => {
      const cases: Array<[string, unknown]> = [
        ['/dr/v1/appointment/%zz', { error: { code: 'INVALID_REQUEST', message: 'The URL path is not validly percent-encoded.' } }],
        ['/mr/api/v1/cases/%E0%A4%A', { error: 'The URL path is not validly percent-encoded.', code: 'INVALID_REQUEST' }],
        ['/cdr/v1/clinic/%ff', { message: ['The URL path is not validly percent-encoded.'] }],
        ['/notification/v1/connect/push/%', { message: 'The URL path is not validly percent-encoded.', error_code: 400 }],
        ['/connect-auth/v1/%c0%af', { code: 400, error: 'The URL path is not validly percent-encoded.' }],
        [
          '/notification/v1/connect/webhook/subscriptions/%zz',
          { error: { code: 'INVALID_REQUEST', message: 'The URL path is not validly percent-encoded.' } },
        ],
      ];
      for (const [url, body] of cases) {
        const response = await t.app.inject({ method: 'GET', url });
        assert.equal(response.statusCode, 400, url);
        assert.deepEqual(response.json(), body, url);
        assertCommonHeaders(response.headers);
      }
    });

    it('answers a path parameter over the router limit with 414 in the family body', async () => {
      const response = await t.app.inject({ method: 'GET', url: `/dr/v1/appointment/${'x'.repeat(MAX_PARAM_LENGTH + 1)}` });
      assert.equal(response.statusCode, 414);
      assert.deepEqual(response.json(), {
        error: { code: 'INVALID_REQUEST', message: `A path parameter is longer than ${MAX_PARAM_LENGTH} characters.` },
      });
      assertCommonHeaders(response.headers);
      const cases = await t.app.inject({ method: 'DELETE', url: `/mr/api/v1/cases/${'y'.repeat(MAX_PARAM_LENGTH + 1)}` });
      assert.equal(cases.statusCode, 414);
      assert.deepEqual(cases.json(), { error: `A path parameter is longer than ${MAX_PARAM_LENGTH} characters.`, code: 'INVALID_REQUEST' });
      assertCommonHeaders(cases.headers);
    });

    it('answers methods no route has with 404 in the family body', async () => {
      for (const method of ['PROPFIND', 'TRACE', 'OPTIONS'] as const) {
        const response = await t.app.inject({ method, url: '/dr/v1/appointment' });
        assert.equal(response.statusCode, 404, method);
        assert.deepEqual(response.json(), { error: { code: 'NOT_FOUND', message: `No route for ${method} /dr/v1/appointment` } });
        assertCommonHeaders(response.headers);
      }
    });
  });

  describe("Node's parser errors (loopback socket)", () => {
    it('answers a request head over the header limit with 431 in the family body', async () => {
      const big = 'a'.repeat(20_000);
      const response = await rawRequest(port, `GET /mr/api/v1/cases HTTP/1.1\r\nHost: localhost\r\nX-Big: ${big}\r\n\r\n`);
      assert.equal(response.status, 431);
      assertCommonHeaders(response.headers);
      const body = JSON.parse(response.body);
      assert.equal(body.code, 'INVALID_REQUEST');
      assert.match(body.error, /^The request line and headers are larger than \d+ bytes\.$/);
      assert.equal(Number(response.headers['content-length']), Buffer.byteLength(response.body));

      const standard = await rawRequest(
        port,
        `GET /notification/v1/connect/webhook/subscriptions HTTP/1.1\r\nHost: localhost\r\nX-Big: ${big}\r\n\r\n`,
      );
      assert.equal(standard.status, 431);
      assert.equal(JSON.parse(standard.body).error.code, 'INVALID_REQUEST');
      const longUrl = await rawRequest(port, `GET /medical-db/v1/drugs-and-labs?q=${big} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
      assert.equal(longUrl.status, 431);
      assert.deepEqual(Object.keys(JSON.parse(longUrl.body)).sort(), ['code', 'details', 'error']);
      assertCommonHeaders(longUrl.headers);
    });

    it('answers an unknown method, a bad Content-Length and a bad header name with 400 in the family body', async () => {
      const cases: Array<[string, string]> = [
        ['FOO /dr/v1/appointment HTTP/1.1\r\nHost: localhost\r\n\r\n', 'The HTTP method is unknown.'],
        ['POST /dr/v1/appointment HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\n', 'The Content-Length header is invalid.'],
        [
          'POST /dr/v1/appointment HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello',
          'The Content-Length header is invalid.',
        ],
        ['GET /dr/v1/appointment HTTP/1.1\r\nHost: localhost\r\nX-Bad\u0001Name: 1\r\n\r\n', 'The request is not valid HTTP/1.1.'],
      ];
      for (const [request, message] of cases) {
        const response = await rawRequest(port, Buffer.from(request, 'latin1'));
        assert.equal(response.status, 400, request);
        assert.deepEqual(JSON.parse(response.body), { error: { code: 'INVALID_REQUEST', message } }, request);
        assertCommonHeaders(response.headers);
      }
    });

    it('answers CONNECT with 405 in the standard family body instead of dropping the connection', async () => {
      const response = await rawRequest(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
      assert.equal(response.status, 405);
      assert.deepEqual(JSON.parse(response.body), { error: { code: 'INVALID_REQUEST', message: 'The CONNECT method is not supported.' } });
      assertCommonHeaders(response.headers);
    });

    it('answers a malformed chunked body, before any handler answered, in the family body', async () => {
      const response = await rawRequest(
        port,
        'POST /connect-auth/v1/account/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n' +
          'Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n',
      );
      assert.equal(response.status, 400);
      assert.deepEqual(JSON.parse(response.body), { code: 400, error: 'The chunked request body is malformed.' });
      assertCommonHeaders(response.headers);
    });

    it('answers a request line that is not HTTP/1.x with the family body of its path, or the standard one', async () => {
      const version = await rawRequest(port, 'GET /mr/api/v1/cases HTTP/9.9\r\nHost: localhost\r\n\r\n');
      assert.equal(version.status, 400);
      assert.deepEqual(JSON.parse(version.body), { error: 'The request is not valid HTTP/1.1.', code: 'INVALID_REQUEST' });
      assertCommonHeaders(version.headers);
      const garbage = await rawRequest(port, '\u0001\u0002garbage\r\n\r\n');
      assert.equal(garbage.status, 400);
      assert.equal(JSON.parse(garbage.body).error.code, 'INVALID_REQUEST');
      assertCommonHeaders(garbage.headers);
    });
  });
});
