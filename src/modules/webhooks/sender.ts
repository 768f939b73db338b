/**
 * Sends one webhook attempt: POST through the outbound client (src/security/outbound-client.ts),
 * which applies the address policy at connect time, follows no redirect and gives up after 15 s.
 * Only the status and Retry-After matter; the body is discarded.
 */
import type { OutboundClient } from '../../security/outbound-client.ts';

/** The contract's limit: a 2xx within 15 s is success. */
export const WEBHOOK_TIMEOUT_MS = 15_000;

export interface SendResult {
  statusCode: number;
  /** Seconds from Retry-After (delta or HTTP date), when the receiver sent one. */
  retryAfterSeconds: number | null;
}

export interface Sender {
  /** Resolves with the response status (any status); rejects on network errors, timeouts and refused addresses. */
  send(endpoint: string, headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<SendResult>;
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

export function createSender(client: OutboundClient, timeoutMs = WEBHOOK_TIMEOUT_MS): Sender {
  return {
    async send(endpoint, headers, body, signal) {
      const response = await client.request(endpoint, { method: 'POST', headers, body, signal, timeoutMs, readBody: false });
      const retryAfter = response.headers['retry-after'];
      return { statusCode: response.status, retryAfterSeconds: parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter) };
    },
  };
}
