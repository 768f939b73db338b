/** Shared code of the Idempotency-Key tests: keyed requests, a gated probe route, a second app on the same database. */
import { randomBytes } from 'node:crypto';
import { buildApp, createContext } from '../../../src/app.ts';
import type { FastifyContextConfig } from 'fastify';
import type { App } from '../../../src/http/app-type.ts';
import { openStorage, type Storage } from '../../../src/db/index.ts';
import { createLogger } from '../../../src/logger.ts';
import { bearer, testConfig, testKeys, type TestApp } from '../../support.ts';

export type Response = Awaited<ReturnType<App['inject']>>;

export function newKey(): string {
  return `key-${randomBytes(8).toString('hex')}`;
}

/** A request with `key` as its Idempotency-Key (none when null). */
export function keyed(
  app: App,
  token: string,
  method: string,
  url: string,
  key: string | null,
  payload?: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return app.inject({
    method: method as 'POST',
    url,
    headers: { ...bearer(token), ...(key === null ? {} : { 'idempotency-key': key }), ...headers },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}

/**
 * A probe route on `app` (before it is ready) whose handler waits for the test to open its gate and
 * counts its runs; `answer` decides its response (a status to throw, or a body).
 */
export class Probe {
  runs = 0;
  started = 0;
  #gate: Promise<void> = Promise.resolve();
  #open: () => void = () => {};
  answer: (run: number) => { status: number; body?: unknown } = (run) => ({ status: 201, body: { run } });

  static readonly URL = '/dr/v1/test-probe';

  install(app: App, config: FastifyContextConfig = {}): void {
    app.post(Probe.URL, { config: { family: 'appointments', auth: { anyOf: [] }, idempotent: true, ...config } }, async (_request, reply) => {
      this.started++;
      await this.#gate;
      const answer = this.answer(++this.runs);
      return reply.code(answer.status).send(answer.body ?? { error: { code: 'SERVER_ERROR', message: 'probe failure' } });
    });
  }

  /** Holds every run that starts from now until open(). */
  close(): void {
    this.#gate = new Promise((resolve) => {
      this.#open = resolve;
    });
  }

  open(): void {
    this.#open();
  }
}

/** A second server on `t`'s database: its own storage, context and modules, as another process has. */
export async function secondApp(t: TestApp, setup?: (app: App) => void): Promise<{ app: App; storage: Storage; close(): Promise<void> }> {
  const config = testConfig(t.database);
  const storage = openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 5 });
  const app = await buildApp(createContext(config, storage, await testKeys(), createLogger('silent')));
  setup?.(app);
  await app.ready();
  return {
    app,
    storage,
    close: async () => {
      await app.close();
      await storage.destroy();
    },
  };
}

export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
