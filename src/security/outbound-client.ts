/**
 * The one HTTP client for connections made on a client's word or a stored value (webhooks, the push
 * token endpoint, FCM). Every request passes the outbound policy (outbound.ts): the static rules up
 * front and the address rules in the socket's DNS lookup. No redirect is followed, a request gets
 * a time limit, and a response body is read up to a bound.
 *
 * What a client may see of a failure is its class (failureClass); the details are for the log.
 */
import type { LookupAddress, LookupOptions } from 'node:dns';
import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { AddressNotAllowedError, OutboundPolicy, type PolicyOptions } from './outbound.ts';

/** A request without a complete answer by then fails as 'timed out'. */
export const OUTBOUND_TIMEOUT_MS = 15_000;
/** Response bodies are read up to this size; the rest is discarded. */
export const MAX_RESPONSE_BYTES = 64 * 1024;
/** Connections kept per destination (host and port) and per scheme. */
const MAX_SOCKETS = 50;

export interface OutboundRequest {
  method?: 'POST' | 'GET';
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** false: resolve when the status arrives and discard the body (webhooks need only the status). */
  readBody?: boolean;
}

export interface OutboundResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** Up to MAX_RESPONSE_BYTES of the body as UTF-8; '' when readBody is false. */
  body: string;
}

/** What a client is shown of a failed attempt without a response; HTTP statuses are shown as "HTTP <status>". */
export type FailureClass = 'address not allowed' | 'could not connect' | 'timed out' | 'interrupted';

export class OutboundTimeoutError extends Error {
  readonly code = 'ERR_OUTBOUND_TIMEOUT';
  constructor(timeoutMs: number) {
    super(`no complete response within ${timeoutMs / 1000} s`);
    this.name = 'TimeoutError';
  }
}

/**
 * The class of an outbound failure. Refused addresses, DNS failures, refused connections, resets
 * and TLS errors must not be told apart beyond these classes: a client could map networks with them.
 */
export function failureClass(error: unknown): FailureClass {
  if (error instanceof AddressNotAllowedError) return 'address not allowed';
  if (error instanceof OutboundTimeoutError) return 'timed out';
  if ((error as { name?: string } | null)?.name === 'AbortError') return 'interrupted';
  return 'could not connect';
}

/** The full failure for the server log (never shown to a client): class, code and message. */
export function failureDetail(error: unknown): { failure: FailureClass; code?: string; detail: string } {
  const e = error as { code?: unknown; message?: unknown } | null;
  return {
    failure: failureClass(error),
    ...(typeof e?.code === 'string' ? { code: e.code } : {}),
    detail: typeof e?.message === 'string' ? e.message : String(error),
  };
}

/** What an aborted request fails with, as a request given the signal would (failureClass: 'interrupted'). */
function abortError(reason: unknown): Error {
  return Object.assign(new Error('The operation was aborted', { cause: reason }), { name: 'AbortError', code: 'ABORT_ERR' });
}

export interface OutboundClientOptions extends PolicyOptions {
  timeoutMs?: number;
  /**
   * Tests only: the address a connection the policy approved really goes to (a loopback listener
   * standing in for a LAN receiver), so the allow-list is shown end to end without leaving the machine.
   */
  connectTo?: (approvedAddress: string) => string;
}

/** A lookup whose approved answers are replaced by connectTo's (tests only). */
function redirected(lookup: LookupFunction, connectTo: (address: string) => string): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    lookup(hostname, options as LookupOptions, (error: unknown, address: unknown, family?: number) => {
      if (error) return callback(error);
      if (Array.isArray(address))
        callback(
          null,
          (address as LookupAddress[]).map((entry) => ({ ...entry, address: connectTo(entry.address) })),
        );
      else callback(null, connectTo(address as string), family);
    });
  }) as LookupFunction;
}

export class OutboundClient {
  readonly policy: OutboundPolicy;
  private readonly timeoutMs: number;
  // Keep-alive reuses a socket only for the destination whose lookup approved it.
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly httpsLookup: LookupFunction;
  private readonly httpLookup: LookupFunction;

  constructor(options: OutboundClientOptions) {
    this.policy = new OutboundPolicy(options);
    this.timeoutMs = options.timeoutMs ?? OUTBOUND_TIMEOUT_MS;
    const connectTo = options.connectTo;
    this.httpsLookup = connectTo ? redirected(this.policy.lookup, connectTo) : this.policy.lookup;
    this.httpLookup = connectTo ? redirected(this.policy.httpLookup, connectTo) : this.policy.httpLookup;
    const agentOptions = { keepAlive: true, maxSockets: MAX_SOCKETS };
    this.httpAgent = new http.Agent({ ...agentOptions, lookup: this.httpLookup });
    this.httpsAgent = new https.Agent({ ...agentOptions, lookup: this.httpsLookup });
  }

  /** Resolves with any HTTP status; rejects on refused addresses, network errors and timeouts. */
  request(target: string | URL, init: OutboundRequest): Promise<OutboundResponse> {
    let url: URL;
    try {
      url = new URL(target);
      if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new AddressNotAllowedError(url.hostname, 'unsupported scheme');
      this.policy.assertStatic(url);
    } catch (error) {
      return Promise.reject(error);
    }
    const timeoutMs = init.timeoutMs ?? this.timeoutMs;
    const signal = init.signal;
    const body = init.body ?? '';
    const secure = url.protocol === 'https:';

    // One timer and one abort listener per request, both removed when it settles (a timeout signal
    // combined with the caller's with AbortSignal.any cost more than the rest of the request).
    return new Promise<OutboundResponse>((resolve, reject) => {
      let settled = false;
      let timedOut = false;
      let timer: NodeJS.Timeout | undefined;
      const onAbort = () => request.destroy(abortError(signal!.reason));
      const finish = () => {
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const fail = (error: unknown) => {
        if (settled) return;
        finish();
        reject(timedOut ? new OutboundTimeoutError(timeoutMs) : error);
      };
      const request = (secure ? https : http).request(
        url,
        {
          method: init.method ?? 'POST',
          agent: secure ? this.httpsAgent : this.httpAgent,
          lookup: secure ? this.httpsLookup : this.httpLookup,
          headers: { ...init.headers, 'content-length': Buffer.byteLength(body) },
        },
        (response) => {
          const status = response.statusCode ?? 0;
          const chunks: Buffer[] = [];
          let size = 0;
          response.on('data', (chunk: Buffer) => {
            if (init.readBody !== false && size < MAX_RESPONSE_BYTES) chunks.push(chunk.subarray(0, MAX_RESPONSE_BYTES - size));
            size += chunk.length;
            // A receiver that sends without end loses its connection rather than holding ours.
            if (size > MAX_RESPONSE_BYTES) response.destroy();
          });
          response.on('error', fail);
          const settle = () => {
            if (settled) return;
            finish();
            resolve({ status, headers: response.headers, body: Buffer.concat(chunks).toString('utf8') });
          };
          if (init.readBody === false) return settle();
          response.on('end', settle);
          response.on('close', () => {
            if (size > MAX_RESPONSE_BYTES || response.complete) settle();
            else fail(Object.assign(new Error('the response ended early'), { code: 'ECONNRESET' }));
          });
        },
      );
      request.on('error', fail);
      timer = setTimeout(() => {
        timedOut = true;
        request.destroy(new OutboundTimeoutError(timeoutMs));
      }, timeoutMs);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
      request.end(body);
    });
  }

  /** Closes idle keep-alive sockets (after the jobs that use them have stopped). */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
