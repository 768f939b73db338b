/** Liveness, readiness and Prometheus metrics (contract section 9). */
import type { Redis } from 'ioredis';
import { sql } from 'kysely';
import type { App } from '../../http/app-type.ts';
import type { AppContext } from '../../context.ts';
import { lastFinished, queueDepth } from '../../jobs/queue-repo.ts';
import { StandardError } from '../../http/schemas.ts';
import { Type } from 'typebox';
import { RETENTION_JOB } from '../retention/index.ts';

/** Each readiness check gets this long: /ready answers within it even when the database does not. */
export const READY_CHECK_TIMEOUT_MS = 2000;

/** False when `check` fails, or has not answered within the timeout. */
async function passes(check: () => boolean | Promise<boolean>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), READY_CHECK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([
      Promise.resolve()
        .then(check)
        .catch(() => false),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export function opsRoutes(ctx: AppContext, redis: Redis | null) {
  return async function plugin(app: App): Promise<void> {
    const config = { auth: 'public' } as const;

    app.get('/health', { config, schema: { tags: ['operations'], summary: 'Liveness' } }, async () => ({ status: 'ok' }));

    app.get(
      '/ready',
      {
        config,
        schema: { tags: ['operations'], summary: 'Readiness: the database (and the Redis of CPS_REDIS_URL) answers and every module is loaded' },
      },
      async (_request, reply) => {
        const names = ['database', ...(redis ? ['redis'] : []), ...ctx.readiness.keys()];
        const results = await Promise.all([
          passes(async () => {
            await sql`select 1`.execute(ctx.storage.db);
            return true;
          }),
          ...(redis ? [passes(async () => (await redis.ping()) === 'PONG')] : []),
          ...[...ctx.readiness.values()].map(passes),
        ]);
        const checks: Record<string, boolean> = Object.fromEntries(names.map((name, i) => [name, results[i]!]));
        const ready = Object.values(checks).every(Boolean);
        return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', checks });
      },
    );

    app.get(
      '/admin/v1/operations',
      {
        config: { family: 'standard', auth: 'admin' },
        schema: {
          tags: ['admin'],
          summary: "The job queue's depth (jobs pending, running and failed, by kind, as the cps_jobs metric counts them) and retention's last run",
          description: 'Backups (cps backup) are recorded nowhere yet, so none is reported.',
          response: {
            200: Type.Object({
              queue: Type.Array(
                Type.Object({
                  kind: Type.String(),
                  status: Type.String(),
                  count: Type.Integer(),
                }),
              ),
              retention: Type.Object({
                last_run: Type.Union([
                  Type.Object({
                    status: Type.String(),
                    finished_at: Type.Integer({ description: 'epoch ms' }),
                    last_error: Type.Union([Type.String(), Type.Null()]),
                  }),
                  Type.Null(),
                ]),
              }),
            }),
            401: StandardError,
          },
        },
      },
      async () => ({
        queue: await queueDepth(ctx.storage.db),
        retention: { last_run: await lastFinished(ctx.storage.db, RETENTION_JOB) },
      }),
    );

    app.get('/metrics', { config, schema: { hide: true } }, async (_request, reply) => {
      reply.header('content-type', ctx.metrics.contentType);
      return ctx.metrics.metrics();
    });
  };
}
