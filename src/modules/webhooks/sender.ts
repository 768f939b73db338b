/**
 * Sends one webhook attempt: POST, 15 s limit, no redirects followed. In production the address
 * actually connected to must be public: the check runs inside the socket's DNS lookup, so the
 * address checked is the address used (a hostname that re-resolves to 127.0.0.1 after
 * registration — DNS rebinding — is refused at connect time), and IP literals are checked up front
 * because Node connects to them without a lookup.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/** Addresses a production webhook may never reach: loopback, private, link-local, metadata, reserved. */
const BLOCKED = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) BLOCKED.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 128], ['::1', 128], ['100::', 64], ['2001::', 32], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10],
  ['fec0::', 10], ['ff00::', 8],
] as const) BLOCKED.addSubnet(network, prefix, 'ipv6');

/** The IPv4 address inside an IPv4-mapped, -compatible or NAT64 IPv6 address, if any. */
function embeddedIpv4(address: string): string | null {
  const match = /^(?:::ffff:|::|64:ff9b::)(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(address);
  if (!match) return null;
  if (match[1]) return match[1];
  const high = parseInt(match[2]!, 16);
  const low = parseInt(match[3]!, 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !BLOCKED.check(address, 'ipv4');
  if (family !== 6) return false;
  const v4 = embeddedIpv4(address);
  if (v4 !== null && v4 !== '0.0.0.0' && v4 !== '0.0.0.1') return !BLOCKED.check(v4, 'ipv4');
  return !BLOCKED.check(address, 'ipv6');
}

export class BlockedAddressError extends Error {
  readonly code = 'EBLOCKEDADDRESS';
  constructor(host: string) {
    super(`${host} resolves to a loopback, private, link-local or metadata address, which webhooks may not reach in production`);
    this.name = 'BlockedAddressError';
  }
}

export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (hostname) => new Promise((resolve, reject) => {
  dnsLookup(hostname, { all: true, verbatim: true } satisfies LookupAllOptions, (error, addresses) => (error ? reject(error) : resolve(addresses)));
});

/** URL hostname without IPv6 brackets. */
export function bareHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * Whether `url`'s host may be used in production: IP literals and names must map to public
 * addresses only. A name that does not resolve now passes (delivery checks again at connect time).
 */
export async function checkHost(url: URL, resolve: Resolver = systemResolver): Promise<boolean> {
  const host = bareHost(url);
  if (isIP(host)) return isPublicAddress(host);
  if (host === 'localhost' || host.endsWith('.localhost')) return false;
  let addresses: LookupAddress[];
  try {
    addresses = await resolve(host);
  } catch {
    return true;
  }
  return addresses.every((a) => isPublicAddress(a.address));
}

/** A socket lookup that refuses a name if any of its addresses is not public. */
function guardedLookup(resolve: Resolver): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    resolve(hostname).then((addresses) => {
      if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }));
      if (!addresses.every((a) => isPublicAddress(a.address))) return callback(new BlockedAddressError(hostname));
      if (options.all) callback(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    }, (error: unknown) => callback(error));
  }) as LookupFunction;
}

export interface SendOptions {
  /** Production: only public addresses, checked at connect time. */
  publicOnly: boolean;
  timeoutMs?: number;
  /** Name resolution, replaceable in tests. */
  resolve?: Resolver;
}

export interface SendResult {
  statusCode: number;
  /** Seconds from Retry-After (delta or HTTP date), when the receiver sent one. */
  retryAfterSeconds: number | null;
}

export interface Sender {
  /** Resolves with the response status (any status); rejects on network errors, timeouts and blocked addresses. */
  send(endpoint: string, headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<SendResult>;
  close(): void;
}

/** A receiver cannot push a retry further out than this (and past what the database can store). */
export const MAX_RETRY_AFTER_SECONDS = 7 * 86_400;

export function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  let seconds: number;
  if (/^\d+$/.test(trimmed)) seconds = Number(trimmed);
  else {
    const date = Date.parse(trimmed);
    if (Number.isNaN(date)) return null;
    seconds = Math.max(0, Math.ceil((date - now) / 1000));
  }
  return Math.min(seconds, MAX_RETRY_AFTER_SECONDS);
}

export function createSender(options: SendOptions): Sender {
  const timeoutMs = options.timeoutMs ?? 15_000;
  const resolve = options.resolve ?? systemResolver;
  const lookup = options.publicOnly ? guardedLookup(resolve) : undefined;
  // Keep-alive reuses a socket only to the address its lookup approved.
  const agents = {
    'http:': new http.Agent({ keepAlive: true, maxSockets: 50, ...(lookup ? { lookup } : {}) }),
    'https:': new https.Agent({ keepAlive: true, maxSockets: 50, ...(lookup ? { lookup } : {}) }),
  };
  return {
    send(endpoint, headers, body, signal) {
      const url = new URL(endpoint);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return Promise.reject(new Error(`unsupported scheme ${url.protocol}`));
      if (options.publicOnly) {
        if (url.protocol !== 'https:') return Promise.reject(new Error('production webhooks must use https'));
        const host = bareHost(url);
        if (isIP(host) && !isPublicAddress(host)) return Promise.reject(new BlockedAddressError(host));
      }
      const timeout = AbortSignal.timeout(timeoutMs);
      const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
      return new Promise<SendResult>((resolvePromise, reject) => {
        const request = (url.protocol === 'https:' ? https : http).request(url, {
          method: 'POST',
          agent: url.protocol === 'https:' ? agents['https:'] : agents['http:'],
          headers: { ...headers, 'content-length': Buffer.byteLength(body) },
          signal: combined,
          ...(lookup ? { lookup } : {}),
        }, (response) => {
          // Only the status matters; drain the body so the socket can be reused.
          response.resume();
          response.on('error', () => {});
          const retryAfter = response.headers['retry-after'];
          resolvePromise({ statusCode: response.statusCode ?? 0, retryAfterSeconds: parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter) });
        });
        request.on('error', (error) => {
          if (timeout.aborted) reject(new Error(`no response within ${timeoutMs / 1000} s`));
          else reject(error);
        });
        request.end(body);
      });
    },
    close() {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}
