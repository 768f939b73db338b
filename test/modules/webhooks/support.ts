/** Shared by the webhooks tests: a receiver that records and answers as told, and events. */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inTransaction, type Storage } from '../../../src/db/index.ts';
import { recordEvent } from '../../../src/jobs/outbox.ts';
import type { EventBody } from '../../../src/events.ts';

export interface Delivery {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Receiver {
  url: string;
  port: number;
  received: Delivery[];
  /** Connections accepted, to prove that a refused address was never connected to. */
  connections(): number;
  /** The most requests carrying one webhook-id that were in flight at once. */
  maxConcurrentPerId(): number;
  close(): Promise<void>;
}

export type Answer = { status: number; headers?: Record<string, string>; delayMs?: number };

/** Answers each request with `answer(delivery, nthForThisId)` (default 200). */
export async function startReceiver(answer: (delivery: Delivery, nth: number) => Answer = () => ({ status: 200 })): Promise<Receiver> {
  const received: Delivery[] = [];
  const perId = new Map<string, number>();
  const inFlight = new Map<string, number>();
  let maxConcurrent = 0;
  let connections = 0;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const delivery = { headers: req.headers, body, at: Date.now() };
      received.push(delivery);
      const id = String(req.headers['webhook-id']);
      const nth = (perId.get(id) ?? 0) + 1;
      perId.set(id, nth);
      const now = (inFlight.get(id) ?? 0) + 1;
      inFlight.set(id, now);
      maxConcurrent = Math.max(maxConcurrent, now);
      const reply = answer(delivery, nth);
      setTimeout(() => {
        inFlight.set(id, (inFlight.get(id) ?? 1) - 1);
        res.writeHead(reply.status, reply.headers ?? {});
        res.end();
      }, reply.delayMs ?? 0);
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    received,
    connections: () => connections,
    maxConcurrentPerId: () => maxConcurrent,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** An interface-6 body, as the appointments module stores it. */
export function reviewEvent(businessId: string, n = 1): EventBody<'external_review.request'> {
  const now = Math.floor(Date.now() / 1000);
  return {
    event: 'external_review.request' as const,
    event_time: now,
    timestamp: now,
    client_id: 'cli_test',
    business_id: businessId,
    data: {
      doctor_id: `doc_${n}`,
      external_review_link: `https://cps.test/reviews/tok_${n}`,
      patient_id: `pat_${n}`,
      appointment_id: `apt_${n}`,
      clinic_id: `cli_${n}`,
    },
  };
}

/** Records an external_review.request event as a change's transaction would; returns its id. */
export function recordReviewEvent(storage: Storage, businessId: string, n = 1): Promise<string> {
  return inTransaction(storage.db, (trx) => recordEvent(trx, { businessId, type: 'external_review.request', payload: reviewEvent(businessId, n) }));
}

export async function until(check: () => Promise<boolean> | boolean, everyMs = 20): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, everyMs));
}
